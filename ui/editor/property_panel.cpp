#include "ui/editor/property_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QScopedValueRollback>
#include <QSpinBox>
#include <QStringList>
#include <QToolTip>
#include <QUndoStack>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

#include "ui/editor/graph_edits.h"
#include "ui/editor/model_document.h"

namespace mixlab::ui {
namespace {

// The engine accepts any positive int; so do the spin boxes, so a file's value shows as it is.
constexpr int kMaxCount = std::numeric_limits<int>::max();
constexpr int kImageRank = 3;

QString text_of(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

// A double spin box that shows the shortest text for its value ("0.00392156863", "1") instead of
// a fixed number of decimals, for Rescaling's scale and offset.
class NumberSpinBox : public QDoubleSpinBox {
 public:
  using QDoubleSpinBox::QDoubleSpinBox;
  QString textFromValue(double value) const override {
    return locale().toString(value, 'g', 12).remove(locale().groupSeparator());
  }
};

// The panel sits beside the canvas and the table in a window that fits a 1366x768 screen with
// the Run dock open, so its fields may be narrower than their longest value: a spin box as
// narrow as four digits need (a longer value scrolls in it), a combo box ten characters (its
// popup shows the whole text).
constexpr int kCompactComboChars = 10;

int compact_spin_width() {
  QSpinBox probe;
  probe.setRange(0, 9999);
  return probe.minimumSizeHint().width();
}

bool has_field(LayerType type, LayerField field) {
  // DepthwiseConv2D and SeparableConv2D edit a Conv2D's fields (the depthwise one no filters)
  // and their depth_multiplier.
  const bool separable = type == LayerType::SeparableConv2D;
  const bool conv = type == LayerType::Conv2D || type == LayerType::DepthwiseConv2D || separable;
  const bool pool = type == LayerType::MaxPooling2D || type == LayerType::AveragePooling2D;
  switch (field) {
    case LayerField::name:
    case LayerField::dtype:
      return true;
    case LayerField::units:
      return type == LayerType::Dense;
    case LayerField::filters:
      return type == LayerType::Conv2D || separable;
    case LayerField::kernel_size:
      return conv;
    case LayerField::strides:
    case LayerField::padding:
      return conv || pool;
    case LayerField::pool_size:
      return pool;
    case LayerField::activation:
      return type == LayerType::Dense || conv || type == LayerType::Activation;
    case LayerField::use_bias:
      return type == LayerType::Dense || conv || type == LayerType::MultiHeadAttention;
    case LayerField::rate:
      return type == LayerType::Dropout;
    case LayerField::scale:
    case LayerField::offset:
      return type == LayerType::Rescaling;
    case LayerField::inputs:
      return false;  // edited on the canvas
    case LayerField::depth_multiplier:
      return type == LayerType::DepthwiseConv2D || separable;
    case LayerField::momentum:
      return type == LayerType::BatchNormalization;
    case LayerField::epsilon:
    case LayerField::center:
    case LayerField::scale_gamma:
      return type == LayerType::BatchNormalization || type == LayerType::LayerNormalization;
    case LayerField::input_dim:
    case LayerField::output_dim:
      return type == LayerType::Embedding;
    case LayerField::sequence_length:
      return type == LayerType::PositionEmbedding;
    case LayerField::num_heads:
    case LayerField::key_dim:
    case LayerField::value_dim:
    case LayerField::attention_output:
    case LayerField::causal:
      return type == LayerType::MultiHeadAttention;
    case LayerField::max_value:
    case LayerField::negative_slope:
    case LayerField::threshold:
      return type == LayerType::ReLU;
    case LayerField::zero_padding:
      return type == LayerType::ZeroPadding2D;
    case LayerField::target_shape:
      return type == LayerType::Reshape;
    case LayerField::keepdims:
      return type == LayerType::GlobalAveragePooling2D || type == LayerType::GlobalMaxPooling2D ||
             type == LayerType::GlobalAveragePooling1D || type == LayerType::GlobalMaxPooling1D;
    case LayerField::axis:
      return type == LayerType::Concatenate;
    case LayerField::mean:
    case LayerField::variance:
      return type == LayerType::Normalization;
  }
  return false;
}

// Setting a value the widget already shows would move the cursor of a spin box being typed in.
void show_int(QSpinBox* spin, int value) {
  if (spin->value() != value) spin->setValue(value);
}
void show_double(QDoubleSpinBox* spin, double value) {
  if (spin->textFromValue(spin->value()) != spin->textFromValue(value)) spin->setValue(value);
}
void show_text(QLineEdit* edit, const QString& text) {
  if (edit->text() != text) edit->setText(text);
}
void show_data(QComboBox* combo, int data) {
  combo->setCurrentIndex(combo->findData(data));
}

QComboBox* make_combo(const QString& name, const QString& tooltip) {
  auto* combo = new QComboBox;
  combo->setObjectName(name);
  combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  combo->setMinimumContentsLength(kCompactComboChars);
  combo->setToolTip(tooltip);
  return combo;
}

// A combo box of an engine enum's values, named as the engine names them; item data is the value.
template <typename Enum>
QComboBox* enum_combo(const QString& name, const QString& tooltip, std::span<const Enum> values) {
  QComboBox* combo = make_combo(name, tooltip);
  for (Enum value : values) combo->addItem(text_of(to_string(value)), static_cast<int>(value));
  return combo;
}

}  // namespace

PropertyPanel::PropertyPanel(ModelDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 4, 0);  // the splitter's handle and the scroll bar frame it
  build_model_group();
  build_layer_group();
  layout->addWidget(model_box_);
  layout->addWidget(layer_box_);
  layout->addStretch(1);
  connect(doc_, &ModelDocument::changed, this, &PropertyPanel::refresh);
  refresh();
}

void PropertyPanel::set_current_layer(int index) {
  layer_ = index;
  end_merge_session();
  refresh();
}

int PropertyPanel::current_layer() const {
  return layer_;
}

QSize PropertyPanel::sizeHint() const {
  return {minimumSizeHint().width(), QWidget::sizeHint().height()};
}

void PropertyPanel::end_merge_session() {
  ++merge_session_;
}

QSpinBox* PropertyPanel::count_spin(const QString& name, const QString& tooltip) {
  auto* spin = new QSpinBox;
  spin->setObjectName(name);
  spin->setRange(1, kMaxCount);
  spin->setToolTip(tooltip);
  spin->setAccelerated(true);
  spin->setMinimumWidth(compact_spin_width());
  connect(spin, &QSpinBox::editingFinished, this, &PropertyPanel::end_merge_session);
  return spin;
}

PropertyPanel::Size2Editor PropertyPanel::size2_editor(const QString& name, LayerField field,
                                                       Size2 LayerSpec::*member,
                                                       const QString& tooltip) {
  Size2Editor editor;
  editor.row = new QWidget;
  editor.h = count_spin(name + QStringLiteral(".h"), tooltip + tr(" (height)"));
  editor.w = count_spin(name + QStringLiteral(".w"), tooltip + tr(" (width)"));
  auto* row = new QHBoxLayout(editor.row);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(editor.h);
  row->addWidget(new QLabel(QStringLiteral("×")));
  row->addWidget(editor.w);
  // One component of the window (h or w); Keras's pooling strides=None means "the pool size",
  // so strides that equal the pool size follow it (the file format then writes no strides).
  const auto edit_component = [this, field, member](int Size2::*component, int v) {
    edit_layer(
        field,
        [&](LayerSpec& l) {
          if (field == LayerField::pool_size && l.strides == l.pool_size) l.strides.*component = v;
          (l.*member).*component = v;
        },
        true);
  };
  connect(editor.h, &QSpinBox::valueChanged, this,
          [edit_component](int v) { edit_component(&Size2::h, v); });
  connect(editor.w, &QSpinBox::valueChanged, this,
          [edit_component](int v) { edit_component(&Size2::w, v); });
  return editor;
}

void PropertyPanel::build_model_group() {
  model_box_ = new QGroupBox(tr("Model"));
  auto* form = new QFormLayout(model_box_);

  model_name_ = new QLineEdit;
  model_name_->setObjectName(QStringLiteral("model.name"));
  model_name_->setToolTip(tr("The model's name, saved in its file"));
  connect(model_name_, &QLineEdit::editingFinished, this, [this] {
    const std::string name = model_name_->text().toStdString();
    edit_model(
        ModelField::name, [&](ModelHeader& h) { h.name = name; }, false);
  });
  form->addRow(tr("Name"), model_name_);

  input_kind_ = make_combo(QStringLiteral("input.kind"),
                           tr("An image [H, W, C] (for Conv2D and pooling), a sequence [steps, "
                              "features] (Dense on each step, the 1D poolings) or a flat vector "
                              "of features [N]"));
  input_kind_->addItem(tr("Image [H, W, C]"), kImageRank);
  input_kind_->addItem(tr("Sequence [steps, features]"), 2);
  input_kind_->addItem(tr("Features [N]"), 1);
  connect(input_kind_, &QComboBox::currentIndexChanged, this, [this] {
    const int rank = input_kind_->currentData().toInt();
    edit_model(
        ModelField::input_shape,
        [&](ModelHeader& h) {
          const Shape& s = h.input_shape;
          if (static_cast<int>(s.size()) == rank) return;
          // Keep the element count: [28, 28, 1] -> [784] or [28, 28] (the rows as steps),
          // [784] -> [784, 1] or [784, 1, 1], [28, 28] -> [28, 28, 1].
          const std::int64_t n = num_elements(s);
          if (rank == 1) {
            h.input_shape = Shape{n};
          } else if (rank == 2) {
            h.input_shape = s.size() == 3 ? Shape{s[0], s[1] * s[2]} : Shape{n, 1};
          } else {
            h.input_shape = s.size() == 2 ? Shape{s[0], s[1], 1} : Shape{n, 1, 1};
          }
        },
        false);
  });
  form->addRow(tr("Input"), input_kind_);

  auto* dims = new QWidget;
  auto* dims_layout = new QHBoxLayout(dims);
  dims_layout->setContentsMargins(0, 0, 0, 0);
  const std::array<QString, 3> dim_tips = {tr("Height, steps, or the number of features"),
                                           tr("Width, or a step's features"), tr("Channels")};
  for (std::size_t i = 0; i < input_dims_.size(); ++i) {
    QSpinBox* spin = count_spin(QStringLiteral("input.%1").arg(i), dim_tips[i]);
    input_dims_[i] = spin;
    dims_layout->addWidget(spin);
    connect(spin, &QSpinBox::valueChanged, this, [this, i](int v) {
      edit_model(
          ModelField::input_shape,
          [&](ModelHeader& h) {
            if (i < h.input_shape.size()) h.input_shape[i] = v;
          },
          true);
    });
  }
  form->addRow(tr("Input shape"), dims);

  loss_ = enum_combo(QStringLiteral("loss"), tr("The training loss (Keras's names)"), all_losses());
  connect(loss_, &QComboBox::currentIndexChanged, this, [this] {
    const auto loss = static_cast<LossKind>(loss_->currentData().toInt());
    edit_model(
        ModelField::loss, [&](ModelHeader& h) { h.loss = loss; }, false);
  });
  form->addRow(tr("Loss"), loss_);
}

void PropertyPanel::add_layer_row(LayerField field, const QString& label, QWidget* editor) {
  layer_form_->addRow(label, editor);
  layer_rows_.emplace_back(field, editor);
}

void PropertyPanel::build_layer_group() {
  layer_box_ = new QGroupBox(tr("Layer"));
  layer_form_ = new QFormLayout(layer_box_);
  no_layer_ = new QLabel(tr("Select a layer to edit its settings."));
  no_layer_->setWordWrap(true);
  layer_form_->addRow(no_layer_);

  name_ = new QLineEdit;
  name_->setObjectName(QStringLiteral("name"));
  name_->setToolTip(tr("Optional layer name, saved in the model file"));
  // A rename carries the layers that read this one by name along (graph_edits.h); a name
  // another layer has is refused, the field shows the old one again and says why.
  connect(name_, &QLineEdit::editingFinished, this, [this] {
    if (loading_ || layer_ < 0 || layer_ >= static_cast<int>(doc_->spec().layers.size())) return;
    QString why;
    if (!rename_layer(doc_, layer_, name_->text().toStdString(), &why)) {
      show_text(name_,
                QString::fromStdString(doc_->spec().layers[static_cast<std::size_t>(layer_)].name));
      QToolTip::showText(name_->mapToGlobal(QPoint(0, name_->height())), why, name_);
    }
  });
  add_layer_row(LayerField::name, tr("Name"), name_);

  units_ = count_spin(QStringLiteral("units"), tr("Number of output units"));
  connect(units_, &QSpinBox::valueChanged, this, [this](int v) {
    edit_layer(
        LayerField::units, [&](LayerSpec& l) { l.units = v; }, true);
  });
  add_layer_row(LayerField::units, tr("Units"), units_);

  filters_ = count_spin(QStringLiteral("filters"), tr("Number of output channels"));
  connect(filters_, &QSpinBox::valueChanged, this, [this](int v) {
    edit_layer(
        LayerField::filters, [&](LayerSpec& l) { l.filters = v; }, true);
  });
  add_layer_row(LayerField::filters, tr("Filters"), filters_);

  kernel_size_ = size2_editor(QStringLiteral("kernel_size"), LayerField::kernel_size,
                              &LayerSpec::kernel_size, tr("Convolution window"));
  add_layer_row(LayerField::kernel_size, tr("Kernel size"), kernel_size_.row);
  pool_size_ = size2_editor(QStringLiteral("pool_size"), LayerField::pool_size,
                            &LayerSpec::pool_size, tr("Pooling window"));
  add_layer_row(LayerField::pool_size, tr("Pool size"), pool_size_.row);
  strides_ = size2_editor(QStringLiteral("strides"), LayerField::strides, &LayerSpec::strides,
                          tr("Step of the window"));
  add_layer_row(LayerField::strides, tr("Strides"), strides_.row);

  padding_ = enum_combo(QStringLiteral("padding"),
                        tr("'valid': no padding, the window stays inside the input; 'same': pad "
                           "so that the output is ceil(input / strides)"),
                        all_paddings());
  connect(padding_, &QComboBox::currentIndexChanged, this, [this] {
    const auto padding = static_cast<Padding>(padding_->currentData().toInt());
    edit_layer(
        LayerField::padding, [&](LayerSpec& l) { l.padding = padding; }, false);
  });
  add_layer_row(LayerField::padding, tr("Padding"), padding_);

  activation_ = enum_combo(QStringLiteral("activation"), tr("Activation function ('linear': none)"),
                           all_activations());
  connect(activation_, &QComboBox::currentIndexChanged, this, [this] {
    const auto fn = static_cast<ActivationFn>(activation_->currentData().toInt());
    edit_layer(
        LayerField::activation, [&](LayerSpec& l) { l.activation = fn; }, false);
  });
  add_layer_row(LayerField::activation, tr("Activation"), activation_);

  use_bias_ = new QCheckBox(tr("Use bias"));
  use_bias_->setObjectName(QStringLiteral("use_bias"));
  use_bias_->setToolTip(tr("Add a trainable bias to each output unit or channel"));
  connect(use_bias_, &QCheckBox::toggled, this, [this](bool on) {
    edit_layer(
        LayerField::use_bias, [&](LayerSpec& l) { l.use_bias = on; }, false);
  });
  add_layer_row(LayerField::use_bias, QString(), use_bias_);

  rate_ = new QDoubleSpinBox;
  rate_->setObjectName(QStringLiteral("rate"));
  rate_->setToolTip(tr("Fraction of the inputs dropped during training, in [0, 1)"));
  rate_->setDecimals(3);
  rate_->setRange(0.0, 0.999);
  rate_->setSingleStep(0.05);
  rate_->setMinimumWidth(compact_spin_width());
  connect(rate_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    edit_layer(
        LayerField::rate, [&](LayerSpec& l) { l.rate = v; }, true);
  });
  connect(rate_, &QDoubleSpinBox::editingFinished, this, &PropertyPanel::end_merge_session);
  add_layer_row(LayerField::rate, tr("Rate"), rate_);

