// The model canvas beside the layer table, driven as a user would: a palette entry dropped into
// a gap inserts the layer there, a block dragged to another gap moves it, and undo restores the
// exact spec; the selection is shared with the table both ways; blocks show the engine's
// figures and bars, the offending layer is red with the engine's message; zoom and Delete work
// from the keyboard; the diagram exports as valid PNG and SVG files.
#include <QAbstractItemView>
#include <QAction>
#include <QApplication>
#include <QDragEnterEvent>
#include <QFile>
#include <QImage>
#include <QItemSelectionModel>
#include <QMimeData>
#include <QMouseEvent>
#include <QScrollBar>
#include <QSet>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <QWheelEvent>
#include <memory>

#include "engine/core/error.h"
#include "engine/spec/shape_inference.h"
#include "tests/ui/editor_test_support.h"
#include "ui/editor/canvas_items.h"
#include "ui/editor/editor_widget.h"
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

QString qstr(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

// The palette's drag data for `type`, as a drag out of the palette carries it.
std::unique_ptr<QMimeData> palette_drag(LayerPalette& palette, LayerType type) {
  palette.set_current_type(type);
  // The list's model asks the palette (LayerPalette::mimeData), as QAbstractItemView's drag does.
  return std::unique_ptr<QMimeData>(palette.model()->mimeData({palette.currentIndex()}));
}

// Drags `data` over the canvas's viewport to `pos` and drops it there, as Qt delivers a drag
// from another widget. Returns whether the canvas accepted the drop.
bool drop_on(ModelCanvas& canvas, const QMimeData& data, QPoint pos) {
  QWidget* viewport = canvas.viewport();
  const Qt::DropActions actions = Qt::CopyAction | Qt::MoveAction;
  QDragEnterEvent enter(pos, actions, &data, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(viewport, &enter);
  if (!enter.isAccepted()) return false;
  QDragMoveEvent move(pos, actions, &data, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(viewport, &move);
  QDropEvent drop(QPointF(pos), actions, &data, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(viewport, &drop);
  return drop.isAccepted();
}

void send_mouse(ModelCanvas& canvas, QEvent::Type type, QPoint pos, Qt::MouseButton button,
                Qt::MouseButtons buttons) {
  QWidget* viewport = canvas.viewport();
  QMouseEvent event(type, QPointF(pos), viewport->mapToGlobal(QPointF(pos)), button, buttons,
                    Qt::NoModifier);
  QApplication::sendEvent(viewport, &event);
}

// Presses on block `from`, drags in steps to `to` (viewport coordinates) and releases there.
void drag_block(ModelCanvas& canvas, int from, QPoint to) {
  const QPoint start = canvas.block_centre(from);
  send_mouse(canvas, QEvent::MouseButtonPress, start, Qt::LeftButton, Qt::LeftButton);
  constexpr int kSteps = 8;
  for (int i = 1; i <= kSteps; ++i) {
    const QPoint p = start + (to - start) * i / kSteps;
    send_mouse(canvas, QEvent::MouseMove, p, Qt::NoButton, Qt::LeftButton);
  }
  send_mouse(canvas, QEvent::MouseButtonRelease, to, Qt::LeftButton, Qt::NoButton);
}

void click(ModelCanvas& canvas, QPoint pos) {
  send_mouse(canvas, QEvent::MouseButtonPress, pos, Qt::LeftButton, Qt::LeftButton);
  send_mouse(canvas, QEvent::MouseButtonRelease, pos, Qt::LeftButton, Qt::NoButton);
}

// The point on the edge into gap `gap` (between layers gap-1 and gap).
QPoint gap_point(const ModelCanvas& canvas, int gap) {
  const LayerBlockItem* above = gap == 0 ? canvas.input_block() : canvas.block(gap - 1);
  const QRectF r = above->sceneBoundingRect();
  // A quarter of an edge below the block above: inside the gap whatever the zoom.
  return canvas.mapFromScene(QPointF(r.center().x(), r.bottom() + 8));
}

QAction* find_action(const QList<QAction*>& actions, const QString& name) {
  for (QAction* action : actions)
    if (action->objectName() == name) return action;
  return nullptr;
}

// A document and the editor on it, shown and large enough for the whole model at 1:1.
struct Fixture {
  ModelDocument doc;
  std::unique_ptr<EditorWidget> editor;
  ModelCanvas* canvas = nullptr;

  explicit Fixture(const QString& model) {
    doc.reset(builtin(model), {}, model);
    editor = std::make_unique<EditorWidget>(&doc);
    editor->resize(1300, 1000);
    editor->show();
    canvas = editor->canvas();
  }
};

}  // namespace

class CanvasTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { test::init_test_application(); }

  void blocks_edges_and_bars_show_the_engines_figures() {
    Fixture f(QStringLiteral("cifar100-convnet"));
    QVERIFY(QTest::qWaitForWindowExposed(f.editor.get()));
    const ModelSpec& spec = f.doc.spec();
    const ShapeTable table = infer_shapes(spec);
    ModelCanvas& canvas = *f.canvas;
    QCOMPARE(canvas.block_count(), static_cast<int>(spec.layers.size()));
    QCOMPARE(canvas.edges().size(), spec.layers.size());
    QCOMPARE(canvas.input_block()->content().settings,
             qstr(format_shape(spec.input_shape)) + QStringLiteral(" per sample"));
    QCOMPARE(canvas.edges()[0]->label(), qstr(format_shape(spec.input_shape)));
    double params = 0;
    double activations = 0;
    for (int i = 0; i < canvas.block_count(); ++i) {
      const LayerInfo& info = table.layers[static_cast<std::size_t>(i)];
      const BlockContent& c = canvas.block(i)->content();
      QCOMPARE(c.layer, i);
      QCOMPARE(c.title, qstr(to_string(spec.layers[static_cast<std::size_t>(i)].type)));
      QVERIFY2(c.figures.contains(qstr(format_shape(info.output_shape))), qPrintable(c.figures));
      QVERIFY2(c.figures.contains(format_count(info.param_count)), qPrintable(c.figures));
      QVERIFY(!canvas.block(i)->is_error());
      QCOMPARE(c.param_share,
               static_cast<double>(info.param_count) / static_cast<double>(table.params_total));
      QCOMPARE(c.activation_share, static_cast<double>(info.activation_bytes) /
                                       static_cast<double>(table.activation_bytes_total));
      params += c.param_share;
      activations += c.activation_share;
      if (i > 0) {
        // The edge into a layer carries the shape the layer above hands down.
        const LayerInfo& above = table.layers[static_cast<std::size_t>(i - 1)];
        QCOMPARE(canvas.edges()[static_cast<std::size_t>(i)]->label(),
                 qstr(format_shape(above.output_shape)) + QStringLiteral(" · ") +
                     qstr(to_string(above.compute)));
      }
    }
    QVERIFY(qAbs(params - 1.0) < 1e-9);
    QVERIFY(qAbs(activations - 1.0) < 1e-9);
    // The key settings, without the type the title already says.
    QCOMPARE(canvas.block(1)->content().settings, QStringLiteral("64, 4x4"));
    QCOMPARE(canvas.block(5)->content().settings, QStringLiteral("no settings"));  // Flatten

    // The policy changes the dtypes on the edges.
    f.doc.set_policy(Policy::mixed_float16);
    QVERIFY(canvas.edges()[2]->label().endsWith(QStringLiteral("float16")));
  }

  void invalid_layer_is_drawn_red_with_the_engines_message() {
    Fixture f(QStringLiteral("fashion-mlp"));
    QVERIFY(QTest::qWaitForWindowExposed(f.editor.get()));
    ModelCanvas& canvas = *f.canvas;
    // A Conv2D after Flatten.
    f.doc.undo_stack()->push(new InsertLayerCommand(&f.doc, 2, default_layer(LayerType::Conv2D)));
    QString message;
    try {
      infer_shapes(f.doc.spec());
    } catch (const SpecError& e) {
      message = QString::fromUtf8(e.what());
    }
    QVERIFY(message.startsWith(QStringLiteral("layer 2 (Conv2D)")));
    LayerBlockItem* bad = canvas.block(2);
    QVERIFY(bad->is_error());
    QCOMPARE(bad->content().error, message);
    QCOMPARE(bad->toolTip(), message);
    QCOMPARE(bad->fill_colour(), QColor(255, 222, 222));
    QCOMPARE(bad->frame_colour(), QColor(160, 0, 0));
    QVERIFY(!canvas.block(1)->is_error());
    QVERIFY(canvas.block(1)->content().param_share >= 0);  // the layers above keep figures
    QVERIFY(canvas.block(3)->content().param_share < 0);   // the ones below have none
    QCOMPARE(canvas.edges()[3]->label(), QStringLiteral("?"));

    // What the screen shows: the block's fill is red, the others' are not.
    canvas.fit();
    canvas.ensureVisible(bad);
    QApplication::processEvents();
    const QImage image = canvas.viewport()->grab().toImage();
    const auto red_pixels = [&](int index) {
      const QRect r = canvas.mapFromScene(canvas.block(index)->sceneBoundingRect()).boundingRect();
      int n = 0;
      const qreal dpr = image.devicePixelRatio();
      for (int y = r.top(); y <= r.bottom(); y += 2)
        for (int x = r.left(); x <= r.right(); x += 2)
          n += image.pixelColor(static_cast<int>(x * dpr), static_cast<int>(y * dpr)) ==
               QColor(255, 222, 222);
      return n;
    };
    QVERIFY2(red_pixels(2) > 100, qPrintable(QString::number(red_pixels(2))));
    QCOMPARE(red_pixels(1), 0);

    f.doc.undo_stack()->undo();
    for (int i = 0; i < canvas.block_count(); ++i) QVERIFY(!canvas.block(i)->is_error());
  }

  void palette_drop_inserts_into_the_gap_and_undo_restores() {
    Fixture f(QStringLiteral("fashion-mlp"));
    QVERIFY(QTest::qWaitForWindowExposed(f.editor.get()));
    ModelCanvas& canvas = *f.canvas;
    canvas.fit();
    const QString before = json_of(f.doc.spec());
    const auto& layers = f.doc.spec().layers;

    const std::unique_ptr<QMimeData> dropout =
        palette_drag(*f.editor->palette(), LayerType::Dropout);
    QVERIFY(dropout->hasFormat(LayerPalette::mime_type()));
    QCOMPARE(canvas.gap_at(gap_point(canvas, 3)), 3);
    QVERIFY(drop_on(canvas, *dropout, gap_point(canvas, 3)));  // between the two Dense
    QCOMPARE(layers.size(), std::size_t{6});
    QCOMPARE(layers[3].type, LayerType::Dropout);
    QCOMPARE(layers[3].rate, 0.2);
    QCOMPARE(canvas.block_count(), 6);
    QCOMPARE(canvas.block(3)->content().title, QStringLiteral("Dropout"));
    // The new layer is selected in the canvas, the table and the panel.
    QCOMPARE(f.editor->current_layer(), 3);
    QCOMPARE(canvas.current_layer(), 3);
    QVERIFY(canvas.block(3)->isSelected());
    QCOMPARE(f.editor->properties()->current_layer(), 3);
    const QString after_dropout = json_of(f.doc.spec());

    // Above the first block: the top; below the last: the end.
    const std::unique_ptr<QMimeData> dense = palette_drag(*f.editor->palette(), LayerType::Dense);
    QVERIFY(drop_on(canvas, *dense, gap_point(canvas, 0)));
    QCOMPARE(layers.front().type, LayerType::Dense);
    const QRectF last = canvas.block(canvas.block_count() - 1)->sceneBoundingRect();
    QVERIFY(drop_on(canvas, *dense, canvas.mapFromScene(last.center() + QPointF(0, 40))));
    QCOMPARE(layers.back().type, LayerType::Dense);
    QCOMPARE(layers.size(), std::size_t{8});

    // Foreign data is refused.
    QMimeData text;
    text.setText(QStringLiteral("Dense"));
    QVERIFY(!drop_on(canvas, text, gap_point(canvas, 1)));
    QCOMPARE(f.doc.undo_stack()->count(), 3);

    f.doc.undo_stack()->undo();
    f.doc.undo_stack()->undo();
    QCOMPARE(json_of(f.doc.spec()), after_dropout);
    f.doc.undo_stack()->undo();
    QCOMPARE(json_of(f.doc.spec()), before);
    QCOMPARE(canvas.block_count(), 5);
    f.doc.undo_stack()->redo();
    QCOMPARE(json_of(f.doc.spec()), after_dropout);
  }

  void dragging_a_block_reorders_and_undo_restores() {
    Fixture f(QStringLiteral("fashion-mlp"));
    QVERIFY(QTest::qWaitForWindowExposed(f.editor.get()));
    ModelCanvas& canvas = *f.canvas;
    canvas.fit();
    const QString before = json_of(f.doc.spec());
    const auto& layers = f.doc.spec().layers;

    // A click selects without moving anything.
    click(canvas, canvas.block_centre(0));
    QCOMPARE(f.editor->current_layer(), 0);
    QCOMPARE(f.doc.undo_stack()->count(), 0);

    // The Rescaling (0) into the gap before layer 3: it lands at index 2.
    drag_block(canvas, 0, gap_point(canvas, 3));
    QCOMPARE(f.doc.undo_stack()->count(), 1);
    QCOMPARE(layers[2].type, LayerType::Rescaling);
    QCOMPARE(layers[0].type, LayerType::Flatten);
    QCOMPARE(canvas.block(2)->content().title, QStringLiteral("Rescaling"));
    QCOMPARE(f.editor->current_layer(), 2);
    QVERIFY(canvas.block(2)->isSelected());
    const QString moved = json_of(f.doc.spec());

    // The Activation (4) to the top.
    drag_block(canvas, 4, gap_point(canvas, 0));
    QCOMPARE(layers[0].type, LayerType::Activation);
    QCOMPARE(f.doc.undo_stack()->count(), 2);

    // Dropped back into its own gap: nothing changes.
    drag_block(canvas, 1, gap_point(canvas, 1));
    QCOMPARE(f.doc.undo_stack()->count(), 2);

    f.doc.undo_stack()->undo();
    QCOMPARE(json_of(f.doc.spec()), moved);
    f.doc.undo_stack()->undo();
    QCOMPARE(json_of(f.doc.spec()), before);
    QCOMPARE(canvas.block(0)->content().title, QStringLiteral("Rescaling"));
    f.doc.undo_stack()->redo();
    QCOMPARE(json_of(f.doc.spec()), moved);
  }

  void table_row_dropped_on_the_canvas_moves_the_layer() {
    Fixture f(QStringLiteral("fashion-mlp"));
    QVERIFY(QTest::qWaitForWindowExposed(f.editor.get()));
    ModelCanvas& canvas = *f.canvas;
    canvas.fit();
    LayerStackModel* model = f.editor->stack_model();
    std::unique_ptr<QMimeData> row(model->mimeData({model->index(4, 0)}));
    QVERIFY(drop_on(canvas, *row, gap_point(canvas, 0)));
    QCOMPARE(f.doc.spec().layers[0].type, LayerType::Activation);
    QCOMPARE(f.doc.undo_stack()->count(), 1);
  }

  void selection_is_shared_with_the_table() {
    Fixture f(QStringLiteral("fashion-mlp"));
    QVERIFY(QTest::qWaitForWindowExposed(f.editor.get()));
    ModelCanvas& canvas = *f.canvas;
    canvas.fit();
    QAbstractItemView* table = f.editor->stack_view();

    // Table -> canvas.
    f.editor->select_layer(3);
    QCOMPARE(canvas.current_layer(), 3);
    QVERIFY(canvas.block(3)->isSelected());
    table->selectionModel()->setCurrentIndex(
        table->model()->index(1, 0),
        QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    QCOMPARE(canvas.current_layer(), 1);
    QVERIFY(canvas.block(1)->isSelected());
    QVERIFY(!canvas.block(3)->isSelected());

    // Canvas -> table and property panel.
    click(canvas, canvas.block_centre(4));
    QCOMPARE(f.editor->current_layer(), 4);
    QCOMPARE(table->selectionModel()->selectedRows().value(0).row(), 4);
    QCOMPARE(f.editor->properties()->current_layer(), 4);
    QCOMPARE(canvas.scene()->selectedItems().size(), 1);

    // The background clears the selection everywhere.
    const QRectF input = canvas.input_block()->sceneBoundingRect();
    click(canvas, canvas.mapFromScene(input.topRight() + QPointF(4, -4)));
    QCOMPARE(canvas.current_layer(), -1);
    QCOMPARE(f.editor->current_layer(), -1);

    // Undo of a removal selects the restored layer in both.
    f.editor->select_layer(2);
    f.doc.undo_stack()->push(new RemoveLayerCommand(&f.doc, 2));
    f.doc.undo_stack()->undo();
    QCOMPARE(f.editor->current_layer(), 2);
    QCOMPARE(canvas.current_layer(), 2);
    QVERIFY(canvas.block(2)->isSelected());
  }

  void keyboard_zooms_and_deletes() {
    Fixture f(QStringLiteral("fashion-mlp"));
    f.editor->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(f.editor.get()));
    ModelCanvas& canvas = *f.canvas;
    canvas.setFocus();
    QTRY_VERIFY(canvas.hasFocus());
    QCOMPARE(canvas.zoom(), 1.0);
    QTest::keyClick(&canvas, Qt::Key_Plus, Qt::ControlModifier);
    QCOMPARE(canvas.zoom(), 1.25);
    QTest::keyClick(&canvas, Qt::Key_Minus, Qt::ControlModifier);
    QTest::keyClick(&canvas, Qt::Key_Minus, Qt::ControlModifier);
    QCOMPARE(canvas.zoom(), 0.8);
    for (int i = 0; i < 40; ++i) canvas.zoom_out();
    QCOMPARE(canvas.zoom(), ModelCanvas::kMinZoom);

    // Fit: the whole diagram in view, at most 1:1.
    canvas.resize(canvas.width(), 300);
    QTest::keyClick(&canvas, Qt::Key_0, Qt::ControlModifier);
    QVERIFY(canvas.zoom() < 1.0);
    QVERIFY(canvas.zoom() > ModelCanvas::kMinZoom);
    const QRect shown = canvas.mapFromScene(canvas.sceneRect()).boundingRect();
    QVERIFY2(canvas.viewport()->rect().adjusted(-1, -1, 1, 1).contains(shown),
             qPrintable(QStringLiteral("%1x%2").arg(shown.width()).arg(shown.height())));
    // Ctrl+wheel zooms by a step a notch; the wheel alone scrolls.
    const double fitted = canvas.zoom();
    const QPointF at(10, 10);
    QWheelEvent wheel(at, canvas.viewport()->mapToGlobal(at), QPoint(), QPoint(0, 120),
                      Qt::NoButton, Qt::ControlModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(canvas.viewport(), &wheel);
    QCOMPARE(canvas.zoom(), fitted * 1.25);
    QWheelEvent scroll(at, canvas.viewport()->mapToGlobal(at), QPoint(), QPoint(0, -120),
                       Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(canvas.viewport(), &scroll);
    QCOMPARE(canvas.zoom(), fitted * 1.25);
    for (const QString& name : {QStringLiteral("zoom_in"), QStringLiteral("zoom_out"),
                                QStringLiteral("zoom_fit"), QStringLiteral("export_canvas")}) {
      QAction* action = find_action(canvas.view_actions(), name);
      QVERIFY2(action != nullptr, qPrintable(name));
      QVERIFY(!action->toolTip().isEmpty());
    }

    // Delete removes the selected block's layer through the undo stack; Alt+Up moves one.
    click(canvas, canvas.block_centre(3));
    QCOMPARE(f.editor->current_layer(), 3);
    QTest::keyClick(&canvas, Qt::Key_Delete);
    QCOMPARE(f.doc.spec().layers.size(), std::size_t{4});
    QCOMPARE(f.doc.undo_stack()->count(), 1);
    QVERIFY(f.doc.undo_stack()->undoText().startsWith(QStringLiteral("Remove")));
    QCOMPARE(canvas.block_count(), 4);
    f.editor->select_layer(2);
    QTest::keyClick(&canvas, Qt::Key_Up, Qt::AltModifier);
    QCOMPARE(f.doc.spec().layers[1].type, LayerType::Dense);
    QCOMPARE(canvas.current_layer(), 1);
    f.doc.undo_stack()->undo();
    f.doc.undo_stack()->undo();
    QCOMPARE(json_of(f.doc.spec()), json_of(builtin(QStringLiteral("fashion-mlp"))));
  }

  void exports_png_and_svg() {
    Fixture f(QStringLiteral("fashion-cnn"));
    QVERIFY(QTest::qWaitForWindowExposed(f.editor.get()));
    ModelCanvas& canvas = *f.canvas;
    f.editor->select_layer(1);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());

    const QString png = dir.filePath(QStringLiteral("model.png"));
    QString error;
    QVERIFY2(canvas.save_image(png, &error), qPrintable(error));
    QImage image(png);
    QVERIFY(!image.isNull());
    // The whole diagram at twice the scale, not the part in view.
    QCOMPARE(image.size(), canvas.sceneRect().size().toSize() * 2);
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 3)
      for (int x = 0; x < image.width(); x += 3) colours.insert(image.pixel(x, y));
    QVERIFY2(colours.size() > 50, qPrintable(QString::number(colours.size())));

    const QString svg = dir.filePath(QStringLiteral("model.svg"));
    QVERIFY2(canvas.save_image(svg, &error), qPrintable(error));
    QFile file(svg);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray text = file.readAll();
    QVERIFY(text.contains("<svg"));
    QVERIFY(text.contains("Conv2D"));  // text stays text
    QSvgRenderer renderer(svg);
    QVERIFY(renderer.isValid());
    QVERIFY(!renderer.viewBoxF().isEmpty());

    // The selection is the screen's: it survives the export.
    QCOMPARE(canvas.current_layer(), 1);
    QVERIFY(canvas.block(1)->isSelected());

    // An unknown format or a folder that does not exist: false, the file named, nothing left.
    QVERIFY(!canvas.save_image(dir.filePath(QStringLiteral("model.xyz")), &error));
    QVERIFY(error.contains(QStringLiteral("model.xyz")));
    const QString missing = dir.filePath(QStringLiteral("no/such/folder/model.png"));
    QVERIFY(!canvas.save_image(missing, &error));
    QVERIFY(error.contains(QStringLiteral("model.png")));
    QVERIFY(!QFile::exists(missing));
  }
};

}  // namespace mixlab::ui

QTEST_MAIN(mixlab::ui::CanvasTest)
#include "canvas_test.moc"
