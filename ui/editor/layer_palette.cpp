#include "ui/editor/layer_palette.h"

#include <QKeyEvent>
#include <QMimeData>

#include "ui/editor/layer_text.h"

namespace mixlab::ui {
namespace {

constexpr int kTypeRole = Qt::UserRole + 1;

LayerType type_of(const QListWidgetItem* item) {
  return static_cast<LayerType>(item->data(kTypeRole).toInt());
}

}  // namespace

LayerPalette::LayerPalette(QWidget* parent) : QListWidget(parent) {
  setSelectionMode(QAbstractItemView::SingleSelection);
  setToolTip(
      tr("Layer types. Double-click one or press Enter to add it after the selected "
         "layer, or drag it into a gap of the model diagram."));
  setDragEnabled(true);
  setDragDropMode(QAbstractItemView::DragOnly);
  setDefaultDropAction(Qt::CopyAction);
  // The engine's own list, so a layer type added to the engine shows up here.
  for (LayerType type : all_layer_types()) {
    auto* item = new QListWidgetItem(QString::fromUtf8(to_string(type)), this);
    item->setData(kTypeRole, static_cast<int>(type));
    item->setToolTip(layer_description(type));
  }
  setCurrentRow(0);
  // itemActivated would fire on a single click on some platforms; adding a layer on a mere
  // click would surprise.
  connect(this, &QListWidget::itemDoubleClicked, this,
          [this](QListWidgetItem* item) { emit add_requested(type_of(item)); });
}

LayerType LayerPalette::current_type() const {
  const QListWidgetItem* item = currentItem();
  if (item == nullptr) item = this->item(0);
  return type_of(item);
}

void LayerPalette::set_current_type(LayerType type) {
  for (int row = 0; row < count(); ++row) {
    if (type_of(item(row)) == type) setCurrentRow(row);
  }
}

QString LayerPalette::mime_type() {
  return QStringLiteral("application/x-mixlab-layer-type");
}

QStringList LayerPalette::mimeTypes() const {
  return {mime_type()};
}

QMimeData* LayerPalette::mimeData(const QList<QListWidgetItem*>& items) const {
  if (items.isEmpty()) return nullptr;
  auto* data = new QMimeData;
  const std::string_view name = to_string(type_of(items.first()));
  data->setData(mime_type(), QByteArray(name.data(), static_cast<qsizetype>(name.size())));
  data->setText(QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size())));
  return data;
}

void LayerPalette::startDrag(Qt::DropActions /*supported_actions*/) {
  QListWidget::startDrag(Qt::CopyAction);
}

void LayerPalette::keyPressEvent(QKeyEvent* event) {
  if ((event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter) &&
      currentItem() != nullptr) {
    emit add_requested(current_type());
    event->accept();
    return;
  }
  QListWidget::keyPressEvent(event);
}

}  // namespace mixlab::ui

// The moc output compiled here rather than in the target's shared mocs_compilation.cpp, which
// would tie this file to every other moc'd header of mixlab_ui.
#include "moc_layer_palette.cpp"
