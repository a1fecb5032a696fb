// The canvas on graphs, driven as a user would: resnet20 drawn by Graphviz with its shortcuts
// beside the blocks and its edges from the sources' bottoms into the readers' tops; dragging
// from a block's output port to another block connects them; two blocks Ctrl+clicked and
// Ctrl+M join them with an Add; a clicked edge and Delete removes it, and an edge whose removal
// would leave a layer reading nothing is refused with the reason; a palette entry dropped on a
// shortcut goes into it; renaming a layer carries its readers along; Ctrl+F finds layers. Each
// edit is one undo step, and undo restores the exact spec.
#include <QAction>
#include <QApplication>
#include <QDragEnterEvent>
#include <QElapsedTimer>
#include <QLineEdit>
#include <QMimeData>
#include <QMouseEvent>
#include <QTableView>
#include <QTest>
#include <QUndoStack>
#include <algorithm>
#include <memory>

#include "engine/spec/model_graph.h"
#include "engine/spec/shape_inference.h"
#include "tests/ui/editor_test_support.h"
#include "ui/editor/canvas_items.h"
#include "ui/editor/editor_widget.h"
#include "ui/editor/graph_edits.h"
#include "ui/editor/layer_commands.h"
#include "ui/editor/layer_palette.h"
#include "ui/editor/layer_stack_model.h"
#include "ui/editor/layer_text.h"
#include "ui/editor/model_canvas.h"
#include "ui/editor/model_document.h"
#include "ui/editor/property_panel.h"

namespace mixlab::ui {
namespace {

using test::builtin;
using test::json_of;

// Four Dense layers in a chain, each named: a -> b -> c -> out.
ModelSpec four_dense() {
  return parse_model_json(R"({"name": "four", "input": {"shape": [8]}, "layers": [
      {"type": "Dense", "units": 8, "name": "a"},
      {"type": "Dense", "units": 8, "name": "b"},
      {"type": "Dense", "units": 8, "name": "c"},
      {"type": "Dense", "units": 2, "name": "out"}]})");
}

void send_mouse(ModelCanvas& canvas, QEvent::Type type, QPoint pos, Qt::MouseButton button,
                Qt::MouseButtons buttons, Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
  QWidget* viewport = canvas.viewport();
  QMouseEvent event(type, QPointF(pos), viewport->mapToGlobal(QPointF(pos)), button, buttons,
                    modifiers);
  QApplication::sendEvent(viewport, &event);
}

void click(ModelCanvas& canvas, QPoint pos, Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
  send_mouse(canvas, QEvent::MouseButtonPress, pos, Qt::LeftButton, Qt::LeftButton, modifiers);
  send_mouse(canvas, QEvent::MouseButtonRelease, pos, Qt::LeftButton, Qt::NoButton, modifiers);
}

// Presses on `from`, moves in steps to `to` and releases there (viewport coordinates).
void drag(ModelCanvas& canvas, QPoint from, QPoint to) {
  send_mouse(canvas, QEvent::MouseButtonPress, from, Qt::LeftButton, Qt::LeftButton);
  constexpr int kSteps = 6;
  for (int i = 1; i <= kSteps; ++i)
    send_mouse(canvas, QEvent::MouseMove, from + (to - from) * i / kSteps, Qt::NoButton,
               Qt::LeftButton);
  send_mouse(canvas, QEvent::MouseButtonRelease, to, Qt::LeftButton, Qt::NoButton);
}

// The index in canvas.edges() of the edge from -> to, or -1.
int edge_index(const ModelCanvas& canvas, int from, int to) {
  for (std::size_t i = 0; i < canvas.edges().size(); ++i)
    if (canvas.edges()[i]->from() == from && canvas.edges()[i]->to() == to)
      return static_cast<int>(i);
  return -1;
}

