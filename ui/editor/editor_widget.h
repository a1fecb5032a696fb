// The layer-stack editor: the palette above the property panel | the model as a diagram
// (ModelCanvas) beside the stack table, with totals and the validation message below, in
// splitters; and the edit actions that work on them. The canvas and the table share one
// selection.
#pragma once

#include <QList>
#include <QWidget>

#include "engine/ops/optimizer.h"
#include "engine/spec/model_spec.h"

class QAbstractItemView;
class QAction;
class QLabel;
class QLineEdit;
class QScrollArea;
class QTableView;

namespace mixlab::ui {

class LayerPalette;
class LayerStackModel;
class ModelCanvas;
class ModelDocument;
class PropertyPanel;

class EditorWidget : public QWidget {
  Q_OBJECT

 public:
  explicit EditorWidget(ModelDocument* doc, QWidget* parent = nullptr);

  // In this order: Add (after the selected layer), Insert (before it), Duplicate, Remove
  // (Delete), Move up (Alt+Up), Move down (Alt+Down), Undo (Ctrl+Z), Redo (Ctrl+Shift+Z).
  // Remove and the moves react to their keys while the stack has focus; the others anywhere in
  // the editor. Each has an objectName: add_layer, insert_layer, duplicate_layer, remove_layer,
  // move_layer_up, move_layer_down, undo, redo.
  QList<QAction*> edit_actions() const;

  QAbstractItemView* stack_view() const;
  ModelCanvas* canvas() const;
  LayerStackModel* stack_model() const;
  LayerPalette* palette() const;
  PropertyPanel* properties() const;

  // The selected layer, or -1.
  int current_layer() const;
  void select_layer(int index);

  // Find (Ctrl+F): the box above the canvas; typing selects the first layer whose name or type
  // contains the text (ignoring case), Enter the next one. False when none does.
  QLineEdit* find_box() const { return find_; }
  bool find_layer(const QString& text, bool next);
  // The canvas's last refusal ("'dense_2' would read nothing..."), until the next edit.
  QString notice_text() const;

  // The batch size and optimizer the memory for training is shown at (the run panel's).
  void set_training(int batch_size, const OptimizerConfig& optimizer);
  QString totals_text() const;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  enum class Placement { after_selection, before_selection };

  QAction* make_action(const QString& name, const QString& text, const QString& tooltip);
  void create_actions();
  QWidget* build_stack_area();
  QWidget* build_canvas_area();
  void add_layer(LayerType type, Placement placement);
  void duplicate_layer();
  void remove_layer();
  void move_layer(int delta);
  void update_actions();
  void update_summary();
  // The table's "Inputs" column: shown for a graph, hidden for a chain.
  void show_inputs_column(bool show);
  // Keeps the property panel's area as wide as the panel's minimum (which changes with the
  // layer's fields), so the splitter never clips it.
  void update_properties_width();

  ModelDocument* doc_;
  LayerStackModel* model_;
  QTableView* view_ = nullptr;
  ModelCanvas* canvas_ = nullptr;
  LayerPalette* palette_;
  PropertyPanel* properties_;
  QScrollArea* properties_area_ = nullptr;
  QLabel* totals_ = nullptr;
  QLabel* message_ = nullptr;
  QLabel* notice_ = nullptr;
  QLineEdit* find_ = nullptr;
  int batch_size_ = 32;
  OptimizerConfig optimizer_ = default_optimizer(OptimizerKind::adam);

  QAction* add_ = nullptr;
  QAction* insert_ = nullptr;
  QAction* duplicate_ = nullptr;
  QAction* remove_ = nullptr;
  QAction* move_up_ = nullptr;
  QAction* move_down_ = nullptr;
  QAction* undo_ = nullptr;
  QAction* redo_ = nullptr;
};

}  // namespace mixlab::ui
