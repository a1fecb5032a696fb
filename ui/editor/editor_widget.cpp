#include "ui/editor/editor_widget.h"

#include "engine/plan/execution_plan.h"

#include <QAction>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QTableView>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>
#include <QVBoxLayout>

#include "ui/editor/layer_commands.h"
#include "ui/editor/layer_palette.h"
#include "ui/editor/layer_stack_model.h"
#include "ui/editor/layer_text.h"
#include "ui/editor/model_canvas.h"
#include "ui/editor/model_document.h"
#include "ui/editor/property_panel.h"

namespace mixlab::ui {
namespace {

QList<QKeySequence> redo_shortcuts() {
  // Ctrl+Shift+Z everywhere, plus the platform's own (Ctrl+Y on Windows). A sequence listed
  // twice would make the shortcut ambiguous, and then it would do nothing.
  QList<QKeySequence> keys = {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z)};
  for (const QKeySequence& key : QKeySequence::keyBindings(QKeySequence::Redo))
    if (!keys.contains(key)) keys << key;
  return keys;
}

}  // namespace

EditorWidget::EditorWidget(ModelDocument* doc, QWidget* parent)
    : QWidget(parent),
      doc_(doc),
      model_(new LayerStackModel(doc, this)),
      palette_(new LayerPalette),
      properties_(new PropertyPanel(doc)) {
  create_actions();

  // The palette as wide as its longest entry, not QListWidget's default 256 px.
  palette_->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
  auto* palette_area = new QWidget;
  auto* palette_layout = new QVBoxLayout(palette_area);
  palette_layout->setContentsMargins(0, 0, 0, 0);
  palette_layout->addWidget(palette_, 1);
  auto* add_button = new QToolButton;
  add_button->setDefaultAction(add_);
  add_button->setToolButtonStyle(Qt::ToolButtonTextOnly);
  palette_layout->addWidget(add_button);

  // The panel scrolls vertically only: the area is never narrower than the panel's minimum, so
  // the splitter cannot clip it (a horizontal scroll bar would hide the fields' right half).
  properties_area_ = new QScrollArea;
  properties_area_->setObjectName(QStringLiteral("properties_area"));
  properties_area_->setWidget(properties_);
  properties_area_->setWidgetResizable(true);
  properties_area_->setFrameShape(QFrame::NoFrame);
  properties_area_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  properties_->installEventFilter(this);
  update_properties_width();

  // The palette above the property panel, as Neural Network Console has them: the canvas and
  // the table get the width (the window fits a 1366 px screen with the Run dock open).
  auto* left = new QSplitter(Qt::Vertical);
  left->setObjectName(QStringLiteral("palette_properties_splitter"));
  left->addWidget(palette_area);
  left->addWidget(properties_area_);
  left->setStretchFactor(0, 0);
  left->setStretchFactor(1, 1);
  left->setChildrenCollapsible(false);

  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->setObjectName(QStringLiteral("editor_splitter"));
  splitter->addWidget(left);
  splitter->addWidget(build_stack_area());
  splitter->setStretchFactor(0, 0);
  splitter->setStretchFactor(1, 1);
  splitter->setChildrenCollapsible(false);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);

  connect(palette_, &LayerPalette::add_requested, this,
          [this](LayerType type) { add_layer(type, Placement::after_selection); });
  connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    if (properties_->current_layer() != current_layer())
      properties_->set_current_layer(current_layer());
    if (canvas_->current_layer() != current_layer()) canvas_->select_layer(current_layer());
    update_actions();
  });
  // A block selected on the canvas selects its row, and the row the panel.
  connect(canvas_, &ModelCanvas::layer_selected, this, [this](int index) {
    if (index != current_layer()) select_layer(index);
  });
  // The selection follows the edit, undo and redo included, so the user sees what changed.
  // (The model's handlers ran first: it connected to the document before these.)
  connect(doc_, &ModelDocument::layer_inserted, this, &EditorWidget::select_layer);
  connect(doc_, &ModelDocument::layer_removed, this, [this](int index) {
    select_layer(std::min(index, static_cast<int>(doc_->spec().layers.size()) - 1));
  });
  connect(doc_, &ModelDocument::layer_moved, this,
          [this](int /*from*/, int to) { select_layer(to); });
  connect(doc_, &ModelDocument::layer_changed, this, [this](int index) {
    if (index != current_layer()) select_layer(index);
  });
  connect(doc_, &ModelDocument::model_reset, this, [this] { select_layer(-1); });
  connect(doc_, &ModelDocument::changed, this, [this] {
    update_actions();
    update_summary();
    show_inputs_column(!canvas_->is_chain());
  });
  show_inputs_column(!canvas_->is_chain());
  update_actions();
  update_summary();
}