  const auto number_spin = [this](const QString& name, const QString& tooltip, LayerField field,
                                  double LayerSpec::*member) {
    auto* spin = new NumberSpinBox;
    spin->setObjectName(name);
    spin->setToolTip(tooltip);
    spin->setDecimals(12);
    spin->setRange(-1e6, 1e6);
    spin->setSingleStep(0.01);
    spin->setMinimumWidth(compact_spin_width());
    connect(spin, &QDoubleSpinBox::valueChanged, this, [this, field, member](double v) {
      edit_layer(
          field, [&](LayerSpec& l) { l.*member = v; }, true);
    });
    connect(spin, &QDoubleSpinBox::editingFinished, this, &PropertyPanel::end_merge_session);
    return spin;
  };
  scale_ = number_spin(QStringLiteral("scale"), tr("Factor the input is multiplied by"),
                       LayerField::scale, &LayerSpec::scale);
  add_layer_row(LayerField::scale, tr("Scale"), scale_);
  offset_ = number_spin(QStringLiteral("offset"), tr("Added after scaling"), LayerField::offset,
                        &LayerSpec::offset);
  add_layer_row(LayerField::offset, tr("Offset"), offset_);

  depth_multiplier_ = count_spin(QStringLiteral("depth_multiplier"),
                                 tr("Filters per input channel of the depthwise convolution"));
  connect(depth_multiplier_, &QSpinBox::valueChanged, this, [this](int v) {
    edit_layer(
        LayerField::depth_multiplier, [&](LayerSpec& l) { l.depth_multiplier = v; }, true);
  });
  add_layer_row(LayerField::depth_multiplier, tr("Depth multiplier"), depth_multiplier_);

