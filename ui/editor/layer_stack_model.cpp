#include "ui/editor/layer_stack_model.h"

#include <QApplication>
#include <QBrush>
#include <QColor>
#include <QIcon>
#include <QMimeData>
#include <QStringList>
#include <QStyle>
#include <QUndoStack>
#include <algorithm>
#include <array>

#include "engine/spec/model_graph.h"
#include "ui/editor/layer_commands.h"
#include "ui/editor/layer_text.h"
#include "ui/editor/model_document.h"

namespace mixlab::ui {
namespace {

QString text_of(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

struct ColumnText {
  const char* title;
  const char* tooltip;
};
// In Column order.
constexpr std::array<ColumnText, LayerStackModel::Count> kColumnTexts = {{
    {QT_TR_NOOP("Layer"), QT_TR_NOOP("The layer and its main settings, in Keras's terms")},
    // Short titles (the tooltips say it in full): the table shares the editor with the canvas.
    {QT_TR_NOOP("Inputs"), QT_TR_NOOP("The layers it reads (\"input\": the model's input); "
                                      "without a name in its \"inputs\", the layer before it")},
    {QT_TR_NOOP("Output"),
     QT_TR_NOOP("The layer's output shape per sample, without the batch dimension")},
    {QT_TR_NOOP("Params"), QT_TR_NOOP("Trainable parameters (kernel and bias)")},
    {QT_TR_NOOP("FLOPs"), QT_TR_NOOP("Forward floating-point operations per sample")},
    {QT_TR_NOOP("Activations"), QT_TR_NOOP("Bytes of the layer's output per sample, in the dtype "
                                           "the precision policy stores it in")},
}};

// Dark red on light red: readable in light and dark palettes alike.
const QColor kErrorText(160, 0, 0);
const QColor kErrorBackground(255, 222, 222);

}  // namespace

LayerStackModel::LayerStackModel(ModelDocument* doc, QObject* parent)
    : QAbstractTableModel(parent), doc_(doc) {
  connect(doc_, &ModelDocument::layer_about_to_be_inserted, this,
          [this](int index) { beginInsertRows({}, index, index); });
  connect(doc_, &ModelDocument::layer_inserted, this, [this] { endInsertRows(); });
  connect(doc_, &ModelDocument::layer_about_to_be_removed, this,
          [this](int index) { beginRemoveRows({}, index, index); });
  connect(doc_, &ModelDocument::layer_removed, this, [this] { endRemoveRows(); });
  connect(doc_, &ModelDocument::layer_about_to_be_moved, this, [this](int from, int to) {
    // Qt's destination is the gap before which the row lands, counted before the move.
    beginMoveRows({}, from, from, {}, to > from ? to + 1 : to);
  });
  connect(doc_, &ModelDocument::layer_moved, this, [this] { endMoveRows(); });
  connect(doc_, &ModelDocument::about_to_reset, this, [this] { beginResetModel(); });
  connect(doc_, &ModelDocument::model_reset, this, [this] { endResetModel(); });
  // Any edit can change every row below it (shapes flow down) and the offending row.
  connect(doc_, &ModelDocument::changed, this, &LayerStackModel::refresh_all);
}

QString LayerStackModel::mime_type() {
  return QStringLiteral("application/x-mixlab-layer-row");
}

int LayerStackModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(doc_->spec().layers.size());
}

int LayerStackModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : Count;
}

const LayerInfo* LayerStackModel::info(int row) const {
  return doc_->layer_info(row);
}

bool LayerStackModel::is_offending(int row) const {
  return !doc_->validation().ok && doc_->validation().layer == row;
}

QVariant LayerStackModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const int row = index.row();
  const int column = index.column();
  switch (role) {
    case Qt::DisplayRole:
      return display(row, column);
    case Qt::ToolTipRole:
      return tooltip(row, column);
    case Qt::DecorationRole:
      if (column == Layer && findings_.contains(row))
        return QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning);
      return {};
    case Qt::TextAlignmentRole:
      if (column == Parameters || column == Flops || column == ActivationMemory)
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
    case Qt::ForegroundRole:
      if (is_offending(row)) return QBrush(kErrorText);
      return {};
    case Qt::BackgroundRole:
      if (is_offending(row)) return QBrush(kErrorBackground);
      return {};
    default:
      if (role == static_cast<int>(Role::Number)) return number(row, column);
      if (role == static_cast<int>(Role::Findings)) return findings_.value(row);
      return {};
  }
}

QVariant LayerStackModel::display(int row, int column) const {
  if (column == Layer) return layer_summary(doc_->spec().layers[static_cast<std::size_t>(row)]);
  if (column == Inputs) return inputs_text(row);
  const LayerInfo* i = info(row);
  if (i == nullptr) return QStringLiteral("—");
  switch (column) {
    case OutputShape:
      return text_of(format_shape(i->output_shape));
    case Parameters:
      return format_count(i->param_count);
    case Flops:
      return format_flops(i->flops);
    case ActivationMemory:
      return format_bytes(i->activation_bytes);
    default:
      return {};
  }
}

QString LayerStackModel::inputs_text(int row) const {
  const ModelSpec& spec = doc_->spec();
  const LayerSpec& layer = spec.layers[static_cast<std::size_t>(row)];
  QStringList names;
  if (!layer.inputs.empty()) {
    for (const std::string& name : layer.inputs) names << QString::fromStdString(name);
  } else if (row == 0) {
    names << QString::fromUtf8(kModelInputName);
  } else {
    // The layer before it: its name, else its row and type ("#3 Conv2D").
    const LayerSpec& before = spec.layers[static_cast<std::size_t>(row) - 1];
    names << (before.name.empty()
                  ? QStringLiteral("#%1 %2").arg(row - 1).arg(text_of(to_string(before.type)))
                  : QString::fromStdString(before.name));
  }
  return names.join(QStringLiteral(", "));
}

