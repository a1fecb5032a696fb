// The layer types the engine supports, one entry each; double-click or Enter asks to add one,
// and an entry dragged out carries its type (mime_type()) for the model canvas to insert.
#pragma once

#include <QListWidget>

#include "engine/spec/model_spec.h"

namespace mixlab::ui {

class LayerPalette : public QListWidget {
  Q_OBJECT

 public:
  explicit LayerPalette(QWidget* parent = nullptr);

  // The selected entry's type (the first entry when none is selected).
  LayerType current_type() const;
  void set_current_type(LayerType type);

  // The MIME type of a dragged entry: the layer type's name ("Dense") as UTF-8.
  static QString mime_type();

 signals:
  void add_requested(LayerType type);

 protected:
  void keyPressEvent(QKeyEvent* event) override;
  QStringList mimeTypes() const override;
  QMimeData* mimeData(const QList<QListWidgetItem*>& items) const override;
  // Copies only: a move would take the entry out of the palette.
  void startDrag(Qt::DropActions supported_actions) override;
};

}  // namespace mixlab::ui