  input_dim_ = count_spin(QStringLiteral("input_dim"),
                          tr("Vocabulary: token ids run from 0 to this minus 1"));
  connect(input_dim_, &QSpinBox::valueChanged, this, [this](int v) {
    edit_layer(
        LayerField::input_dim, [&](LayerSpec& l) { l.input_dim = v; }, true);
  });
  add_layer_row(LayerField::input_dim, tr("Vocabulary"), input_dim_);
  output_dim_ = count_spin(QStringLiteral("output_dim"), tr("Features of each token's vector"));
  connect(output_dim_, &QSpinBox::valueChanged, this, [this](int v) {
    edit_layer(
        LayerField::output_dim, [&](LayerSpec& l) { l.output_dim = v; }, true);
  });
  add_layer_row(LayerField::output_dim, tr("Output features"), output_dim_);
  sequence_length_ = count_spin(QStringLiteral("sequence_length"),
                                tr("Positions with a learned vector (at least the input's steps)"));
  connect(sequence_length_, &QSpinBox::valueChanged, this, [this](int v) {
    edit_layer(
        LayerField::sequence_length, [&](LayerSpec& l) { l.sequence_length = v; }, true);
  });
  add_layer_row(LayerField::sequence_length, tr("Positions"), sequence_length_);

  num_heads_ = count_spin(QStringLiteral("num_heads"), tr("Attention heads"));
  connect(num_heads_, &QSpinBox::valueChanged, this, [this](int v) {
    edit_layer(
        LayerField::num_heads, [&](LayerSpec& l) { l.num_heads = v; }, true);
  });
  add_layer_row(LayerField::num_heads, tr("Heads"), num_heads_);
  key_dim_ = count_spin(QStringLiteral("key_dim"), tr("Size of each head's queries and keys"));
  connect(key_dim_, &QSpinBox::valueChanged, this, [this](int v) {
    edit_layer(
        LayerField::key_dim, [&](LayerSpec& l) { l.key_dim = v; }, true);
  });
  add_layer_row(LayerField::key_dim, tr("Key size"), key_dim_);
  // 0 shows as Keras's None: the key size, the input's features.
  const auto optional_count = [this](const QString& name, const QString& tooltip) {
    QSpinBox* spin = count_spin(name, tooltip);
    spin->setMinimum(0);
    spin->setSpecialValueText(tr("default"));
    return spin;
  };
  value_dim_ = optional_count(QStringLiteral("value_dim"),
                              tr("Size of each head's values (default: the key size)"));
  connect(value_dim_, &QSpinBox::valueChanged, this, [this](int v) {
    edit_layer(
        LayerField::value_dim, [&](LayerSpec& l) { l.value_dim = v; }, true);
  });
  add_layer_row(LayerField::value_dim, tr("Value size"), value_dim_);
  attention_output_ =
      optional_count(QStringLiteral("output_shape"), tr("Output features (default: the input's)"));
  connect(attention_output_, &QSpinBox::valueChanged, this, [this](int v) {
    edit_layer(
        LayerField::attention_output, [&](LayerSpec& l) { l.output_dim = v; }, true);
  });
  add_layer_row(LayerField::attention_output, tr("Output features"), attention_output_);
  causal_ = new QCheckBox(tr("Causal mask"));
  causal_->setObjectName(QStringLiteral("use_causal_mask"));
  causal_->setToolTip(tr("Each step attends to itself and the steps before it (a decoder)"));
  connect(causal_, &QCheckBox::toggled, this, [this](bool on) {
    edit_layer(
        LayerField::causal, [&](LayerSpec& l) { l.causal = on; }, false);
  });
  add_layer_row(LayerField::causal, QString(), causal_);