// A point on edge `index` where nothing else is drawn: a third of the way along.
QPoint on_edge(ModelCanvas& canvas, int index) {
  const EdgeItem* edge = canvas.edges()[static_cast<std::size_t>(index)];
  canvas.ensureVisible(edge->path().boundingRect(), 4, 4);
  return canvas.mapFromScene(edge->path().pointAtPercent(0.35));
}

QRectF box(const LayerBlockItem* block) {
  return block->mapRectToScene(QRectF(QPointF(), block->box_size()));
}

int layer_named(const ModelSpec& spec, const std::string& name) {
  for (std::size_t i = 0; i < spec.layers.size(); ++i)
    if (spec.layers[i].name == name) return static_cast<int>(i);
  return -1;
}

struct Fixture {
  ModelDocument doc;
  std::unique_ptr<EditorWidget> editor;
  ModelCanvas* canvas = nullptr;

  explicit Fixture(ModelSpec spec, const QString& name) {
    doc.reset(std::move(spec), {}, name);
    editor = std::make_unique<EditorWidget>(&doc);
    editor->resize(1300, 1000);
    editor->show();
    canvas = editor->canvas();
  }
};

}  // namespace

class GraphCanvasTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { test::init_test_application(); }

  void resnet20_is_laid_out_as_a_graph() {
    Fixture f(builtin(QStringLiteral("resnet20")), QStringLiteral("resnet20"));
    QVERIFY(QTest::qWaitForWindowExposed(f.editor.get()));
    ModelCanvas& canvas = *f.canvas;
    const ModelSpec& spec = f.doc.spec();
    const ModelGraph graph = resolve_graph(spec);
    QVERIFY2(canvas.layout().graphviz, qPrintable(canvas.layout().problem));
    QVERIFY(!canvas.is_chain());
    QCOMPARE(canvas.block_count(), static_cast<int>(spec.layers.size()));

    // One edge per input of every layer, each from the source's bottom down into the reader's
    // top, labelled with the source's shape.
    std::size_t edges = 0;
    for (const std::vector<int>& inputs : graph.inputs) edges += inputs.size();
    QCOMPARE(canvas.edges().size(), edges);
    const ShapeTable table = infer_shapes(spec);
    for (const EdgeItem* edge : canvas.edges()) {
      const QRectF from = box(edge->from() < 0 ? canvas.input_block() : canvas.block(edge->from()));
      const QRectF to = box(canvas.block(edge->to()));
      const QPointF start = edge->path().pointAtPercent(0);
      const QPointF end = edge->path().pointAtPercent(1);
      QVERIFY2(std::abs(start.y() - from.bottom()) < 2 && from.left() <= start.x() &&
                   start.x() <= from.right(),
               qPrintable(edge->label()));
      QVERIFY2(std::abs(end.y() - to.top()) < 2 && to.left() <= end.x() && end.x() <= to.right(),
               qPrintable(edge->label()));
      QVERIFY(from.bottom() < to.top());
      if (edge->from() >= 0)
        QVERIFY(edge->label().startsWith(QString::fromStdString(
            format_shape(table.layers[static_cast<std::size_t>(edge->from())].output_shape))));
    }
    // Each Add has its two edges; a shortcut runs beside the block it skips, not through it.
    const int add = layer_named(spec, "s1b1_add");
    const int shortcut = edge_index(canvas, layer_named(spec, "relu1"), add);
    QVERIFY(shortcut >= 0);
    QVERIFY(edge_index(canvas, layer_named(spec, "s1b1_bn2"), add) >= 0);
    const QPainterPath& path = canvas.edges()[static_cast<std::size_t>(shortcut)]->path();
    for (int i = layer_named(spec, "s1b1_conv1"); i < add; ++i)
      for (double t = 0.1; t < 0.95; t += 0.05)
        QVERIFY2(!box(canvas.block(i)).contains(path.pointAtPercent(t)),
                 qPrintable(QString::number(i)));
    // No two blocks overlap.
    for (int i = -1; i < canvas.block_count(); ++i)
      for (int j = i + 1; j < canvas.block_count(); ++j)
        QVERIFY(
            !box(i < 0 ? canvas.input_block() : canvas.block(i)).intersects(box(canvas.block(j))));

    // The table shows what each layer reads, a graph's column.
    auto* view = qobject_cast<QTableView*>(f.editor->stack_view());
    QVERIFY(!view->isColumnHidden(LayerStackModel::Inputs));
    LayerStackModel* model = f.editor->stack_model();
    QCOMPARE(model->data(model->index(add, LayerStackModel::Inputs)).toString(),
             QStringLiteral("s1b1_bn2, relu1"));
    QCOMPARE(model->data(model->index(1, LayerStackModel::Inputs)).toString(),
             QStringLiteral("scale"));
    QCOMPARE(model->data(model->index(0, LayerStackModel::Inputs)).toString(),
             QStringLiteral("input"));

    // Zoomed out to fit, then in and around: the whole graph fits, and the view follows.
    canvas.resize(canvas.width(), 500);
    canvas.fit();
    QVERIFY(canvas.zoom() < 0.2);
    const QRect shown = canvas.mapFromScene(canvas.sceneRect()).boundingRect();
    QVERIFY(canvas.viewport()->rect().adjusted(-1, -1, 1, 1).contains(shown));
    canvas.set_zoom(1.0);
    f.editor->select_layer(canvas.block_count() - 1);
    QVERIFY(canvas.viewport()->rect().contains(canvas.block_centre(canvas.block_count() - 1)));

    // A chain hides the column again.
    f.doc.reset(builtin(QStringLiteral("fashion-mlp")), {}, QStringLiteral("fashion-mlp"));
    QVERIFY(canvas.is_chain());
    QVERIFY(view->isColumnHidden(LayerStackModel::Inputs));
  }

  void connect_merge_delete_edge_and_undo() {
    Fixture f(four_dense(), QStringLiteral("four"));
    f.editor->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(f.editor.get()));
    ModelCanvas& canvas = *f.canvas;
    QUndoStack* stack = f.doc.undo_stack();
    const auto& layers = f.doc.spec().layers;
    std::vector<QString> states{json_of(f.doc.spec())};
    QVERIFY(canvas.is_chain());

    // Dragged from a's port onto c: c reads a, and b, read by nothing, is the red layer.
    drag(canvas, canvas.port_centre(0), canvas.block_centre(2));
    QCOMPARE(stack->count(), 1);
    QCOMPARE(layers[2].inputs, std::vector<std::string>{"a"});
    QVERIFY(!f.doc.validation().ok);
    QCOMPARE(f.doc.validation().layer, 1);
    QVERIFY(canvas.block(1)->is_error());
    QVERIFY(!canvas.is_chain());
    stack->undo();
    QCOMPARE(json_of(f.doc.spec()), states.back());

    // a and b selected (Ctrl+click adds to the selection), Ctrl+M: an Add of both after b,
    // which c now reads.
    click(canvas, canvas.block_centre(0));
    click(canvas, canvas.block_centre(1), Qt::ControlModifier);
    QCOMPARE(canvas.selected_layers(), (std::vector<int>{0, 1}));
    canvas.setFocus();
    QTest::keyClick(&canvas, Qt::Key_M, Qt::ControlModifier);
    QCOMPARE(stack->count(), 1);
    QCOMPARE(layers.size(), std::size_t{5});
    QCOMPARE(layers[2].type, LayerType::Add);
    QCOMPARE(layers[2].name, std::string("add_1"));
    QCOMPARE(layers[2].inputs, (std::vector<std::string>{"a", "b"}));
    QVERIFY2(f.doc.validation().ok, qPrintable(f.doc.validation().message));
    QCOMPARE(f.editor->current_layer(), 2);
    QVERIFY(edge_index(canvas, 0, 2) >= 0);
    QVERIFY(edge_index(canvas, 1, 2) >= 0);
    QVERIFY(edge_index(canvas, 2, 3) >= 0);  // c reads the Add
    states.push_back(json_of(f.doc.spec()));

    // From the input's port onto the Add: a merge gains an input.
    drag(canvas, canvas.port_centre(-1), canvas.block_centre(2));
    QCOMPARE(layers[2].inputs, (std::vector<std::string>{"a", "b", "input"}));
    QVERIFY2(f.doc.validation().ok, qPrintable(f.doc.validation().message));
    QCOMPARE(stack->count(), 2);
    states.push_back(json_of(f.doc.spec()));
    // Again: refused, and said.
    canvas.connect_layers(-1, 2);
    QCOMPARE(stack->count(), 2);
    QVERIFY2(f.editor->notice_text().contains(QStringLiteral("already reads")),
             qPrintable(f.editor->notice_text()));

    // The edge a -> Add clicked and Delete: the Add reads b and the input.
    click(canvas, on_edge(canvas, edge_index(canvas, 0, 2)));
    QCOMPARE(canvas.selected_edge(), edge_index(canvas, 0, 2));
    QCOMPARE(canvas.current_layer(), -1);
    canvas.setFocus();
    QTest::keyClick(&canvas, Qt::Key_Delete);
    QCOMPARE(layers.size(), std::size_t{5});  // the edge went, not a layer
    QCOMPARE(layers[2].inputs, (std::vector<std::string>{"b", "input"}));
    QCOMPARE(stack->count(), 3);
    QVERIFY(stack->undoText().startsWith(QStringLiteral("Remove the edge")));
    QCOMPARE(edge_index(canvas, 0, 2), -1);
    states.push_back(json_of(f.doc.spec()));

    // b's one input cannot go: refused with the reason, nothing changed.
    click(canvas, on_edge(canvas, edge_index(canvas, 0, 1)));
    QVERIFY(canvas.selected_edge() >= 0);
    QTest::keyClick(&canvas, Qt::Key_Delete);
    QCOMPARE(stack->count(), 3);
    QVERIFY2(f.editor->notice_text().contains(QStringLiteral("would read nothing")),
             qPrintable(f.editor->notice_text()));

    // The context menu's merges: Subtract needs exactly two.
    f.editor->select_layer(0);
    QVERIFY(!canvas.merge_selected(LayerType::Subtract));
    QVERIFY(f.editor->notice_text().contains(QStringLiteral("two or more")));

    test::check_undo_redo(f.doc, states);
  }

  void connect_keeps_the_execution_order_and_refuses_cycles() {
    Fixture f(four_dense(), QStringLiteral("four"));
    ModelCanvas& canvas = *f.canvas;
    QUndoStack* stack = f.doc.undo_stack();
    const auto& layers = f.doc.spec().layers;
    std::vector<QString> states{json_of(f.doc.spec())};
    const auto names = [&] {
      std::vector<std::string> n;
      for (const LayerSpec& l : layers) n.push_back(l.name);
      return n;
    };

    // b reads the input; then a reads b, which comes after it: the layers move into the order
    // they run in, in the same undo step, and c keeps reading b (named now, no longer the one
    // before it).
    QVERIFY(canvas.connect_layers(-1, 1));
    states.push_back(json_of(f.doc.spec()));
    QVERIFY(canvas.connect_layers(1, 0));
    QCOMPARE(stack->count(), 2);
    QCOMPARE(names(), (std::vector<std::string>{"b", "a", "c", "out"}));
    QCOMPARE(layers[0].inputs, std::vector<std::string>{"input"});
    QCOMPARE(layers[1].inputs, std::vector<std::string>{"b"});
    QCOMPARE(layers[2].inputs, std::vector<std::string>{"b"});
    states.push_back(json_of(f.doc.spec()));
    // The table lists them so, with what each reads.
    const LayerStackModel* table = f.editor->stack_model();
    QCOMPARE(table->index(0, LayerStackModel::Layer).data().toString().left(5),
             QStringLiteral("Dense"));
    QCOMPARE(table->index(1, LayerStackModel::Inputs).data().toString(), QStringLiteral("b"));
    // c reads a: input -> b -> a -> c -> out, valid again.
    QVERIFY(canvas.connect_layers(1, 2));
    QVERIFY2(f.doc.validation().ok, qPrintable(f.doc.validation().message));
    QCOMPARE(names(), (std::vector<std::string>{"b", "a", "c", "out"}));
    states.push_back(json_of(f.doc.spec()));

    // out reads b through a and c: b reading out would be a cycle, refused and said.
    QVERIFY(!canvas.connect_layers(3, 0));
    QCOMPARE(stack->count(), 3);
    QVERIFY2(f.editor->notice_text().contains(QStringLiteral("cycle")),
             qPrintable(f.editor->notice_text()));
    test::check_undo_redo(f.doc, states);
  }

  void residual_blocks_fold_and_open() {
    Fixture f(builtin(QStringLiteral("resnet20")), QStringLiteral("resnet20"));
    f.editor->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(f.editor.get()));
    ModelCanvas& canvas = *f.canvas;
    const ModelSpec& spec = f.doc.spec();
    // Nine basic blocks, each from its first convolution to its Add (the ReLU after the Add is
    // what the next block's shortcut reads, so it is no block's).
    const std::vector<LayerBlock>& blocks = canvas.foldable_blocks();
    QCOMPARE(blocks.size(), std::size_t{9});
    QCOMPARE(blocks.front(),
             (LayerBlock{layer_named(spec, "s1b1_conv1"), layer_named(spec, "s1b1_add")}));
    QCOMPARE(blocks.back().last, layer_named(spec, "s3b3_add"));
    const std::size_t all_edges = canvas.edges().size();

    // Ctrl+Shift+F folds them all: nine boxes, their layers hidden, a shorter diagram with no
    // overlapping boxes, and nothing on the undo stack.
    canvas.setFocus();
    QTest::keyClick(&canvas, Qt::Key_F, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(canvas.folded_count(), 9);
    QCOMPARE(f.doc.undo_stack()->count(), 0);
    const int conv = layer_named(spec, "s1b1_conv2");
    QVERIFY(canvas.is_folded(conv));
    QVERIFY(!canvas.block(conv)->isVisible());
    QVERIFY(canvas.block(layer_named(spec, "s1b1_out"))->isVisible());
    const BlockContent& first = canvas.folded_box(0)->content();
    QCOMPARE(first.folded_layers, 6);
    QVERIFY2(first.settings.startsWith(QStringLiteral("2× Conv2D, 2× BatchNormalization")),
             qPrintable(first.settings));
    QCOMPARE(first.figures, QStringLiteral("out 32x32x16 · %1 params").arg(format_count(4736)));
    QVERIFY2(first.tooltip.contains(QStringLiteral("alike")), qPrintable(first.tooltip));
    QVERIFY(canvas.edges().size() < all_edges);
    std::vector<QRectF> shown{box(canvas.input_block())};
    for (int i = 0; i < canvas.block_count(); ++i)
      if (canvas.block(i)->isVisible()) shown.push_back(box(canvas.block(i)));
    for (int k = 0; k < canvas.folded_count(); ++k) shown.push_back(box(canvas.folded_box(k)));
    for (std::size_t i = 0; i < shown.size(); ++i)
      for (std::size_t j = i + 1; j < shown.size(); ++j) QVERIFY(!shown[i].intersects(shown[j]));
    // The edge into a box stands for two (the convolution's and the shortcut's): it cannot be
    // picked; the one out of it is the Add's, and can.
    const int relu1 = layer_named(spec, "relu1");
    const int into = edge_index(canvas, relu1, layer_named(spec, "s1b1_conv1"));
    QVERIFY(into >= 0);
    QVERIFY(!canvas.edges()[static_cast<std::size_t>(into)]->flags().testFlag(
        QGraphicsItem::ItemIsSelectable));
    const int out_of =
        edge_index(canvas, layer_named(spec, "s1b1_add"), layer_named(spec, "s1b1_out"));
    QVERIFY(out_of >= 0);
    QCOMPARE(canvas.edge_at(on_edge(canvas, out_of)), out_of);
    // A folded box's port is its exit layer's: dragged onto the ReLU that already reads the Add,
    // the connection is refused as such.
    LayerBlockItem* box0 = canvas.folded_box(0);
    canvas.ensureVisible(box0);
    drag(canvas, canvas.mapFromScene(box0->mapToScene(box0->port_centre())),
         canvas.block_centre(layer_named(spec, "s1b1_out")));
    QVERIFY2(f.editor->notice_text().contains(QStringLiteral("already reads")),
             qPrintable(f.editor->notice_text()));
    QCOMPARE(f.doc.undo_stack()->count(), 0);
    // A field's edit elsewhere keeps the folds.
    f.editor->select_layer(layer_named(spec, "conv1"));
    LayerSpec wider = spec.layers[1];
    wider.filters = 8;
    f.doc.undo_stack()->push(new EditLayerCommand(&f.doc, 1, LayerField::filters, wider));
    QCOMPARE(canvas.folded_count(), 9);
    f.doc.undo_stack()->undo();

    // A double-click opens a box; selecting a folded layer (as the table or Ctrl+F does) opens
    // its block; Ctrl+Shift+E opens them all.
    LayerBlockItem* second = canvas.folded_box(1);
    canvas.ensureVisible(second);
    const QPoint centre = canvas.mapFromScene(box(second).center());
    send_mouse(canvas, QEvent::MouseButtonDblClick, centre, Qt::LeftButton, Qt::LeftButton);
    QCOMPARE(canvas.folded_count(), 8);
    QVERIFY(!canvas.is_folded(layer_named(spec, "s1b2_conv1")));
    const int deep = layer_named(spec, "s3b2_bn1");
    QVERIFY(canvas.is_folded(deep));
    f.editor->select_layer(deep);
    QCOMPARE(canvas.folded_count(), 7);
    QVERIFY(canvas.block(deep)->isVisible());
    QCOMPARE(canvas.current_layer(), deep);
    canvas.setFocus();
    QTest::keyClick(&canvas, Qt::Key_E, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(canvas.folded_count(), 0);
    QCOMPARE(canvas.edges().size(), all_edges);
    QVERIFY(canvas.fold_block_of(deep));
    QVERIFY(!canvas.fold_block_of(deep));      // already
    QVERIFY(!canvas.fold_block_of(relu1));     // in no block
    QCOMPARE(f.doc.undo_stack()->count(), 1);  // the filters' edit only

    // A chain has no blocks.
    f.doc.reset(builtin(QStringLiteral("fashion-mlp")), {}, QStringLiteral("fashion-mlp"));
    QVERIFY(canvas.foldable_blocks().empty());
  }

  // Issue 29: tiny-gpt's attention reads as one block that opens into its parts (double-click,
  // or the context menu), and its residual stretch folds as the others do.
  void attention_block_opens_into_its_parts() {
    Fixture f(builtin(QStringLiteral("tiny-gpt")), QStringLiteral("tiny-gpt"));
    f.editor->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(f.editor.get()));
    ModelCanvas& canvas = *f.canvas;
    const ModelSpec& spec = f.doc.spec();
    const int attention = layer_named(spec, "b1_attention");
    QVERIFY(attention >= 0);
    LayerBlockItem* b = canvas.block(attention);
    QVERIFY(b->has_parts());
    QVERIFY(!b->parts_open());
    const QStringList& parts = b->content().parts;
    QCOMPARE(parts.size(), 8);
    QVERIFY2(parts[0].contains(QStringLiteral("4 heads x 32")), qPrintable(parts[0]));
    QVERIFY2(parts[3].contains(QStringLiteral("128x128, float32")), qPrintable(parts[3]));
    QVERIFY2(parts[4].contains(QStringLiteral("causal mask")), qPrintable(parts[4]));
    QCOMPARE(parts[5], QStringLiteral("softmax in float32"));
    QVERIFY2(parts[7].contains(QStringLiteral("Dense to 128")), qPrintable(parts[7]));
    const qreal closed = b->box_size().height();
    // A Dense has no parts.
    QVERIFY(!canvas.block(layer_named(spec, "b1_up"))->has_parts());
    QVERIFY(!canvas.set_parts_open(layer_named(spec, "b1_up"), true));

    canvas.ensureVisible(b);
    send_mouse(canvas, QEvent::MouseButtonDblClick, canvas.mapFromScene(box(b).center()),
               Qt::LeftButton, Qt::LeftButton);
    QVERIFY(canvas.parts_open(attention));
    b = canvas.block(attention);  // rebuilt
    QVERIFY(b->box_size().height() > closed + 8 * 10);
    QVERIFY(!canvas.parts_open(layer_named(spec, "b2_attention")));  // only the one clicked
    // An edit elsewhere keeps it open (by the layer's name).
    const int up = layer_named(spec, "b1_up");
    LayerSpec wider = spec.layers[static_cast<std::size_t>(up)];
    wider.units = 256;
    f.doc.undo_stack()->push(new EditLayerCommand(&f.doc, up, LayerField::units, wider));
    QVERIFY(canvas.parts_open(attention));
    f.doc.undo_stack()->undo();
    b = canvas.block(attention);
    canvas.ensureVisible(b);
    send_mouse(canvas, QEvent::MouseButtonDblClick, canvas.mapFromScene(box(b).center()),
               Qt::LeftButton, Qt::LeftButton);
    QVERIFY(!canvas.parts_open(attention));
    QCOMPARE(canvas.block(attention)->box_size().height(), closed);
    QVERIFY(!canvas.set_parts_open(attention, false));  // already closed
  }

  void palette_drop_on_a_shortcut_inserts_into_it() {
    Fixture f(builtin(QStringLiteral("resnet20")), QStringLiteral("resnet20"));
    QVERIFY(QTest::qWaitForWindowExposed(f.editor.get()));
    ModelCanvas& canvas = *f.canvas;
    const QString before = json_of(f.doc.spec());
    const int add = layer_named(f.doc.spec(), "s1b1_add");
    const int relu1 = layer_named(f.doc.spec(), "relu1");
    const int shortcut = edge_index(canvas, relu1, add);
    f.editor->palette()->set_current_type(LayerType::Dropout);
    std::unique_ptr<QMimeData> data(
        f.editor->palette()->model()->mimeData({f.editor->palette()->currentIndex()}));
    const QPoint pos = on_edge(canvas, shortcut);
    QCOMPARE(canvas.edge_at(pos), shortcut);
    QWidget* viewport = canvas.viewport();
    QDragEnterEvent enter(pos, Qt::CopyAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(viewport, &enter);
    QVERIFY(enter.isAccepted());
    QVERIFY(canvas.edges()[static_cast<std::size_t>(shortcut)]->isVisible());
    QDropEvent drop(QPointF(pos), Qt::CopyAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(viewport, &drop);
    QVERIFY(drop.isAccepted());

    // The Dropout sits before the Add, reads relu1, and the Add reads it instead.
    const ModelSpec& spec = f.doc.spec();
    QCOMPARE(f.doc.undo_stack()->count(), 1);
    const LayerSpec& dropout = spec.layers[static_cast<std::size_t>(add)];
    QCOMPARE(dropout.type, LayerType::Dropout);
    QCOMPARE(dropout.inputs, std::vector<std::string>{"relu1"});
    QCOMPARE(spec.layers[static_cast<std::size_t>(add) + 1].inputs,
             (std::vector<std::string>{"s1b1_bn2", dropout.name}));
    QVERIFY2(f.doc.validation().ok, qPrintable(f.doc.validation().message));
    QVERIFY(edge_index(canvas, relu1, add) >= 0);
    QVERIFY(edge_index(canvas, add, add + 1) >= 0);
    f.doc.undo_stack()->undo();
    QCOMPARE(json_of(f.doc.spec()), before);
  }

  void rename_carries_readers_and_find_selects() {
    Fixture f(builtin(QStringLiteral("resnet20")), QStringLiteral("resnet20"));
    QVERIFY(QTest::qWaitForWindowExposed(f.editor.get()));
    const int relu1 = layer_named(f.doc.spec(), "relu1");
    const int add = layer_named(f.doc.spec(), "s1b1_add");
    const std::size_t count = f.doc.spec().layers.size();

    // Renamed in the property panel: the Add's input follows, in one undo step.
    f.editor->select_layer(relu1);
    auto* name = f.editor->properties()->findChild<QLineEdit*>(QStringLiteral("name"));
    QVERIFY(name != nullptr);
    name->setText(QStringLiteral("stem_out"));
    emit name->editingFinished();
    QCOMPARE(f.doc.spec().layers[static_cast<std::size_t>(relu1)].name, std::string("stem_out"));
    QCOMPARE(f.doc.spec().layers[static_cast<std::size_t>(add)].inputs,
             (std::vector<std::string>{"s1b1_bn2", "stem_out"}));
    QVERIFY(f.doc.validation().ok);
    QCOMPARE(f.doc.undo_stack()->count(), 1);
    // Another layer's name is refused; the field shows the name it has.
    name->setText(QStringLiteral("conv1"));
    emit name->editingFinished();
    QCOMPARE(f.doc.undo_stack()->count(), 1);
    QCOMPARE(name->text(), QStringLiteral("stem_out"));
    QString why;
    QVERIFY(!rename_layer(&f.doc, relu1, "", &why));  // read by name: keeps one
    QVERIFY(why.contains(QStringLiteral("s1b1_add")));
    f.doc.undo_stack()->undo();
    QCOMPARE(json_of(f.doc.spec()), json_of(builtin(QStringLiteral("resnet20"))));

    // Ctrl+F, "add": the first Add; Enter: the next; no match says so.
    f.editor->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(f.editor.get()));
    f.editor->stack_view()->setFocus();
    QTest::keyClick(f.editor->stack_view(), Qt::Key_F, Qt::ControlModifier);
    QLineEdit* find = f.editor->find_box();
    QTRY_VERIFY(find->hasFocus());
    QTest::keyClicks(find, QStringLiteral("ADD"));
    QCOMPARE(f.editor->current_layer(), add);
    QCOMPARE(f.editor->canvas()->current_layer(), add);
    QTest::keyClick(find, Qt::Key_Return);
    const int next = f.editor->current_layer();
    QVERIFY(next > add);
    QCOMPARE(f.doc.spec().layers[static_cast<std::size_t>(next)].type, LayerType::Add);
    QVERIFY(
        f.editor->canvas()->viewport()->rect().contains(f.editor->canvas()->block_centre(next)));
    QVERIFY(!f.editor->find_layer(QStringLiteral("no such layer"), false));
    QCOMPARE(f.editor->current_layer(), next);
    QCOMPARE(f.doc.spec().layers.size(), count);
  }
};

}  // namespace mixlab::ui

QTEST_MAIN(mixlab::ui::GraphCanvasTest)
#include "graph_canvas_test.moc"
