// The layer stack as a table: one row per layer with its output shape, parameters, FLOPs and
// activation memory from the document's validation. The offending layer of an invalid stack is
// drawn in red with the engine's message as its tooltip; a layer the doctor has findings on
// shows a warning badge and lists them in its tooltip. Rows reorder by drag and drop, which
// pushes a MoveLayerCommand.
#pragma once

#include <QAbstractTableModel>
#include <QMap>
#include <QStringList>

#include "engine/spec/shape_inference.h"

namespace mixlab::ui {

class ModelDocument;

class LayerStackModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column : int { Layer, Inputs, OutputShape, Parameters, Flops, ActivationMemory, Count };
  enum class Role : int {
    // The figure of a numeric column as qlonglong (the display text is rounded and localized).
    Number = Qt::UserRole + 1,
    // The doctor's findings on the row's layer, one line each (QStringList, empty when none).
    Findings,
  };

  explicit LayerStackModel(ModelDocument* doc, QObject* parent = nullptr);

  // The doctor's findings by layer (0-based, as the rows), one line each: their layers show a
  // warning badge. Replaces the ones before; an empty map clears them.
  void set_layer_findings(QMap<int, QStringList> findings);
  const QMap<int, QStringList>& layer_findings() const { return findings_; }

  // The MIME type of dragged rows (the source row as decimal text).
  static QString mime_type();

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

  Qt::DropActions supportedDragActions() const override;
  Qt::DropActions supportedDropActions() const override;
  QStringList mimeTypes() const override;
  QMimeData* mimeData(const QModelIndexList& indexes) const override;
  bool canDropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                       const QModelIndex& parent) const override;
  // Moves the dragged layer to the gap before `row` (or before `parent`'s row, or to the end).
  bool dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                    const QModelIndex& parent) override;

 private:
  // The row's figures: from the table when the stack is valid, else for the rows above the
  // offending layer; nullptr for the others.
  const LayerInfo* info(int row) const;
  bool is_offending(int row) const;
  QVariant display(int row, int column) const;
  QString inputs_text(int row) const;
  QVariant tooltip(int row, int column) const;
  QVariant number(int row, int column) const;
  void refresh_all();

  ModelDocument* doc_;
  QMap<int, QStringList> findings_;  // the doctor's, by layer
};

}  // namespace mixlab::ui