  // A number >= 0 with Keras's bounds; `none` shows at the minimum of an optional one.
  const auto bounded_spin = [this](const QString& name, const QString& tooltip, LayerField field,
                                   double low, double high, double step,
                                   const std::function<void(LayerSpec&, double)>& set) {
    auto* spin = new NumberSpinBox;
    spin->setObjectName(name);
    spin->setToolTip(tooltip);
    spin->setDecimals(12);
    spin->setRange(low, high);
    spin->setSingleStep(step);
    spin->setMinimumWidth(compact_spin_width());
    connect(spin, &QDoubleSpinBox::valueChanged, this, [this, field, set](double v) {
      edit_layer(
          field, [&](LayerSpec& l) { set(l, v); }, true);
    });
    connect(spin, &QDoubleSpinBox::editingFinished, this, &PropertyPanel::end_merge_session);
    return spin;
  };
  momentum_ = bounded_spin(
      QStringLiteral("momentum"), tr("Decay of the moving mean and variance, in [0, 1]"),
      LayerField::momentum, 0.0, 1.0, 0.01, [](LayerSpec& l, double v) { l.momentum = v; });
  add_layer_row(LayerField::momentum, tr("Momentum"), momentum_);
  epsilon_ = bounded_spin(
      QStringLiteral("epsilon"), tr("Added to the variance before its square root (> 0)"),
      LayerField::epsilon, 1e-12, 1.0, 1e-4, [](LayerSpec& l, double v) { l.epsilon = v; });
  add_layer_row(LayerField::epsilon, tr("Epsilon"), epsilon_);
  const auto check = [this](const QString& name, const QString& text, const QString& tooltip,
                            LayerField field, bool LayerSpec::*member) {
    auto* box = new QCheckBox(text);
    box->setObjectName(name);
    box->setToolTip(tooltip);
    connect(box, &QCheckBox::toggled, this, [this, field, member](bool on) {
      edit_layer(
          field, [&](LayerSpec& l) { l.*member = on; }, false);
    });
    add_layer_row(field, QString(), box);
    return box;
  };
  center_ = check(QStringLiteral("center"), tr("Center (beta)"),
                  tr("Add a trainable offset beta after normalizing"), LayerField::center,
                  &LayerSpec::center);
  scale_gamma_ = check(QStringLiteral("scale_gamma"), tr("Scale (gamma)"),
                       tr("Multiply by a trainable gamma after normalizing"),
                       LayerField::scale_gamma, &LayerSpec::scale_gamma);