void EditorWidget::update_properties_width() {
  properties_area_->setMinimumWidth(properties_->minimumSizeHint().width() +
                                    properties_area_->verticalScrollBar()->sizeHint().width());
}

bool EditorWidget::eventFilter(QObject* watched, QEvent* event) {
  if (watched == properties_ && event->type() == QEvent::LayoutRequest) update_properties_width();
  return QWidget::eventFilter(watched, event);
}

QWidget* EditorWidget::build_stack_area() {
  view_ = new QTableView;
  view_->setObjectName(QStringLiteral("layer_stack"));
  view_->setModel(model_);
  view_->setToolTip(
      tr("The layer stack, input at the top. Drag a row to move the layer; "
         "Alt+Up / Alt+Down move the selected layer, Delete removes it."));
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->setDragEnabled(true);
  view_->setAcceptDrops(true);
  view_->setDropIndicatorShown(true);
  view_->setDragDropMode(QAbstractItemView::InternalMove);
  view_->setDefaultDropAction(Qt::MoveAction);
  view_->setDragDropOverwriteMode(false);
  view_->setWordWrap(false);
  view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  view_->horizontalHeader()->setSectionResizeMode(LayerStackModel::Layer, QHeaderView::Stretch);
  // A merge's inputs are long ("conv2_block1_3_bn, conv2_block1_0_bn"): elided, the tooltip
  // has them all, and the user may widen the column. A chain's layers each read the one above:
  // there the column says nothing and stays hidden (update_summary).
  view_->horizontalHeader()->setSectionResizeMode(LayerStackModel::Inputs,
                                                  QHeaderView::Interactive);
  view_->horizontalHeader()->resizeSection(LayerStackModel::Inputs, 84);
  // Remove and the moves act on the stack only: elsewhere Delete edits text and Alt+Down opens
  // combo boxes.
  view_->addActions({remove_, move_up_, move_down_});

  auto* toolbar = new QToolBar;
  toolbar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  toolbar->addActions({add_, insert_, duplicate_, remove_});
  toolbar->addSeparator();
  toolbar->addActions({move_up_, move_down_});
  toolbar->addSeparator();
  toolbar->addActions({undo_, redo_});

  totals_ = new QLabel;
  totals_->setObjectName(QStringLiteral("totals"));
  totals_->setToolTip(
      tr("Totals of the whole model, per sample; activations in the dtypes the "
         "precision policy stores them in. Below: the memory training needs at the Run "
         "panel's batch size and optimizer (the execution plan's buffers; library workspaces "
         "come on top)"));
  totals_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Wrapped: one line of totals is wider than the editor at 1366 px.
  totals_->setWordWrap(true);
  message_ = new QLabel;
  message_->setObjectName(QStringLiteral("validation_message"));
  message_->setToolTip(tr("Why the model cannot be trained as it is"));
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QPalette red = message_->palette();
  red.setColor(QPalette::WindowText, QColor(160, 0, 0));
  message_->setPalette(red);

  // The diagram beside the table; the table takes what is left over.
  auto* views = new QSplitter(Qt::Horizontal);
  views->setObjectName(QStringLiteral("canvas_table_splitter"));
  views->addWidget(build_canvas_area());
  views->addWidget(view_);
  views->setStretchFactor(0, 0);
  views->setStretchFactor(1, 1);
  views->setChildrenCollapsible(false);

  auto* area = new QWidget;
  auto* layout = new QVBoxLayout(area);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(toolbar);
  layout->addWidget(views, 1);
  layout->addWidget(totals_);
  layout->addWidget(message_);
  return area;
}

