// The layer types the engine supports, one entry each; double-click or Enter asks to add one.
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

 signals:
  void add_requested(LayerType type);

 protected:
  void keyPressEvent(QKeyEvent* event) override;
};

}  // namespace mixlab::ui