  // ReLU's max_value: none (Keras's None) at the spin box's minimum.
  max_value_ = bounded_spin(QStringLiteral("max_value"),
                            tr("The output's ceiling (6 gives ReLU6); none: unbounded"),
                            LayerField::max_value, -1.0, 1e6, 1.0, [](LayerSpec& l, double v) {
                              l.max_value = v < 0 ? std::numeric_limits<double>::infinity() : v;
                            });
  max_value_->setSpecialValueText(tr("none"));
  add_layer_row(LayerField::max_value, tr("Max value"), max_value_);
  negative_slope_ = bounded_spin(QStringLiteral("negative_slope"),
                                 tr("Slope below the threshold (0: plain ReLU; leaky ReLU > 0)"),
                                 LayerField::negative_slope, 0.0, 1e6, 0.01,
                                 [](LayerSpec& l, double v) { l.negative_slope = v; });
  add_layer_row(LayerField::negative_slope, tr("Negative slope"), negative_slope_);
  threshold_ = bounded_spin(
      QStringLiteral("threshold"), tr("Values at or below it are cut (or scaled by the slope)"),
      LayerField::threshold, 0.0, 1e6, 0.1, [](LayerSpec& l, double v) { l.threshold = v; });
  add_layer_row(LayerField::threshold, tr("Threshold"), threshold_);