QWidget* EditorWidget::build_canvas_area() {
  canvas_ = new ModelCanvas(doc_);
  // Delete and Alt+Up / Alt+Down act on the selected block as on the selected row.
  canvas_->addActions({remove_, move_up_, move_down_});
  auto* toolbar = new QToolBar;
  toolbar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  toolbar->addActions(canvas_->view_actions());
  // The canvas's width is its blocks' (the table gets the rest): the toolbar folds what does
  // not fit into its extension menu rather than widen the area.
  toolbar->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
  find_ = new QLineEdit;
  find_->setObjectName(QStringLiteral("find_layer"));
  find_->setPlaceholderText(tr("Find layer (Ctrl+F)"));
  find_->setClearButtonEnabled(true);
  find_->setToolTip(
      tr("Selects the first layer whose name or type contains the text; Enter "
         "goes to the next one"));
  connect(find_, &QLineEdit::textEdited, this,
          [this](const QString& text) { find_layer(text, false); });
  connect(find_, &QLineEdit::returnPressed, this, [this] { find_layer(find_->text(), true); });
  auto* find = new QAction(tr("Find layer"), this);
  find->setObjectName(QStringLiteral("find_layer_action"));
  find->setShortcut(QKeySequence::Find);
  find->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  connect(find, &QAction::triggered, this, [this] {
    find_->setFocus(Qt::ShortcutFocusReason);
    find_->selectAll();
  });
  addAction(find);
  // Why the canvas refused an edit, until the next change of the model.
  notice_ = new QLabel;
  notice_->setObjectName(QStringLiteral("canvas_notice"));
  notice_->setWordWrap(true);
  notice_->setContentsMargins(6, 2, 6, 2);
  notice_->hide();
  connect(canvas_, &ModelCanvas::notice, this, [this](const QString& text) {
    notice_->setText(text);
    notice_->show();
  });
  connect(doc_, &ModelDocument::changed, notice_, &QLabel::hide);
  auto* area = new QWidget;
  auto* layout = new QVBoxLayout(area);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(toolbar);
  layout->addWidget(find_);
  layout->addWidget(notice_);
  layout->addWidget(canvas_, 1);
  return area;
}

QAction* EditorWidget::make_action(const QString& name, const QString& text,
                                   const QString& tooltip) {
  auto* action = new QAction(text, this);
  action->setObjectName(name);
  action->setToolTip(tooltip);
  action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  return action;
}

