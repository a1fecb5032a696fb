// The layer-stack editor: adding, inserting, duplicating, removing and moving layers (actions,
// keyboard, drag and drop) with undo/redo back to the exact spec; validation with the engine's
// message and layer; the shape table against infer_shapes.
#include <QAbstractItemModelTester>
#include <QAction>
#include <QLabel>
#include <QLocale>
#include <QMimeData>
#include <QSignalSpy>
#include <QTest>
#include <QUndoStack>
#include <memory>
#include <vector>

#include "engine/core/error.h"
#include "engine/spec/model_spec.h"
#include "engine/spec/shape_inference.h"
#include "resources/builtin_models.h"
#include "tests/ui/editor_test_support.h"
#include "engine/plan/execution_plan.h"
#include "ui/editor/editor_widget.h"
#include "ui/editor/layer_commands.h"
#include "ui/editor/layer_palette.h"
#include "ui/editor/layer_stack_model.h"
#include "ui/editor/layer_text.h"
#include "ui/editor/model_document.h"
#include "ui/editor/property_panel.h"

namespace mixlab::ui {
namespace {

using test::builtin;
using test::check_undo_redo;
using test::json_of;
using Column = LayerStackModel::Column;

QString qstr(const std::string& s) {
  return QString::fromStdString(s);
}

QAction* find_action(const EditorWidget& editor, const QString& name) {
  for (QAction* action : editor.edit_actions())
    if (action->objectName() == name) return action;
  return nullptr;
}

// The message and layer index the engine gives for `spec`.
std::pair<QString, int> engine_error(const ModelSpec& spec, Policy policy = Policy::float32) {
  try {
    infer_shapes(spec, policy);
  } catch (const SpecError& e) {
    return {QString::fromUtf8(e.what()), e.layer()};
  }
  return {};
}

}  // namespace

class EditorTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { test::init_test_application(); }

  void document_validates_under_the_policy() {
    ModelDocument doc;
    QCOMPARE(doc.display_name(), QStringLiteral("Untitled"));
    QVERIFY(!doc.is_modified());
    QVERIFY(!doc.validation().ok);
    QCOMPARE(doc.validation().message, QStringLiteral("layers: the model has no layers"));
    QCOMPARE(doc.validation().layer, -1);

    QSignalSpy names(&doc, &ModelDocument::display_name_changed);
    doc.reset(builtin("fashion-mlp"), {}, QStringLiteral("fashion-mlp"));
    QCOMPARE(names.count(), 1);
    QCOMPARE(doc.display_name(), QStringLiteral("fashion-mlp"));
    QVERIFY(doc.file_path().isEmpty());
    QVERIFY(doc.validation().ok);
    QVERIFY(doc.validation().message.isEmpty());
    QCOMPARE(doc.validation().table->params_total, infer_shapes(doc.spec()).params_total);

    QSignalSpy changed(&doc, &ModelDocument::changed);
    doc.set_policy(Policy::mixed_float16);
    doc.set_policy(Policy::mixed_float16);  // no change, no signal
    QCOMPARE(changed.count(), 1);
    QCOMPARE(doc.policy(), Policy::mixed_float16);
    QCOMPARE(doc.validation().table->activation_bytes_total,
             infer_shapes(doc.spec(), Policy::mixed_float16).activation_bytes_total);
    QVERIFY(!doc.is_modified());  // the policy is the run's, not the model file's
  }

  void add_insert_duplicate_remove_and_undo() {
    ModelDocument doc;
    doc.reset(builtin("fashion-mlp"), {}, QStringLiteral("fashion-mlp"));
    EditorWidget editor(&doc);
    QAbstractItemModelTester tester(editor.stack_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy modified(&doc, &ModelDocument::modified_changed);
    std::vector<QString> states = {json_of(doc.spec())};
    const auto& layers = doc.spec().layers;

    editor.select_layer(2);  // Dense 128
    editor.palette()->set_current_type(LayerType::Dropout);
    find_action(editor, "add_layer")->trigger();
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers.size(), std::size_t{6});
    QCOMPARE(layers[3].type, LayerType::Dropout);
    QCOMPARE(layers[3].rate, 0.2);
    QCOMPARE(editor.current_layer(), 3);
    QVERIFY(doc.is_modified());
    QCOMPARE(modified.count(), 1);
    QVERIFY(find_action(editor, "undo")->isEnabled());
    QVERIFY(find_action(editor, "undo")->toolTip().contains(QStringLiteral("Add Dropout")));

    editor.palette()->set_current_type(LayerType::MaxPooling2D);
    find_action(editor, "insert_layer")->trigger();  // before the Dropout
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers[3].type, LayerType::MaxPooling2D);
    // Keras: strides=None means the pool size.
    QCOMPARE(layers[3].strides, layers[3].pool_size);
    QCOMPARE(editor.current_layer(), 3);