  // ZeroPadding2D: rows above and below, columns left and right.
  zero_padding_row_ = new QWidget;
  auto* pad_row = new QHBoxLayout(zero_padding_row_);
  pad_row->setContentsMargins(0, 0, 0, 0);
  const std::array<QString, 4> pad_tips = {tr("Rows of zeros above"), tr("Rows of zeros below"),
                                           tr("Columns of zeros on the left"),
                                           tr("Columns of zeros on the right")};
  const std::array<int Pad2D::*, 4> pad_members = {&Pad2D::top, &Pad2D::bottom, &Pad2D::left,
                                                   &Pad2D::right};
  for (std::size_t i = 0; i < zero_padding_.size(); ++i) {
    auto* spin = new QSpinBox;
    spin->setObjectName(QStringLiteral("zero_padding.%1").arg(i));
    spin->setRange(0, kMaxCount);
    spin->setToolTip(pad_tips[i]);
    spin->setMinimumWidth(compact_spin_width() * 2 / 3);
    connect(spin, &QSpinBox::editingFinished, this, &PropertyPanel::end_merge_session);
    connect(spin, &QSpinBox::valueChanged, this, [this, member = pad_members[i]](int v) {
      edit_layer(
          LayerField::zero_padding, [&](LayerSpec& l) { l.zero_padding.*member = v; }, true);
    });
    zero_padding_[i] = spin;
    pad_row->addWidget(spin);
  }
  add_layer_row(LayerField::zero_padding, tr("Pad t/b/l/r"), zero_padding_row_);

  // Reshape's target shape, "4, 4, 8" (one -1 is inferred); a shape that does not parse is
  // refused and the field shows the layer's again.
  target_shape_ = new QLineEdit;
  target_shape_->setObjectName(QStringLiteral("target_shape"));
  target_shape_->setToolTip(
      tr("The shape per sample, 1 to 3 sizes separated by commas; one may be -1 (inferred)"));
  connect(target_shape_, &QLineEdit::editingFinished, this, [this] {
    std::vector<std::int64_t> shape;
    bool ok = true;
    for (const QString& part : target_shape_->text().split(QLatin1Char(','))) {
      const qlonglong v = part.trimmed().toLongLong(&ok);
      if (!ok || (v < 1 && v != -1)) {
        ok = false;
        break;
      }
      shape.push_back(v);
    }
    const bool valid = ok && !shape.empty() && shape.size() <= 3 &&
                       std::count(shape.begin(), shape.end(), -1) <= 1;
    if (!valid) {
      refresh();
      QToolTip::showText(target_shape_->mapToGlobal(QPoint(0, target_shape_->height())),
                         tr("A target shape is 1 to 3 sizes >= 1 separated by commas, at most "
                            "one of them -1."),
                         target_shape_);
      return;
    }
    edit_layer(
        LayerField::target_shape, [&](LayerSpec& l) { l.target_shape = shape; }, false);
  });
  add_layer_row(LayerField::target_shape, tr("Target shape"), target_shape_);

