// The undo commands of the layer-stack editor: every edit of a ModelDocument is one of these,
// pushed on its undo stack. redo() applies the edit (QUndoStack::push calls it), undo() restores
// the exact previous state.
#pragma once

#include <QCoreApplication>
#include <QUndoCommand>
#include <cstdint>

#include "engine/spec/model_spec.h"
#include "ui/editor/model_document.h"

namespace mixlab::ui {

// What an edit-field command changed; consecutive edits of the same field of the same layer in
// one editing session merge into one undo step.
enum class LayerField : std::uint8_t {
  name,
  units,
  filters,
  kernel_size,
  strides,
  padding,
  pool_size,
  activation,
  use_bias,
  rate,
  scale,
  offset,
  dtype,
  inputs,  // the layers it reads (the canvas's connect, merge and delete-edge)
  depth_multiplier,
  momentum,
  epsilon,
  center,
  scale_gamma,  // BatchNormalization's "scale"
  max_value,
  negative_slope,
  threshold,
  zero_padding,  // ZeroPadding2D's "padding"
  target_shape,
  keepdims,
  axis,
  mean,  // Normalization's
  variance,
  input_dim,  // Embedding's
  output_dim,
  sequence_length,  // PositionEmbedding's
  num_heads,        // MultiHeadAttention's
  key_dim,
  value_dim,
  attention_output,  // its "output_shape"
  causal,            // its "use_causal_mask"
};
enum class ModelField : std::uint8_t { name, input_shape, loss };

// Keras's name of the field ("kernel_size"), for command texts.
QString field_name(LayerField field);

// Inserts `layer` at `index` (index == the layer count appends).
class InsertLayerCommand : public QUndoCommand {
  Q_DECLARE_TR_FUNCTIONS(InsertLayerCommand)

 public:
  InsertLayerCommand(ModelDocument* doc, int index, LayerSpec layer);
  void redo() override;
  void undo() override;

 private:
  ModelDocument* doc_;
  int index_;
  LayerSpec layer_;
};

// Inserts a copy of layer `index` right after it.
class DuplicateLayerCommand : public InsertLayerCommand {
  Q_DECLARE_TR_FUNCTIONS(DuplicateLayerCommand)

 public:
  DuplicateLayerCommand(ModelDocument* doc, int index);
};

class RemoveLayerCommand : public QUndoCommand {
  Q_DECLARE_TR_FUNCTIONS(RemoveLayerCommand)

 public:
  RemoveLayerCommand(ModelDocument* doc, int index);
  void redo() override;
  void undo() override;

 private:
  ModelDocument* doc_;
  int index_;
  LayerSpec layer_;  // the removed layer, for undo
};

// Moves layer `from` so that it ends up at index `to`.
class MoveLayerCommand : public QUndoCommand {
  Q_DECLARE_TR_FUNCTIONS(MoveLayerCommand)

 public:
  MoveLayerCommand(ModelDocument* doc, int from, int to);
  void redo() override;
  void undo() override;

 private:
  ModelDocument* doc_;
  int from_;
  int to_;
};

// Replaces a value of the document with `after` and back. A non-zero `merge_session` lets
// consecutive edits with the same merge key and session merge, so a spin-box drag is one undo
// step; 0 never merges (combo boxes, check boxes). Defined for LayerSpec and ModelHeader.
template <typename Value>
class MergingEditCommand : public QUndoCommand {
 public:
  void redo() override;
  void undo() override;
  int id() const override;
  bool mergeWith(const QUndoCommand* other) override;

 protected:
  // `merge_key` tells edits of one thing apart (a layer and field, a model field); `id` is the
  // QUndoCommand id shared by all commands of the subclass.
  MergingEditCommand(int id, int merge_key, int merge_session, Value before, Value after);
  virtual void apply(const Value& value) = 0;

 private:
  int id_;
  int merge_key_;
  int merge_session_;
  Value before_;
  Value after_;
};

// Replaces layer `index` with `after`, which differs from it in `field`.
class EditLayerCommand : public MergingEditCommand<LayerSpec> {
  Q_DECLARE_TR_FUNCTIONS(EditLayerCommand)

 public:
  EditLayerCommand(ModelDocument* doc, int index, LayerField field, LayerSpec after,
                   int merge_session = 0);

 private:
  void apply(const LayerSpec& layer) override;

  ModelDocument* doc_;
  int index_;
};

// Replaces the model's name, input shape or loss.
class EditModelCommand : public MergingEditCommand<ModelHeader> {
  Q_DECLARE_TR_FUNCTIONS(EditModelCommand)

 public:
  EditModelCommand(ModelDocument* doc, ModelField field, ModelHeader after, int merge_session = 0);

 private:
  void apply(const ModelHeader& header) override;

  ModelDocument* doc_;
};

}  // namespace mixlab::ui