    editor.select_layer(4);
    find_action(editor, "duplicate_layer")->trigger();
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers.size(), std::size_t{8});
    QCOMPARE(layers[5], layers[4]);
    QCOMPARE(editor.current_layer(), 5);

    find_action(editor, "remove_layer")->trigger();
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers.size(), std::size_t{7});
    QCOMPARE(editor.current_layer(), 5);

    editor.select_layer(0);
    find_action(editor, "move_layer_down")->trigger();
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers[1].type, LayerType::Rescaling);
    QCOMPARE(editor.current_layer(), 1);
    find_action(editor, "move_layer_up")->trigger();
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers[0].type, LayerType::Rescaling);

    // Without a selection, Add appends and Insert puts the layer first.
    editor.select_layer(-1);
    editor.palette()->set_current_type(LayerType::Dense);
    find_action(editor, "add_layer")->trigger();
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers.back().type, LayerType::Dense);
    editor.select_layer(-1);
    find_action(editor, "insert_layer")->trigger();
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers.front().type, LayerType::Dense);

    QCOMPARE(doc.undo_stack()->count(), static_cast<int>(states.size()) - 1);
    check_undo_redo(doc, states);
    while (doc.undo_stack()->canUndo()) doc.undo_stack()->undo();
    QCOMPARE(json_of(doc.spec()), states.front());
    QVERIFY(!doc.is_modified());
  }

  void actions_follow_the_selection() {
    ModelDocument doc;
    doc.reset(builtin("fashion-mlp"), {}, QStringLiteral("fashion-mlp"));
    EditorWidget editor(&doc);
    QCOMPARE(editor.edit_actions().size(), 8);
    editor.select_layer(-1);
    QVERIFY(!find_action(editor, "remove_layer")->isEnabled());
    QVERIFY(!find_action(editor, "duplicate_layer")->isEnabled());
    editor.select_layer(0);
    QVERIFY(find_action(editor, "remove_layer")->isEnabled());
    QVERIFY(!find_action(editor, "move_layer_up")->isEnabled());
    QVERIFY(find_action(editor, "move_layer_down")->isEnabled());
    editor.select_layer(4);
    QVERIFY(find_action(editor, "move_layer_up")->isEnabled());
    QVERIFY(!find_action(editor, "move_layer_down")->isEnabled());
    for (QAction* action : editor.edit_actions()) QVERIFY(!action->toolTip().isEmpty());
    // Every named control of the panel explains itself (Qt's own parts are "qt_...").
    for (const QWidget* w : editor.properties()->findChildren<QWidget*>()) {
      if (w->objectName().isEmpty() || w->objectName().startsWith(QStringLiteral("qt_"))) continue;
      QVERIFY2(!w->toolTip().isEmpty(), qPrintable(w->objectName()));
    }
    QVERIFY(!editor.palette()->item(0)->toolTip().isEmpty());
  }

  void keyboard_moves_removes_and_undoes() {
    ModelDocument doc;
    doc.reset(builtin("fashion-mlp"), {}, QStringLiteral("fashion-mlp"));
    EditorWidget editor(&doc);
    editor.show();
    QVERIFY(QTest::qWaitForWindowActive(&editor));
    QAbstractItemView* view = editor.stack_view();
    view->setFocus();
    QTRY_VERIFY(view->hasFocus());
    std::vector<QString> states = {json_of(doc.spec())};
    const auto& layers = doc.spec().layers;

    editor.select_layer(2);  // Dense 128
    QTest::keyClick(view, Qt::Key_Up, Qt::AltModifier);
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers[1].type, LayerType::Dense);
    QCOMPARE(layers[2].type, LayerType::Flatten);
    QCOMPARE(editor.current_layer(), 1);

    QTest::keyClick(view, Qt::Key_Down, Qt::AltModifier);
    QTest::keyClick(view, Qt::Key_Down, Qt::AltModifier);
    states.push_back(json_of(doc.spec()));  // two steps
    QCOMPARE(layers[3].units, 128);
    QCOMPARE(editor.current_layer(), 3);

    QTest::keyClick(view, Qt::Key_Delete);
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers.size(), std::size_t{4});
    QCOMPARE(doc.undo_stack()->count(), 4);

    // Ctrl+Z / Ctrl+Shift+Z work anywhere in the editor.
    QTest::keyClick(view, Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(json_of(doc.spec()), states[2]);
    QTest::keyClick(view, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(json_of(doc.spec()), states[3]);
    while (doc.undo_stack()->canUndo()) doc.undo_stack()->undo();
    QCOMPARE(json_of(doc.spec()), states.front());
  }

  void drag_and_drop_reorders() {
    ModelDocument doc;
    doc.reset(builtin("fashion-mlp"), {}, QStringLiteral("fashion-mlp"));
    EditorWidget editor(&doc);
    LayerStackModel* model = editor.stack_model();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    std::vector<QString> states = {json_of(doc.spec())};
    const auto& layers = doc.spec().layers;
    const auto drop = [&](int from, int row, const QModelIndex& parent) {
      std::unique_ptr<QMimeData> data(model->mimeData({model->index(from, 0)}));
      if (!model->canDropMimeData(data.get(), Qt::MoveAction, row, 0, parent)) return false;
      return model->dropMimeData(data.get(), Qt::MoveAction, row, 0, parent);
    };

    QVERIFY(model->mimeTypes().contains(LayerStackModel::mime_type()));
    QVERIFY(model->flags(model->index(0, 0)).testFlag(Qt::ItemIsDragEnabled));
    QVERIFY(model->flags({}).testFlag(Qt::ItemIsDropEnabled));
    QVERIFY(drop(0, 3, {}));  // Rescaling into the gap before row 3
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers[2].type, LayerType::Rescaling);
    QCOMPARE(editor.current_layer(), 2);
    QVERIFY(drop(4, 0, {}));  // the Activation to the top
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers[0].type, LayerType::Activation);
    QVERIFY(drop(0, -1, {}));  // and to the end
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers[4].type, LayerType::Activation);
    QVERIFY(drop(3, -1, model->index(0, 0)));  // onto row 0: before it
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers[0].units, 10);

    QVERIFY(!drop(1, 1, {}));  // onto itself
    QVERIFY(!drop(1, 2, {}));  // just below itself: the same place
    std::unique_ptr<QMimeData> data(model->mimeData({model->index(0, 0)}));
    QVERIFY(!model->dropMimeData(data.get(), Qt::CopyAction, 3, 0, {}));
    QMimeData foreign;
    foreign.setText(QStringLiteral("0"));
    QVERIFY(!model->dropMimeData(&foreign, Qt::MoveAction, 3, 0, {}));
    QCOMPARE(doc.undo_stack()->count(), 4);
    check_undo_redo(doc, states);
  }

  void invalid_stack_marks_the_offending_row() {
    ModelDocument doc;
    doc.reset(builtin("fashion-mlp"), {}, QStringLiteral("fashion-mlp"));
    EditorWidget editor(&doc);
    LayerStackModel* model = editor.stack_model();
    auto* message = editor.findChild<QLabel*>(QStringLiteral("validation_message"));
    QVERIFY(message->isHidden());

    // Conv2D after Flatten.
    doc.undo_stack()->push(new InsertLayerCommand(&doc, 2, default_layer(LayerType::Conv2D)));
    const auto [text, layer] = engine_error(doc.spec());
    QCOMPARE(layer, 2);
    QVERIFY(text.startsWith(QStringLiteral("layer 2 (Conv2D): needs an [H, W, C] input")));
    const ModelDocument::Validation& v = doc.validation();
    QVERIFY(!v.ok);
    QVERIFY(!v.table);
    QCOMPARE(v.message, text);
    QCOMPARE(v.layer, 2);
    QVERIFY(!message->isHidden());
    QCOMPARE(message->text(), text);
    QVERIFY(model->data(model->index(2, Column::Layer), Qt::ForegroundRole).isValid());
    QVERIFY(model->data(model->index(2, Column::Flops), Qt::BackgroundRole).isValid());
    QCOMPARE(model->data(model->index(2, Column::OutputShape), Qt::ToolTipRole).toString(), text);
    QVERIFY(!model->data(model->index(1, Column::Layer), Qt::ForegroundRole).isValid());
    // The layers above keep their figures; the ones from the error on have none.
    QCOMPARE(model->data(model->index(1, Column::OutputShape)).toString(), QStringLiteral("784"));
    QCOMPARE(model->data(model->index(3, Column::OutputShape)).toString(), QStringLiteral("—"));

    // No Flatten before the classifier: the output is not flat, and the last layer says so.
    doc.undo_stack()->undo();
    QVERIFY(doc.validation().ok);
    QVERIFY(message->isHidden());
    QVERIFY(!model->data(model->index(2, Column::Layer), Qt::ForegroundRole).isValid());
    doc.undo_stack()->push(new RemoveLayerCommand(&doc, 1));
    const auto [flat_text, flat_layer] = engine_error(doc.spec());
    QCOMPARE(flat_layer, 3);
    QCOMPARE(doc.validation().layer, 3);
    QCOMPARE(doc.validation().message, flat_text);
    QVERIFY(flat_text.contains(QStringLiteral("is not flat")));
    QVERIFY(model->data(model->index(3, Column::Layer), Qt::ForegroundRole).isValid());
    QCOMPARE(model->data(model->index(2, Column::OutputShape)).toString(),
             QStringLiteral("28x28x10"));
  }

  void shape_columns_match_infer_shapes_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("policy_value");
    for (std::string_view name : builtin_model_names()) {
      for (Policy policy : {Policy::float32, Policy::mixed_float16}) {
        const QString qname = QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
        QTest::addRow("%s %s", qPrintable(qname), to_string(policy).data())
            << qname << static_cast<int>(policy);
      }
    }
  }

  void shape_columns_match_infer_shapes() {
    QFETCH(QString, name);
    QFETCH(int, policy_value);
    const auto policy = static_cast<Policy>(policy_value);
    ModelDocument doc;
    doc.reset(builtin(name), {}, name);
    doc.set_policy(policy);
    EditorWidget editor(&doc);
    LayerStackModel* model = editor.stack_model();
    const ShapeTable table = infer_shapes(doc.spec(), policy);
    QCOMPARE(model->rowCount(), static_cast<int>(table.layers.size()));
    QCOMPARE(model->columnCount(), static_cast<int>(Column::Count));
    const int number = static_cast<int>(LayerStackModel::Role::Number);
    for (int row = 0; row < model->rowCount(); ++row) {
      const LayerInfo& info = table.layers[static_cast<std::size_t>(row)];
      QCOMPARE(model->data(model->index(row, Column::Layer)).toString(),
               layer_summary(doc.spec().layers[static_cast<std::size_t>(row)]));
      QCOMPARE(model->data(model->index(row, Column::OutputShape)).toString(),
               qstr(format_shape(info.output_shape)));
      QCOMPARE(model->data(model->index(row, Column::Parameters), number).toLongLong(),
               static_cast<qlonglong>(info.param_count));
      QCOMPARE(model->data(model->index(row, Column::Parameters)).toString(),
               QLocale::c().toString(static_cast<qlonglong>(info.param_count)));
      QCOMPARE(model->data(model->index(row, Column::Flops), number).toLongLong(),
               static_cast<qlonglong>(info.flops));
      QCOMPARE(model->data(model->index(row, Column::ActivationMemory), number).toLongLong(),
               static_cast<qlonglong>(info.activation_bytes));
      QCOMPARE(model->headerData(row, Qt::Vertical).toInt(), row);
    }
    for (int column = 0; column < Column::Count; ++column) {
      QVERIFY(!model->headerData(column, Qt::Horizontal).toString().isEmpty());
      QVERIFY(!model->headerData(column, Qt::Horizontal, Qt::ToolTipRole).toString().isEmpty());
    }
    // The table's totals, then the memory training needs (the plan's, at batch 32 with Adam
    // until the Run panel says otherwise).
    const MemoryPlan memory =
        build_plan(doc.spec(), table, 32, default_optimizer(OptimizerKind::adam)).memory();
    QCOMPARE(editor.findChild<QLabel*>(QStringLiteral("totals"))->text(),
             totals_text(table) + QLatin1Char('\n') +
                 training_memory_text(memory, 32, table.policy, OptimizerKind::adam));
  }

  void layer_summaries_use_keras_terms() {
    const ModelSpec convnet = builtin(QStringLiteral("cifar100-convnet"));
    QCOMPARE(layer_summary(convnet.layers[0]), QStringLiteral("Rescaling 1/255"));
    QCOMPARE(layer_summary(convnet.layers[1]), QStringLiteral("Conv2D 64, 4x4"));
    QCOMPARE(layer_summary(convnet.layers[2]), QStringLiteral("MaxPooling2D 2x2"));
    QCOMPARE(layer_summary(convnet.layers[5]), QStringLiteral("Flatten"));
    QCOMPARE(layer_summary(convnet.layers[6]), QStringLiteral("Dense 4096, relu"));
    QCOMPARE(layer_summary(convnet.layers[10]), QStringLiteral("Dropout 0.2"));
    QCOMPARE(layer_summary(convnet.layers[12]), QStringLiteral("Activation softmax, float32"));
    LayerSpec conv = default_layer(LayerType::Conv2D);
    conv.strides = {2, 2};
    conv.padding = Padding::same;
    conv.use_bias = false;
    QCOMPARE(layer_summary(conv), QStringLiteral("Conv2D 32, 3x3, stride 2, same, relu, no bias"));
    QCOMPARE(format_flops(203'530), QStringLiteral("204 k"));
    QCOMPARE(format_flops(12'345'678), QStringLiteral("12.3 M"));
    QCOMPARE(format_flops(999), QStringLiteral("999"));
  }
};

}  // namespace mixlab::ui

QTEST_MAIN(mixlab::ui::EditorTest)
#include "editor_test.moc"