  // Normalization's statistics: "0.485, 0.456, 0.406" (one value for every channel, or one per
  // channel); empty, both: mean 0 and variance 1. What does not parse is refused.
  const auto values_edit = [this](const QString& name, const QString& tooltip, LayerField field,
                                  std::vector<double> LayerSpec::*member, bool non_negative) {
    auto* edit = new QLineEdit;
    edit->setObjectName(name);
    edit->setToolTip(tooltip);
    connect(edit, &QLineEdit::editingFinished, this, [this, edit, field, member, non_negative] {
      std::vector<double> values;
      bool ok = true;
      if (!edit->text().trimmed().isEmpty()) {
        for (const QString& part : edit->text().split(QLatin1Char(','))) {
          // As the field shows them (QString::number): the C locale's digits.
          const double parsed = QLocale::c().toDouble(part.trimmed(), &ok);
          if (!ok || !std::isfinite(parsed) || (non_negative && parsed < 0)) {
            ok = false;
            break;
          }
          values.push_back(parsed);
        }
      }
      if (!ok) {
        refresh();
        QToolTip::showText(edit->mapToGlobal(QPoint(0, edit->height())),
                           tr("Numbers separated by commas (one, or one per channel)%1.")
                               .arg(non_negative ? tr(", each 0 or more") : QString()),
                           edit);
        return;
      }
      edit_layer(
          field, [&](LayerSpec& l) { l.*member = values; }, false);
    });
    add_layer_row(field, field == LayerField::mean ? tr("Mean") : tr("Variance"), edit);
    return edit;
  };
  mean_ = values_edit(QStringLiteral("mean"),
                      tr("Subtracted per channel: one value, or one per channel; empty: 0"),
                      LayerField::mean, &LayerSpec::mean, false);
  variance_ = values_edit(QStringLiteral("variance"),
                          tr("Divided by its square root per channel: one value, or one per "
                             "channel; empty: 1"),
                          LayerField::variance, &LayerSpec::variance, true);

  keepdims_ = check(QStringLiteral("keepdims"), tr("Keep dims (1×1×C)"),
                    tr("Keep the pooled height and width as 1x1 axes"), LayerField::keepdims,
                    &LayerSpec::keepdims);

  axis_ = new QSpinBox;
  axis_->setObjectName(QStringLiteral("axis"));
  axis_->setRange(-3, 3);
  axis_->setToolTip(
      tr("The axis to join along, counted as Keras counts it with the batch "
         "(-1: the last, the channels; 0, the batch, is not allowed)"));
  axis_->setMinimumWidth(compact_spin_width());
  connect(axis_, &QSpinBox::valueChanged, this, [this](int v) {
    edit_layer(
        LayerField::axis, [&](LayerSpec& l) { l.axis = v; }, false);
  });
  add_layer_row(LayerField::axis, tr("Axis"), axis_);

  dtype_ = make_combo(QStringLiteral("dtype"),
                      tr("'float32' keeps this layer in float32 under a mixed policy (Keras's "
                         "idiom for the final softmax); 'bfloat16' keeps it out of FP8 under "
                         "mixed_float8"));
  dtype_->addItem(QString(), 0);
  dtype_->addItem(QStringLiteral("float32"), 1);
  dtype_->addItem(QStringLiteral("bfloat16 (out of FP8)"), 2);
  connect(dtype_, &QComboBox::currentIndexChanged, this, [this] {
    const int choice = dtype_->currentData().toInt();
    edit_layer(
        LayerField::dtype,
        [&](LayerSpec& l) {
          l.force_float32 = choice == 1;
          l.force_bfloat16 = choice == 2;
        },
        false);
  });
  add_layer_row(LayerField::dtype, tr("Dtype"), dtype_);
}

void PropertyPanel::refresh() {
  const QScopedValueRollback loading(loading_, true);
  if (layer_ >= static_cast<int>(doc_->spec().layers.size())) layer_ = -1;
  refresh_model();
  refresh_layer();
}

void PropertyPanel::refresh_model() {
  const ModelSpec& spec = doc_->spec();
  show_text(model_name_, QString::fromStdString(spec.name));
  const int rank = static_cast<int>(spec.input_shape.size());
  show_data(input_kind_, rank == 1 || rank == 2 ? rank : kImageRank);
  for (std::size_t i = 0; i < input_dims_.size(); ++i) {
    const bool used = i < spec.input_shape.size();
    input_dims_[i]->setVisible(used);
    if (used) show_int(input_dims_[i], static_cast<int>(spec.input_shape[i]));
  }
  show_data(loss_, static_cast<int>(spec.loss));
}

