// Edits the model's own fields (name, input shape, loss) and the selected layer's fields, each
// with the widget its values need. Every change is an undo command; spin-box changes of one
// field merge until the spin box finishes editing (Enter, focus leaves), so a drag is one step.
// The widgets follow the document on every change, undo and redo included.
//
// Widgets carry their field's Keras name as objectName ("units", "kernel_size.h", "input.0"),
// so tests and style sheets can find them.
#pragma once

#include <QWidget>
#include <array>
#include <functional>
#include <utility>
#include <vector>

#include "ui/editor/layer_commands.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace mixlab::ui {

class ModelDocument;

class PropertyPanel : public QWidget {
  Q_OBJECT

 public:
  explicit PropertyPanel(ModelDocument* doc, QWidget* parent = nullptr);

  // The layer whose fields are shown; -1 shows only the model's fields.
  void set_current_layer(int index);
  int current_layer() const;

  // As narrow as the fields allow: the panel shares the window with the canvas and the table.
  QSize sizeHint() const override;

 private:
  struct Size2Editor {
    QWidget* row = nullptr;
    QSpinBox* h = nullptr;
    QSpinBox* w = nullptr;
  };

  void build_model_group();
  void build_layer_group();
  QSpinBox* count_spin(const QString& name, const QString& tooltip);
  Size2Editor size2_editor(const QString& name, LayerField field, Size2 LayerSpec::*member,
                           const QString& tooltip);
  void add_layer_row(LayerField field, const QString& label, QWidget* editor);

  void refresh();
  void refresh_model();
  void refresh_layer();
  void edit_layer(LayerField field, const std::function<void(LayerSpec&)>& change, bool merge);
  void edit_model(ModelField field, const std::function<void(ModelHeader&)>& change, bool merge);
  // Ends the current spin-box editing session: the next edit is a new undo step.
  void end_merge_session();

  ModelDocument* doc_;
  int layer_ = -1;
  int merge_session_ = 1;
  bool loading_ = false;  // true while refresh() writes into the widgets

  QGroupBox* model_box_ = nullptr;
  QLineEdit* model_name_ = nullptr;
  QComboBox* input_kind_ = nullptr;
  std::array<QSpinBox*, 3> input_dims_{};
  QComboBox* loss_ = nullptr;

  QGroupBox* layer_box_ = nullptr;
  QFormLayout* layer_form_ = nullptr;
  QLabel* no_layer_ = nullptr;
  std::vector<std::pair<LayerField, QWidget*>> layer_rows_;
  QLineEdit* name_ = nullptr;
  QSpinBox* units_ = nullptr;
  QSpinBox* filters_ = nullptr;
  Size2Editor kernel_size_;
  Size2Editor strides_;
  Size2Editor pool_size_;
  QComboBox* padding_ = nullptr;
  QComboBox* activation_ = nullptr;
  QCheckBox* use_bias_ = nullptr;
  QDoubleSpinBox* rate_ = nullptr;
  QDoubleSpinBox* scale_ = nullptr;
  QDoubleSpinBox* offset_ = nullptr;
  QSpinBox* depth_multiplier_ = nullptr;
  QSpinBox* input_dim_ = nullptr;
  QSpinBox* output_dim_ = nullptr;
  QSpinBox* sequence_length_ = nullptr;
  QSpinBox* num_heads_ = nullptr;
  QSpinBox* key_dim_ = nullptr;
  QSpinBox* value_dim_ = nullptr;         // 0: key_dim
  QSpinBox* attention_output_ = nullptr;  // 0: the input's features
  QCheckBox* causal_ = nullptr;
  QDoubleSpinBox* momentum_ = nullptr;
  QDoubleSpinBox* epsilon_ = nullptr;
  QCheckBox* center_ = nullptr;
  QCheckBox* scale_gamma_ = nullptr;
  QDoubleSpinBox* max_value_ = nullptr;
  QDoubleSpinBox* negative_slope_ = nullptr;
  QDoubleSpinBox* threshold_ = nullptr;
  QWidget* zero_padding_row_ = nullptr;
  std::array<QSpinBox*, 4> zero_padding_{};
  QLineEdit* target_shape_ = nullptr;
  QCheckBox* keepdims_ = nullptr;
  QLineEdit* mean_ = nullptr;
  QLineEdit* variance_ = nullptr;
  QSpinBox* axis_ = nullptr;
  QComboBox* dtype_ = nullptr;
};

}  // namespace mixlab::ui