QVariant LayerStackModel::tooltip(int row, int column) const {
  if (is_offending(row)) return doc_->validation().message;
  if (column == Inputs)
    return doc_->spec().layers[static_cast<std::size_t>(row)].inputs.empty()
               ? tr("Reads the layer before it")
               : tr("Reads %1").arg(inputs_text(row));
  const LayerSpec& layer = doc_->spec().layers[static_cast<std::size_t>(row)];
  const LayerInfo* i = info(row);
  if (column == Layer) {
    QString text = layer_description(layer.type);
    if (!layer.name.empty())
      text = QString::fromStdString(layer.name) + QStringLiteral(": ") + text;
    if (i != nullptr)
      text += tr("\nComputes in %1 under %2.")
                  .arg(text_of(to_string(i->compute)), text_of(to_string(doc_->policy())));
    if (findings_.contains(row))
      text += tr("\nThe doctor's findings:\n%1").arg(findings_.value(row).join(QLatin1Char('\n')));
    return text;
  }
  if (i == nullptr) return tr("Not computed: fix the layer marked in red above this one first.");
  switch (column) {
    case OutputShape:
      return tr("Input %1 → output %2 (per sample, without the batch)")
          .arg(text_of(format_shape(i->input_shape)), text_of(format_shape(i->output_shape)));
    case Parameters:
      return tr("%1 trainable parameters: %2")
          .arg(format_count(i->param_count), param_groups_text(*i));
    case Flops:
      return tr("%1 forward floating-point operations per sample").arg(format_count(i->flops));
    case ActivationMemory:
      return tr("%1 bytes of output per sample, stored in %2")
          .arg(format_count(i->activation_bytes), text_of(to_string(i->compute)));
    default:
      return {};
  }
}

QVariant LayerStackModel::number(int row, int column) const {
  const LayerInfo* i = info(row);
  if (i == nullptr) return {};
  switch (column) {
    case Parameters:
      return static_cast<qlonglong>(i->param_count);
    case Flops:
      return static_cast<qlonglong>(i->flops);
    case ActivationMemory:
      return static_cast<qlonglong>(i->activation_bytes);
    default:
      return {};
  }
}

QVariant LayerStackModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Vertical) {
    // The engine's messages count layers from 0 ("layer 4 (Conv2D): ..."); so do the rows.
    if (role == Qt::DisplayRole) return section;
    return {};
  }
  if (section < 0 || section >= Count) return {};
  const ColumnText& text = kColumnTexts[static_cast<std::size_t>(section)];
  if (role == Qt::DisplayRole) return tr(text.title);
  if (role == Qt::ToolTipRole) return tr(text.tooltip);
  return {};
}

Qt::ItemFlags LayerStackModel::flags(const QModelIndex& index) const {
  // Drops land between rows (the root accepts them), never on a row.
  if (!index.isValid()) return Qt::ItemIsDropEnabled;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled;
}

Qt::DropActions LayerStackModel::supportedDragActions() const {
  return Qt::MoveAction;
}

Qt::DropActions LayerStackModel::supportedDropActions() const {
  return Qt::MoveAction;
}

QStringList LayerStackModel::mimeTypes() const {
  return {mime_type()};
}

QMimeData* LayerStackModel::mimeData(const QModelIndexList& indexes) const {
  // The view selects whole rows, one at a time: every index is of the same row.
  auto valid = std::find_if(indexes.begin(), indexes.end(),
                            [](const QModelIndex& i) { return i.isValid(); });
  if (valid == indexes.end()) return nullptr;
  auto* data = new QMimeData;
  data->setData(mime_type(), QByteArray::number(valid->row()));
  return data;
}

bool LayerStackModel::canDropMimeData(const QMimeData* data, Qt::DropAction action, int /*row*/,
                                      int /*column*/, const QModelIndex& /*parent*/) const {
  return data != nullptr && action == Qt::MoveAction && data->hasFormat(mime_type());
}

bool LayerStackModel::dropMimeData(const QMimeData* data, Qt::DropAction action, int row,
                                   int column, const QModelIndex& parent) {
  if (!canDropMimeData(data, action, row, column, parent)) return false;
  bool ok = false;
  const int from = data->data(mime_type()).toInt(&ok);
  const int rows = rowCount();
  if (!ok || from < 0 || from >= rows) return false;
  int gap = row;
  if (gap < 0) gap = parent.isValid() ? parent.row() : rows;
  // The gap is counted with the dragged row still in place; below it, removing it shifts by one.
  const int to = std::clamp(gap > from ? gap - 1 : gap, 0, rows - 1);
  if (to == from) return false;
  doc_->undo_stack()->push(new MoveLayerCommand(doc_, from, to));
  // The view would now remove the source rows of a move; removeRows() is not implemented, so it
  // cannot: the command has moved the layer already.
  return true;
}

void LayerStackModel::set_layer_findings(QMap<int, QStringList> findings) {
  if (findings == findings_) return;
  findings_ = std::move(findings);
  const int rows = rowCount();
  if (rows > 0) emit dataChanged(index(0, Layer), index(rows - 1, Layer));
}

void LayerStackModel::refresh_all() {
  const int rows = rowCount();
  if (rows == 0) return;
  emit dataChanged(index(0, 0), index(rows - 1, Count - 1));
  emit headerDataChanged(Qt::Vertical, 0, rows - 1);
}

}  // namespace mixlab::ui

// The moc output compiled here rather than in the target's shared mocs_compilation.cpp, which
// would tie this file to every other moc'd header of mixlab_ui.
#include "moc_layer_stack_model.cpp"
