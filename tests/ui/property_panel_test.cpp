// The layer-stack editor's property panel: each field's widget edits the selected layer or the
// model through undo commands; spin-box edits merge into one step; the panel follows undo/redo.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QTest>
#include <QUndoStack>
#include <cmath>
#include <vector>

#include "engine/spec/model_spec.h"
#include "tests/ui/editor_test_support.h"
#include "ui/editor/editor_widget.h"
#include "ui/editor/layer_commands.h"
#include "ui/editor/layer_text.h"
#include "ui/editor/model_document.h"
#include "ui/editor/property_panel.h"

namespace mixlab::ui {
namespace {

using test::builtin;
using test::check_undo_redo;
using test::json_of;

}  // namespace

class PropertyPanelTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { test::init_test_application(); }

  void spin_box_edits_merge_into_one_step() {
    ModelDocument doc;
    doc.reset(builtin("fashion-mlp"), {}, QStringLiteral("fashion-mlp"));
    EditorWidget editor(&doc);
    const QString original = json_of(doc.spec());
    QUndoStack* stack = doc.undo_stack();
    editor.select_layer(2);
    auto* units = editor.properties()->findChild<QSpinBox*>(QStringLiteral("units"));
    QVERIFY(units != nullptr);
    QVERIFY(!units->toolTip().isEmpty());
    QCOMPARE(units->value(), 128);
    QCOMPARE(units->minimum(), 1);

    units->setValue(129);
    units->setValue(130);
    units->stepBy(5);
    QCOMPARE(doc.spec().layers[2].units, 135);
    QCOMPARE(stack->count(), 1);
    stack->undo();
    QCOMPARE(json_of(doc.spec()), original);
    QCOMPARE(units->value(), 128);  // the panel follows undo
    stack->redo();
    QCOMPARE(units->value(), 135);

    // Finishing the edit starts a new undo step.
    emit units->editingFinished();
    units->setValue(140);
    QCOMPARE(stack->count(), 2);
    // A drag back to where it started leaves no step behind.
    emit units->editingFinished();
    units->setValue(150);
    units->setValue(140);
    QCOMPARE(stack->count(), 2);
    QCOMPARE(doc.spec().layers[2].units, 140);

    // Another field, or another layer, is another step.
    editor.select_layer(3);
    units->setValue(20);
    QCOMPARE(stack->count(), 3);
    QCOMPARE(doc.spec().layers[3].units, 20);
    while (stack->canUndo()) stack->undo();
    QCOMPARE(json_of(doc.spec()), original);
  }

  void combo_check_and_window_edits() {
    ModelDocument doc;
    doc.reset(builtin("fashion-cnn"), {}, QStringLiteral("fashion-cnn"));
    EditorWidget editor(&doc);
    PropertyPanel* panel = editor.properties();
    std::vector<QString> states = {json_of(doc.spec())};
    const auto& layers = doc.spec().layers;

    editor.select_layer(1);  // Conv2D 16, 3x3, same, relu
    auto* activation = panel->findChild<QComboBox*>(QStringLiteral("activation"));
    activation->setCurrentIndex(activation->findText(QStringLiteral("tanh")));
    states.push_back(json_of(doc.spec()));
    activation->setCurrentIndex(activation->findText(QStringLiteral("gelu")));
    states.push_back(json_of(doc.spec()));  // combo edits do not merge
    QCOMPARE(layers[1].activation, ActivationFn::gelu);
    auto* padding = panel->findChild<QComboBox*>(QStringLiteral("padding"));
    padding->setCurrentIndex(padding->findText(QStringLiteral("valid")));
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers[1].padding, Padding::valid);
    panel->findChild<QCheckBox*>(QStringLiteral("use_bias"))->setChecked(false);
    states.push_back(json_of(doc.spec()));
    QVERIFY(!layers[1].use_bias);
    panel->findChild<QSpinBox*>(QStringLiteral("kernel_size.h"))->setValue(5);
    panel->findChild<QSpinBox*>(QStringLiteral("kernel_size.w"))->setValue(5);
    states.push_back(json_of(doc.spec()));  // one field, one step
    QCOMPARE(layers[1].kernel_size, (Size2{5, 5}));