void EditorWidget::create_actions() {
  add_ = make_action(QStringLiteral("add_layer"), tr("&Add"),
                     tr("Add the palette's layer type after the selected layer"));
  connect(add_, &QAction::triggered, this,
          [this] { add_layer(palette_->current_type(), Placement::after_selection); });
  insert_ = make_action(QStringLiteral("insert_layer"), tr("&Insert"),
                        tr("Insert the palette's layer type before the selected layer (Ins)"));
  insert_->setShortcut(QKeySequence(Qt::Key_Insert));
  connect(insert_, &QAction::triggered, this,
          [this] { add_layer(palette_->current_type(), Placement::before_selection); });
  duplicate_ = make_action(QStringLiteral("duplicate_layer"), tr("D&uplicate"),
                           tr("Insert a copy of the selected layer after it (Ctrl+D)"));
  duplicate_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D));
  connect(duplicate_, &QAction::triggered, this, &EditorWidget::duplicate_layer);
  remove_ = make_action(QStringLiteral("remove_layer"), tr("&Remove"),
                        tr("Remove the selected layer (Delete)"));
  remove_->setShortcut(QKeySequence::Delete);
  remove_->setShortcutContext(Qt::WidgetShortcut);
  connect(remove_, &QAction::triggered, this, &EditorWidget::remove_layer);
  move_up_ = make_action(QStringLiteral("move_layer_up"), tr("Move &up"),
                         tr("Move the selected layer up (Alt+Up)"));
  move_up_->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Up));
  move_up_->setShortcutContext(Qt::WidgetShortcut);
  connect(move_up_, &QAction::triggered, this, [this] { move_layer(-1); });
  move_down_ = make_action(QStringLiteral("move_layer_down"), tr("Move &down"),
                           tr("Move the selected layer down (Alt+Down)"));
  move_down_->setShortcut(QKeySequence(Qt::ALT | Qt::Key_Down));
  move_down_->setShortcutContext(Qt::WidgetShortcut);
  connect(move_down_, &QAction::triggered, this, [this] { move_layer(+1); });

  // Fixed texts keep the toolbar still; the tooltip says what would be undone ("Undo Add
  // Conv2D"), as QUndoStack::createUndoAction's text would.
  QUndoStack* stack = doc_->undo_stack();
  undo_ = make_action(QStringLiteral("undo"), tr("&Undo"), {});
  undo_->setShortcut(QKeySequence::Undo);
  connect(undo_, &QAction::triggered, stack, &QUndoStack::undo);
  redo_ = make_action(QStringLiteral("redo"), tr("&Redo"), {});
  redo_->setShortcuts(redo_shortcuts());
  connect(redo_, &QAction::triggered, stack, &QUndoStack::redo);
  const auto update_undo = [this, stack] {
    undo_->setEnabled(stack->canUndo());
    undo_->setToolTip(stack->canUndo() ? tr("Undo %1 (Ctrl+Z)").arg(stack->undoText())
                                       : tr("Nothing to undo (Ctrl+Z)"));
    redo_->setEnabled(stack->canRedo());
    redo_->setToolTip(stack->canRedo() ? tr("Redo %1 (Ctrl+Shift+Z)").arg(stack->redoText())
                                       : tr("Nothing to redo (Ctrl+Shift+Z)"));
  };
  connect(stack, &QUndoStack::indexChanged, this, update_undo);
  connect(stack, &QUndoStack::cleanChanged, this, update_undo);
  update_undo();

  addActions({add_, insert_, duplicate_, undo_, redo_});
}

QList<QAction*> EditorWidget::edit_actions() const {
  return {add_, insert_, duplicate_, remove_, move_up_, move_down_, undo_, redo_};
}

QAbstractItemView* EditorWidget::stack_view() const {
  return view_;
}
ModelCanvas* EditorWidget::canvas() const {
  return canvas_;
}
LayerStackModel* EditorWidget::stack_model() const {
  return model_;
}
LayerPalette* EditorWidget::palette() const {
  return palette_;
}
PropertyPanel* EditorWidget::properties() const {
  return properties_;
}

int EditorWidget::current_layer() const {
  const QModelIndexList rows = view_->selectionModel()->selectedRows();
  return rows.isEmpty() ? -1 : rows.first().row();
}