void PropertyPanel::refresh_layer() {
  const bool selected = layer_ >= 0;
  layer_form_->setRowVisible(no_layer_, !selected);
  const LayerSpec layer =
      selected ? doc_->spec().layers[static_cast<std::size_t>(layer_)] : LayerSpec{};
  for (const auto& [field, editor] : layer_rows_)
    layer_form_->setRowVisible(editor, selected && has_field(layer.type, field));
  if (!selected) {
    layer_box_->setTitle(tr("Layer"));
    return;
  }
  layer_box_->setTitle(tr("Layer %1: %2").arg(layer_).arg(text_of(to_string(layer.type))));

  show_text(name_, QString::fromStdString(layer.name));
  show_int(units_, layer.units);
  show_int(filters_, layer.filters);
  for (auto [editor, size] :
       {std::pair{&kernel_size_, layer.kernel_size}, std::pair{&strides_, layer.strides},
        std::pair{&pool_size_, layer.pool_size}}) {
    show_int(editor->h, size.h);
    show_int(editor->w, size.w);
  }
  show_data(padding_, static_cast<int>(layer.padding));
  show_data(activation_, static_cast<int>(layer.activation));
  use_bias_->setChecked(layer.use_bias);
  show_double(rate_, layer.rate);
  show_double(scale_, layer.scale);
  show_double(offset_, layer.offset);
  show_int(depth_multiplier_, layer.depth_multiplier);
  show_int(input_dim_, layer.input_dim);
  show_int(output_dim_, layer.output_dim);
  show_int(sequence_length_, layer.sequence_length);
  show_int(num_heads_, layer.num_heads);
  show_int(key_dim_, layer.key_dim);
  show_int(value_dim_, layer.value_dim);
  show_int(attention_output_, layer.output_dim);
  causal_->setChecked(layer.causal);
  show_double(momentum_, layer.momentum);
  show_double(epsilon_, layer.epsilon);
  center_->setChecked(layer.center);
  scale_gamma_->setChecked(layer.scale_gamma);
  show_double(max_value_, std::isinf(layer.max_value) ? -1.0 : layer.max_value);
  show_double(negative_slope_, layer.negative_slope);
  show_double(threshold_, layer.threshold);
  show_int(zero_padding_[0], layer.zero_padding.top);
  show_int(zero_padding_[1], layer.zero_padding.bottom);
  show_int(zero_padding_[2], layer.zero_padding.left);
  show_int(zero_padding_[3], layer.zero_padding.right);
  QStringList shape;
  for (std::int64_t v : layer.target_shape) shape << QString::number(v);
  show_text(target_shape_, shape.join(QStringLiteral(", ")));
  keepdims_->setChecked(layer.keepdims);
  for (auto [edit, values] :
       {std::pair{mean_, &layer.mean}, std::pair{variance_, &layer.variance}}) {
    QStringList parts;
    for (const double v : *values) parts << QString::number(v, 'g', 12);
    show_text(edit, parts.join(QStringLiteral(", ")));
  }
  show_int(axis_, layer.axis);
  // What "the policy's default" means right now, e.g. float16 under mixed_float16.
  dtype_->setItemText(
      0, tr("Policy default (%1)").arg(text_of(to_string(compute_dtype(doc_->policy(), false)))));
  show_data(dtype_, layer.force_float32 ? 1 : layer.force_bfloat16 ? 2 : 0);
}

void PropertyPanel::edit_layer(LayerField field, const std::function<void(LayerSpec&)>& change,
                               bool merge) {
  if (loading_ || layer_ < 0 || layer_ >= static_cast<int>(doc_->spec().layers.size())) return;
  const LayerSpec& before = doc_->spec().layers[static_cast<std::size_t>(layer_)];
  LayerSpec after = before;
  change(after);
  if (after == before) return;
  doc_->undo_stack()->push(
      new EditLayerCommand(doc_, layer_, field, std::move(after), merge ? merge_session_ : 0));
}

void PropertyPanel::edit_model(ModelField field, const std::function<void(ModelHeader&)>& change,
                               bool merge) {
  if (loading_) return;
  const ModelHeader before = doc_->header();
  ModelHeader after = before;
  change(after);
  if (after == before) return;
  doc_->undo_stack()->push(
      new EditModelCommand(doc_, field, std::move(after), merge ? merge_session_ : 0));
}

}  // namespace mixlab::ui

// The moc output compiled here rather than in the target's shared mocs_compilation.cpp, which
// would tie this file to every other moc'd header of mixlab_ui.
#include "moc_property_panel.cpp"