    // Pooling strides that equal the pool size follow it (Keras's strides=None).
    editor.select_layer(2);  // MaxPooling2D 2
    panel->findChild<QSpinBox*>(QStringLiteral("pool_size.h"))->setValue(3);
    panel->findChild<QSpinBox*>(QStringLiteral("pool_size.w"))->setValue(3);
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers[2].pool_size, (Size2{3, 3}));
    QCOMPARE(layers[2].strides, (Size2{3, 3}));
    auto* strides_h = panel->findChild<QSpinBox*>(QStringLiteral("strides.h"));
    QCOMPARE(strides_h->value(), 3);
    strides_h->setValue(1);
    states.push_back(json_of(doc.spec()));
    panel->findChild<QSpinBox*>(QStringLiteral("pool_size.h"))->setValue(2);
    states.push_back(json_of(doc.spec()));
    QCOMPARE(layers[2].strides, (Size2{1, 3}));  // set apart: no longer follows

    editor.select_layer(6);  // Activation softmax, float32
    auto* dtype = panel->findChild<QComboBox*>(QStringLiteral("dtype"));
    QCOMPARE(dtype->currentIndex(), 1);
    dtype->setCurrentIndex(0);
    states.push_back(json_of(doc.spec()));
    QVERIFY(!layers[6].force_float32);
    dtype->setCurrentIndex(2);  // out of FP8
    states.push_back(json_of(doc.spec()));
    QVERIFY(layers[6].force_bfloat16);
    QVERIFY(!layers[6].force_float32);
    dtype->setCurrentIndex(0);
    states.push_back(json_of(doc.spec()));
    QVERIFY(!layers[6].force_bfloat16);
    doc.set_policy(Policy::mixed_bfloat16);
    QVERIFY(dtype->itemText(0).contains(QStringLiteral("bfloat16")));

    check_undo_redo(doc, states);
  }

  // A DepthwiseConv2D's window and activation edit as a Conv2D's (it has no filters field); a
  // SeparableConv2D has filters too.
  void depthwise_and_separable_edit_their_convolution_fields() {
    ModelDocument doc;
    ModelSpec spec = builtin("mobilenetv2-cifar");
    doc.reset(spec, {}, QStringLiteral("mobilenetv2-cifar"));
    EditorWidget editor(&doc);
    PropertyPanel* panel = editor.properties();
    int dw = -1;
    for (std::size_t i = 0; i < doc.spec().layers.size() && dw < 0; ++i) {
      if (doc.spec().layers[i].type == LayerType::DepthwiseConv2D) dw = static_cast<int>(i);
    }
    QVERIFY(dw >= 0);
    editor.select_layer(dw);
    auto* kh = panel->findChild<QSpinBox*>(QStringLiteral("kernel_size.h"));
    QVERIFY(kh->isVisibleTo(panel));
    QVERIFY(!panel->findChild<QSpinBox*>(QStringLiteral("filters"))->isVisibleTo(panel));
    kh->setValue(5);
    QCOMPARE(doc.spec().layers[static_cast<std::size_t>(dw)].kernel_size.h, 5);
    doc.undo_stack()->undo();
    QCOMPARE(doc.spec().layers[static_cast<std::size_t>(dw)].kernel_size.h, 3);

    spec.layers[static_cast<std::size_t>(dw)].type = LayerType::SeparableConv2D;
    spec.layers[static_cast<std::size_t>(dw)].filters = 8;
    doc.reset(spec, {}, QStringLiteral("separable"));
    editor.select_layer(dw);
    auto* filters = panel->findChild<QSpinBox*>(QStringLiteral("filters"));
    QVERIFY(filters->isVisibleTo(panel));
    QCOMPARE(filters->value(), 8);
  }

  // BatchNormalization, ReLU, ZeroPadding2D, Reshape, the global poolings, Concatenate and the
  // depth multiplier: each field shown for its type only, edited through the undo stack.
  void cnn_layer_fields_edit() {
    ModelDocument doc;
    doc.reset(parse_model_json(R"({"name": "fields", "input": {"shape": [8, 8, 4]}, "layers": [
        {"type": "BatchNormalization", "name": "bn"},
        {"type": "ReLU", "max_value": 6, "name": "relu6"},
        {"type": "ZeroPadding2D", "padding": 1, "name": "pad"},
        {"type": "DepthwiseConv2D", "kernel_size": 3, "name": "dw"},
        {"type": "Concatenate", "inputs": ["dw", "dw"], "name": "cat"},
        {"type": "Reshape", "target_shape": [8, 8, 8], "name": "re"},
        {"type": "GlobalAveragePooling2D", "name": "gap"},
        {"type": "Dense", "units": 2}]})"),
              {}, QStringLiteral("fields"));
    QVERIFY2(doc.validation().ok, qPrintable(doc.validation().message));
    EditorWidget editor(&doc);
    PropertyPanel* panel = editor.properties();
    const auto& layers = doc.spec().layers;
    const auto spin = [&](const char* name) {
      return panel->findChild<QDoubleSpinBox*>(QString::fromLatin1(name));
    };
    const auto box = [&](const char* name) {
      return panel->findChild<QCheckBox*>(QString::fromLatin1(name));
    };
    std::vector<QString> states{json_of(doc.spec())};

    editor.select_layer(0);
    QVERIFY(spin("momentum")->isVisibleTo(panel));
    QVERIFY(!spin("max_value")->isVisibleTo(panel));
    QCOMPARE(spin("momentum")->value(), 0.99);
    QCOMPARE(spin("epsilon")->value(), 1e-3);
    spin("momentum")->setValue(0.9);
    states.push_back(json_of(doc.spec()));
    box("center")->setChecked(false);
    QCOMPARE(layers[0].momentum, 0.9);
    QVERIFY(!layers[0].center);
    QVERIFY(layers[0].scale_gamma);
    QVERIFY(doc.validation().ok);
    states.push_back(json_of(doc.spec()));

    // ReLU6 to unbounded (the spin box's "none") and a leaky slope.
    editor.select_layer(1);
    QCOMPARE(spin("max_value")->value(), 6.0);
    spin("max_value")->setValue(spin("max_value")->minimum());
    QCOMPARE(spin("max_value")->text(), QStringLiteral("none"));
    QVERIFY(std::isinf(layers[1].max_value));
    states.push_back(json_of(doc.spec()));
    spin("negative_slope")->setValue(0.1);
    QCOMPARE(layers[1].negative_slope, 0.1);
    states.push_back(json_of(doc.spec()));

    editor.select_layer(2);
    panel->findChild<QSpinBox*>(QStringLiteral("zero_padding.3"))->setValue(2);
    QCOMPARE(layers[2].zero_padding, (Pad2D{1, 1, 1, 2}));
    states.push_back(json_of(doc.spec()));

    editor.select_layer(3);
    auto* multiplier = panel->findChild<QSpinBox*>(QStringLiteral("depth_multiplier"));
    QVERIFY(multiplier->isVisibleTo(panel));
    multiplier->setValue(2);
    QCOMPARE(layers[3].depth_multiplier, 2);
    // The Reshape now reads 8x8x16 and says so in red: the panel fixes that too.
    QVERIFY(!doc.validation().ok);
    states.push_back(json_of(doc.spec()));

    editor.select_layer(5);
    auto* target = panel->findChild<QLineEdit*>(QStringLiteral("target_shape"));
    QCOMPARE(target->text(), QStringLiteral("8, 8, 8"));
    target->setText(QStringLiteral("8, 8, 0"));  // refused: the field shows the layer's again
    emit target->editingFinished();
    QCOMPARE(target->text(), QStringLiteral("8, 8, 8"));
    target->setText(QStringLiteral("8, -1, 16"));  // 8x9x16 in
    emit target->editingFinished();
    QCOMPARE(layers[5].target_shape, (std::vector<std::int64_t>{8, -1, 16}));
    QVERIFY2(doc.validation().ok, qPrintable(doc.validation().message));
    states.push_back(json_of(doc.spec()));

    editor.select_layer(4);
    panel->findChild<QSpinBox*>(QStringLiteral("axis"))->setValue(-2);
    QCOMPARE(layers[4].axis, -2);
    // Two 8x9x8 side by side along the width.
    QVERIFY2(doc.validation().ok, qPrintable(doc.validation().message));
    QCOMPARE(doc.layer_info(4)->output_shape, (Shape{8, 18, 8}));
    states.push_back(json_of(doc.spec()));

    editor.select_layer(6);
    box("keepdims")->setChecked(true);
    QVERIFY(layers[6].keepdims);
    states.push_back(json_of(doc.spec()));

    // A Normalization's statistics: per channel, then one for all; a negative variance is
    // refused.
    doc.undo_stack()->push(
        new InsertLayerCommand(&doc, 0, default_layer(LayerType::Normalization)));
    editor.select_layer(0);
    states.push_back(json_of(doc.spec()));
    auto* mean = panel->findChild<QLineEdit*>(QStringLiteral("mean"));
    auto* variance = panel->findChild<QLineEdit*>(QStringLiteral("variance"));
    QVERIFY(mean->isVisibleTo(panel));
    QCOMPARE(mean->text(), QStringLiteral("0.485, 0.456, 0.406"));
    mean->setText(QStringLiteral("1, 2, 3, 4"));
    emit mean->editingFinished();
    QCOMPARE(layers[0].mean, (std::vector<double>{1, 2, 3, 4}));
    states.push_back(json_of(doc.spec()));
    variance->setText(QStringLiteral("2.5"));
    emit variance->editingFinished();
    QCOMPARE(layers[0].variance, (std::vector<double>{2.5}));
    // (The model's error is the keepdims above, at its end; the four means fit the channels.)
    QCOMPARE(doc.validation().layer, 8);
    states.push_back(json_of(doc.spec()));
    variance->setText(QStringLiteral("1, -1"));
    emit variance->editingFinished();
    QCOMPARE(variance->text(), QStringLiteral("2.5"));
    QCOMPARE(layers[0].variance, (std::vector<double>{2.5}));

    check_undo_redo(doc, states);
  }

  void rate_and_scale_spin_boxes() {
    ModelDocument doc;
    doc.reset(builtin("cifar100-convnet"), {}, QStringLiteral("cifar100-convnet"));
    EditorWidget editor(&doc);
    const QString original = json_of(doc.spec());
    editor.select_layer(0);  // Rescaling 1/255
    auto* scale = editor.properties()->findChild<QDoubleSpinBox*>(QStringLiteral("scale"));
    QVERIFY(scale->text().startsWith(QStringLiteral("0.00392156")));
    // Showing the value never rewrites it: the exact 1/255 survives selecting the layer.
    QCOMPARE(json_of(doc.spec()), original);
    scale->setValue(0.5);
    scale->setValue(0.25);
    QCOMPARE(doc.undo_stack()->count(), 1);
    QCOMPARE(doc.spec().layers[0].scale, 0.25);

    editor.select_layer(10);  // Dropout 0.2
    auto* rate = editor.properties()->findChild<QDoubleSpinBox*>(QStringLiteral("rate"));
    QCOMPARE(rate->value(), 0.2);
    QVERIFY(rate->maximum() < 1.0);
    rate->stepBy(1);
    rate->stepBy(1);
    QCOMPARE(doc.undo_stack()->count(), 2);
    QCOMPARE(doc.spec().layers[10].rate, 0.3);
    while (doc.undo_stack()->canUndo()) doc.undo_stack()->undo();
    QCOMPARE(json_of(doc.spec()), original);
  }

  void model_fields_edit() {
    ModelDocument doc;
    doc.reset(builtin("fashion-mlp"), {}, QStringLiteral("fashion-mlp"));
    EditorWidget editor(&doc);
    PropertyPanel* panel = editor.properties();
    std::vector<QString> states = {json_of(doc.spec())};

    auto* kind = panel->findChild<QComboBox*>(QStringLiteral("input.kind"));
    kind->setCurrentIndex(kind->findData(1));  // features
    states.push_back(json_of(doc.spec()));
    QCOMPARE(doc.spec().input_shape, (Shape{784}));
    QVERIFY(doc.validation().ok);
    auto* features = panel->findChild<QSpinBox*>(QStringLiteral("input.0"));
    QCOMPARE(features->value(), 784);
    features->setValue(700);
    features->setValue(800);
    states.push_back(json_of(doc.spec()));  // merged
    QCOMPARE(doc.spec().input_shape, (Shape{800}));

    auto* loss = panel->findChild<QComboBox*>(QStringLiteral("loss"));
    loss->setCurrentIndex(loss->findText(QStringLiteral("categorical_crossentropy")));
    states.push_back(json_of(doc.spec()));
    QCOMPARE(doc.spec().loss, LossKind::categorical_crossentropy);
    QCOMPARE(doc.undo_stack()->count(), 3);
    check_undo_redo(doc, states);
  }

  // Issue 29: a sequence input; an image's rows become its steps, and back.
  void the_input_can_be_a_sequence() {
    ModelDocument doc;
    doc.reset(builtin("fashion-cnn"), {}, QStringLiteral("fashion-cnn"));
    EditorWidget editor(&doc);
    auto* kind = editor.properties()->findChild<QComboBox*>(QStringLiteral("input.kind"));
    kind->setCurrentIndex(kind->findData(2));
    QCOMPARE(doc.spec().input_shape, (Shape{28, 28}));
    // fashion-cnn's Conv2D needs an image: the error names it.
    QVERIFY(!doc.validation().ok);
    QVERIFY2(doc.validation().message.contains(QStringLiteral("needs an [H, W, C] input")),
             qPrintable(doc.validation().message));
    QVERIFY(editor.properties()
                ->findChild<QSpinBox*>(QStringLiteral("input.1"))
                ->isVisibleTo(editor.properties()));
    QVERIFY(!editor.properties()
                 ->findChild<QSpinBox*>(QStringLiteral("input.2"))
                 ->isVisibleTo(editor.properties()));
    kind->setCurrentIndex(kind->findData(3));
    QCOMPARE(doc.spec().input_shape, (Shape{28, 28, 1}));
    QVERIFY(doc.validation().ok);
  }
};

}  // namespace mixlab::ui

QTEST_MAIN(mixlab::ui::PropertyPanelTest)
#include "property_panel_test.moc"