void EditorWidget::select_layer(int index) {
  QItemSelectionModel* selection = view_->selectionModel();
  if (index < 0 || index >= model_->rowCount()) {
    selection->clear();
  } else {
    selection->setCurrentIndex(model_->index(index, 0),
                               QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    view_->scrollTo(model_->index(index, 0));
  }
  // A model reset clears the selection without selectionChanged: tell the panel and the canvas
  // here too.
  if (properties_->current_layer() != current_layer())
    properties_->set_current_layer(current_layer());
  if (canvas_->current_layer() != current_layer()) canvas_->select_layer(current_layer());
  update_actions();
}

void EditorWidget::show_inputs_column(bool show) {
  if (show == !view_->isColumnHidden(LayerStackModel::Inputs)) return;
  view_->setColumnHidden(LayerStackModel::Inputs, !show);
  // With the column the table is wider than its share of a small screen: the layers keep a
  // readable width and the table scrolls sideways, rather than squeeze them to "A…".
  QHeaderView* header = view_->horizontalHeader();
  header->setSectionResizeMode(LayerStackModel::Layer,
                               show ? QHeaderView::Interactive : QHeaderView::Stretch);
  if (show) header->resizeSection(LayerStackModel::Layer, 170);
}

QString EditorWidget::notice_text() const {
  return notice_->isHidden() ? QString() : notice_->text();
}

bool EditorWidget::find_layer(const QString& text, bool next) {
  const std::vector<LayerSpec>& layers = doc_->spec().layers;
  const int count = static_cast<int>(layers.size());
  const QString wanted = text.trimmed();
  bool found = false;
  if (!wanted.isEmpty() && count > 0) {
    // From the selected layer (after it for "next"), round to the start.
    const int start = std::max(0, current_layer() + (next ? 1 : 0));
    for (int k = 0; k < count && !found; ++k) {
      const int i = (start + k) % count;
      const LayerSpec& layer = layers[static_cast<std::size_t>(i)];
      if (QString::fromStdString(layer.name).contains(wanted, Qt::CaseInsensitive) ||
          QString::fromUtf8(to_string(layer.type)).contains(wanted, Qt::CaseInsensitive)) {
        select_layer(i);
        found = true;
      }
    }
  }
  // No match shows in the box, as browsers' find bars do.
  find_->setStyleSheet(
      found || wanted.isEmpty() ? QString() : QStringLiteral("QLineEdit { background: #ffdede; }"));
  return found;
}

void EditorWidget::add_layer(LayerType type, Placement placement) {
  const int selected = current_layer();
  const int count = static_cast<int>(doc_->spec().layers.size());
  int index = 0;
  if (placement == Placement::after_selection)
    index = selected < 0 ? count : selected + 1;
  else
    index = selected < 0 ? 0 : selected;
  doc_->undo_stack()->push(new InsertLayerCommand(doc_, index, default_layer(type)));
}

void EditorWidget::duplicate_layer() {
  const int selected = current_layer();
  if (selected >= 0) doc_->undo_stack()->push(new DuplicateLayerCommand(doc_, selected));
}

void EditorWidget::remove_layer() {
  // Delete with an edge selected on the canvas removes the edge (the canvas takes the key
  // first; this is for the menu's Remove).
  if (canvas_->selected_edge() >= 0) {
    canvas_->delete_selected_edge();
    return;
  }
  const int selected = current_layer();
  if (selected >= 0) doc_->undo_stack()->push(new RemoveLayerCommand(doc_, selected));
}

void EditorWidget::move_layer(int delta) {
  const int selected = current_layer();
  const int to = selected + delta;
  if (selected < 0 || to < 0 || to >= static_cast<int>(doc_->spec().layers.size())) return;
  doc_->undo_stack()->push(new MoveLayerCommand(doc_, selected, to));
}

void EditorWidget::update_actions() {
  const int selected = current_layer();
  const int count = static_cast<int>(doc_->spec().layers.size());
  duplicate_->setEnabled(selected >= 0);
  remove_->setEnabled(selected >= 0);
  move_up_->setEnabled(selected > 0);
  move_down_->setEnabled(selected >= 0 && selected + 1 < count);
}

void EditorWidget::set_training(int batch_size, const OptimizerConfig& optimizer) {
  batch_size_ = batch_size;
  optimizer_ = optimizer;
  update_summary();
}

QString EditorWidget::totals_text() const {
  return totals_->text();
}

void EditorWidget::update_summary() {
  const ModelDocument::Validation& v = doc_->validation();
  if (v.table) {
    // The memory training needs, from the execution plan, before anything compiles.
    QString memory;
    try {
      const MemoryPlan m =
          build_plan(doc_->spec(), *v.table, batch_size_, optimizer_).memory();
      memory = training_memory_text(m, batch_size_, v.table->policy, optimizer_.kind);
    } catch (const std::exception& e) {
      memory = QString::fromUtf8(e.what());
    }
    totals_->setText(ui::totals_text(*v.table) + QLatin1Char('\n') + memory);
  } else {
    totals_->setText(
        tr("Input %1").arg(QString::fromStdString(format_shape(doc_->spec().input_shape))));
  }
  message_->setText(v.message);
  message_->setVisible(!v.ok);
}

}  // namespace mixlab::ui

// The moc output compiled here rather than in the target's shared mocs_compilation.cpp, which
// would tie this file to every other moc'd header of mixlab_ui.
#include "moc_editor_widget.cpp"
