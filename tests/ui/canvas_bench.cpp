// Benchmark of the model canvas on a ResNet50-sized graph (prints figures; not a test): Keras's
// ResNet50 layer for layer (176 layers: its stem, 16 bottleneck blocks with their projection
// shortcuts, the pooling and the classifier) in the editor on the offscreen platform, 1366x768.
// Times, in milliseconds: the canvas's rebuild with Graphviz's layout (opening the model, a
// structural edit), a rebuild after a field's edit (the layout reused), and frames drawn while
// the user fits, zooms and scrolls (the viewport painted into an image, as the screen would be).
// Target: frames ≤ 33 ms (30 per second), an edit's rebuild ≤ 250 ms.
// usage: canvas_bench [FRAMES]   (default 40)
#include <QApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QPainter>
#include <QScrollBar>
#include <QUndoStack>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/store/store_test_util.h"
#include "ui/editor/editor_widget.h"
#include "ui/editor/layer_commands.h"
#include "ui/editor/model_canvas.h"
#include "ui/editor/model_document.h"

namespace {

using mixlab::LayerSpec;
using mixlab::LayerType;
using mixlab::ModelSpec;

LayerSpec layer(LayerType type, std::string name, std::vector<std::string> inputs = {}) {
  LayerSpec l;
  l.type = type;
  l.name = std::move(name);
  l.inputs = std::move(inputs);
  return l;
}

LayerSpec conv(std::string name, int filters, int kernel, int stride,
               std::vector<std::string> inputs = {}) {
  LayerSpec l = layer(LayerType::Conv2D, std::move(name), std::move(inputs));
  l.filters = filters;
  l.kernel_size = {kernel, kernel};
  l.strides = {stride, stride};
  l.padding = mixlab::Padding::same;
  return l;
}

LayerSpec relu(std::string name) {
  LayerSpec l = layer(LayerType::Activation, std::move(name));
  l.activation = mixlab::ActivationFn::relu;
  return l;
}

// keras.applications.ResNet50's layers and names, on 32x32x3 images.
ModelSpec resnet50() {
  ModelSpec spec;
  spec.name = "resnet50";
  spec.input_shape = {32, 32, 3};
  auto& ls = spec.layers;
  LayerSpec pad = layer(LayerType::ZeroPadding2D, "conv1_pad");
  pad.zero_padding = {3, 3, 3, 3};
  ls.push_back(pad);
  LayerSpec stem = conv("conv1_conv", 64, 7, 2);
  stem.padding = mixlab::Padding::valid;
  ls.push_back(stem);
  ls.push_back(layer(LayerType::BatchNormalization, "conv1_bn"));
  ls.push_back(relu("conv1_relu"));
  ls.push_back(layer(LayerType::ZeroPadding2D, "pool1_pad"));
  LayerSpec pool = layer(LayerType::MaxPooling2D, "pool1_pool");
  pool.pool_size = {3, 3};
  pool.strides = {2, 2};
  ls.push_back(pool);
  std::string last = "pool1_pool";
  const int blocks[4] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const int filters = 64 << stage;
    for (int b = 1; b <= blocks[stage]; ++b) {
      const std::string p = "conv" + std::to_string(stage + 2) + "_block" + std::to_string(b) + "_";
      const int stride = b == 1 && stage > 0 ? 2 : 1;
      std::string shortcut = last;
      if (b == 1) {
        ls.push_back(conv(p + "0_conv", 4 * filters, 1, stride, {last}));
        ls.push_back(layer(LayerType::BatchNormalization, p + "0_bn"));
        shortcut = p + "0_bn";
      }
      ls.push_back(conv(p + "1_conv", filters, 1, stride, {last}));
      ls.push_back(layer(LayerType::BatchNormalization, p + "1_bn"));
      ls.push_back(relu(p + "1_relu"));
      ls.push_back(conv(p + "2_conv", filters, 3, 1));
      ls.push_back(layer(LayerType::BatchNormalization, p + "2_bn"));
      ls.push_back(relu(p + "2_relu"));
      ls.push_back(conv(p + "3_conv", 4 * filters, 1, 1));
      ls.push_back(layer(LayerType::BatchNormalization, p + "3_bn"));
      ls.push_back(layer(LayerType::Add, p + "add", {shortcut, p + "3_bn"}));
      ls.push_back(relu(p + "out"));
      last = p + "out";
    }
  }
  ls.push_back(layer(LayerType::GlobalAveragePooling2D, "avg_pool"));
  LayerSpec out = layer(LayerType::Dense, "predictions");
  out.units = 10;
  out.activation = mixlab::ActivationFn::softmax;
  ls.push_back(out);
  return spec;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double max_of(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  mixlab::store::testing::TempDir dir;
  qputenv("XDG_CONFIG_HOME", (dir / "config").c_str());
  QApplication app(argc, argv);
  const int frames = argc > 1 ? std::max(1, std::atoi(argv[1])) : 40;

  mixlab::ui::ModelDocument doc;
  mixlab::ui::EditorWidget editor(&doc);
  editor.resize(1366, 700);
  editor.show();
  QApplication::processEvents();
  mixlab::ui::ModelCanvas* canvas = editor.canvas();

  const ModelSpec spec = resnet50();
  doc.reset(spec, {}, QStringLiteral("resnet50"));
  const double open_ms = canvas->last_rebuild_ms();
  if (!doc.validation().ok || canvas->is_chain()) {
    std::fprintf(stderr, "canvas_bench: the ResNet50 graph is not valid: %s\n",
                 qPrintable(doc.validation().message));
    return 1;
  }
  // A field's edit (the layout reused) and a structural one (laid out again), each undone.
  mixlab::LayerSpec wider = doc.spec().layers[10];
  wider.filters = 96;
  doc.undo_stack()->push(
      new mixlab::ui::EditLayerCommand(&doc, 10, mixlab::ui::LayerField::filters, wider));
  const double field_ms = canvas->last_rebuild_ms();
  doc.undo_stack()->undo();
  doc.undo_stack()->push(new mixlab::ui::InsertLayerCommand(
      &doc, static_cast<int>(spec.layers.size()), layer(LayerType::Dropout, "drop")));
  const double insert_ms = canvas->last_rebuild_ms();
  doc.undo_stack()->undo();

  // Frames: the viewport painted as the screen would be, at fit, at 1:1 scrolling down, and
  // zooming in steps.
  QImage image(canvas->viewport()->size(), QImage::Format_ARGB32_Premultiplied);
  QElapsedTimer timer;
  const auto frame = [&] {
    timer.start();
    QPainter painter(&image);
    canvas->render(&painter, QRectF(image.rect()), canvas->viewport()->rect());
    painter.end();
    return static_cast<double>(timer.nsecsElapsed()) / 1e6;
  };
  std::vector<double> fit_ms, scroll_ms, zoom_ms;
  canvas->fit();
  const double fit_zoom = canvas->zoom();
  for (int i = 0; i < frames; ++i) fit_ms.push_back(frame());
  canvas->set_zoom(1.0);
  QScrollBar* bar = canvas->verticalScrollBar();
  for (int i = 0; i < frames; ++i) {
    bar->setValue(bar->minimum() + (bar->maximum() - bar->minimum()) * i / frames);
    scroll_ms.push_back(frame());
  }
  for (int i = 0; i < frames; ++i) {
    canvas->set_zoom(fit_zoom + (1.0 - fit_zoom) * i / frames);
    zoom_ms.push_back(frame());
  }
  const std::size_t edge_count = canvas->edges().size();
  // Every block folded (Ctrl+Shift+F): the rebuild with the smaller layout, and frames at fit.
  canvas->fold_all();
  const double fold_ms = canvas->last_rebuild_ms();
  const int folded = canvas->folded_count();
  std::vector<double> folded_fit_ms;
  canvas->fit();
  const double folded_zoom = canvas->zoom();
  for (int i = 0; i < frames; ++i) folded_fit_ms.push_back(frame());
  std::printf("canvas_bench: ResNet50 graph, %zu layers, %zu edges, Graphviz layout: %s\n",
              spec.layers.size(), edge_count, canvas->layout().graphviz ? "yes" : "no");
  std::printf("  rebuild on open         %8.1f ms\n", open_ms);
  std::printf("  rebuild, field edit     %8.1f ms (layout reused)\n", field_ms);
  std::printf("  rebuild, layer inserted %8.1f ms\n", insert_ms);
  std::printf("  frame at fit (zoom %.3f) median %6.1f ms, max %6.1f ms\n", fit_zoom,
              median(fit_ms), max_of(fit_ms));
  std::printf("  frame scrolling at 1:1   median %6.1f ms, max %6.1f ms\n", median(scroll_ms),
              max_of(scroll_ms));
  std::printf("  frame zooming            median %6.1f ms, max %6.1f ms\n", median(zoom_ms),
              max_of(zoom_ms));
  std::printf(
      "  fold all (%d blocks)     %8.1f ms rebuild; frame at fit (zoom %.3f) median %6.1f "
      "ms, max %6.1f ms\n",
      folded, fold_ms, folded_zoom, median(folded_fit_ms), max_of(folded_fit_ms));
  return 0;
}
