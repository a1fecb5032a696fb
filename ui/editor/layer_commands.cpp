#include "ui/editor/layer_commands.h"

namespace mixlab::ui {
namespace {

// QUndoCommand ids: commands of the same id may merge.
constexpr int kEditLayerId = 1;
constexpr int kEditModelId = 2;
// More than there are LayerFields: index * kLayerFieldCount + field is one key per layer field.
constexpr int kLayerFieldCount = 32;
static_assert(static_cast<int>(LayerField::variance) < kLayerFieldCount);

QString type_name(LayerType type) {
  return QString::fromUtf8(to_string(type));
}

const LayerSpec& layer_at(const ModelDocument* doc, int index) {
  return doc->spec().layers.at(static_cast<std::size_t>(index));
}

QString model_field_text(ModelField field) {
  switch (field) {
    case ModelField::name:
      return EditModelCommand::tr("Rename model");
    case ModelField::input_shape:
      return EditModelCommand::tr("Change input shape");
    case ModelField::loss:
      return EditModelCommand::tr("Change loss");
  }
  return {};
}

}  // namespace

QString field_name(LayerField field) {
  switch (field) {
    case LayerField::name:
      return QStringLiteral("name");
    case LayerField::units:
      return QStringLiteral("units");
    case LayerField::filters:
      return QStringLiteral("filters");
    case LayerField::kernel_size:
      return QStringLiteral("kernel_size");
    case LayerField::strides:
      return QStringLiteral("strides");
    case LayerField::padding:
      return QStringLiteral("padding");
    case LayerField::pool_size:
      return QStringLiteral("pool_size");
    case LayerField::activation:
      return QStringLiteral("activation");
    case LayerField::use_bias:
      return QStringLiteral("use_bias");
    case LayerField::rate:
      return QStringLiteral("rate");
    case LayerField::scale:
      return QStringLiteral("scale");
    case LayerField::offset:
      return QStringLiteral("offset");
    case LayerField::dtype:
      return QStringLiteral("dtype");
    case LayerField::inputs:
      return QStringLiteral("inputs");
    case LayerField::depth_multiplier:
      return QStringLiteral("depth_multiplier");
    case LayerField::momentum:
      return QStringLiteral("momentum");
    case LayerField::epsilon:
      return QStringLiteral("epsilon");
    case LayerField::center:
      return QStringLiteral("center");
    case LayerField::scale_gamma:
      return QStringLiteral("scale");
    case LayerField::max_value:
      return QStringLiteral("max_value");
    case LayerField::negative_slope:
      return QStringLiteral("negative_slope");
    case LayerField::threshold:
      return QStringLiteral("threshold");
    case LayerField::zero_padding:
      return QStringLiteral("padding");
    case LayerField::target_shape:
      return QStringLiteral("target_shape");
    case LayerField::keepdims:
      return QStringLiteral("keepdims");
    case LayerField::axis:
      return QStringLiteral("axis");
    case LayerField::mean:
      return QStringLiteral("mean");
    case LayerField::variance:
      return QStringLiteral("variance");
    case LayerField::input_dim:
      return QStringLiteral("input_dim");
    case LayerField::output_dim:
      return QStringLiteral("output_dim");
    case LayerField::sequence_length:
      return QStringLiteral("sequence_length");
    case LayerField::num_heads:
      return QStringLiteral("num_heads");
    case LayerField::key_dim:
      return QStringLiteral("key_dim");
    case LayerField::value_dim:
      return QStringLiteral("value_dim");
    case LayerField::attention_output:
      return QStringLiteral("output_shape");
    case LayerField::causal:
      return QStringLiteral("use_causal_mask");
  }
  return {};
}

// --- insert, duplicate, remove, move ---

InsertLayerCommand::InsertLayerCommand(ModelDocument* doc, int index, LayerSpec layer)
    : doc_(doc), index_(index), layer_(std::move(layer)) {
  setText(tr("Add %1").arg(type_name(layer_.type)));
}

void InsertLayerCommand::redo() {
  doc_->insert_layer(index_, layer_);
}

void InsertLayerCommand::undo() {
  doc_->remove_layer(index_);
}

DuplicateLayerCommand::DuplicateLayerCommand(ModelDocument* doc, int index)
    : InsertLayerCommand(doc, index + 1, layer_at(doc, index)) {
  setText(tr("Duplicate %1").arg(type_name(layer_at(doc, index).type)));
}

RemoveLayerCommand::RemoveLayerCommand(ModelDocument* doc, int index)
    : doc_(doc), index_(index), layer_(layer_at(doc, index)) {
  setText(tr("Remove %1").arg(type_name(layer_.type)));
}

void RemoveLayerCommand::redo() {
  doc_->remove_layer(index_);
}

void RemoveLayerCommand::undo() {
  doc_->insert_layer(index_, layer_);
}

MoveLayerCommand::MoveLayerCommand(ModelDocument* doc, int from, int to)
    : doc_(doc), from_(from), to_(to) {
  const QString type = type_name(layer_at(doc, from).type);
  if (to == from - 1)
    setText(tr("Move %1 up").arg(type));
  else if (to == from + 1)
    setText(tr("Move %1 down").arg(type));
  else
    setText(tr("Move %1 to %2").arg(type).arg(to));
}

void MoveLayerCommand::redo() {
  doc_->move_layer(from_, to_);
}

void MoveLayerCommand::undo() {
  doc_->move_layer(to_, from_);
}

// --- field edits ---

template <typename Value>
MergingEditCommand<Value>::MergingEditCommand(int id, int merge_key, int merge_session,
                                              Value before, Value after)
    : id_(id),
      merge_key_(merge_key),
      merge_session_(merge_session),
      before_(std::move(before)),
      after_(std::move(after)) {}

template <typename Value>
void MergingEditCommand<Value>::redo() {
  apply(after_);
}

template <typename Value>
void MergingEditCommand<Value>::undo() {
  apply(before_);
}

template <typename Value>
int MergingEditCommand<Value>::id() const {
  return merge_session_ != 0 ? id_ : -1;
}

template <typename Value>
bool MergingEditCommand<Value>::mergeWith(const QUndoCommand* other) {
  // Same id, so the same subclass.
  const auto* next = static_cast<const MergingEditCommand*>(other);
  if (next->merge_key_ != merge_key_ || next->merge_session_ != merge_session_) return false;
  after_ = next->after_;
  // A drag back to where it started leaves nothing to undo; the stack drops the command.
  setObsolete(after_ == before_);
  return true;
}

template class MergingEditCommand<LayerSpec>;
template class MergingEditCommand<ModelHeader>;

EditLayerCommand::EditLayerCommand(ModelDocument* doc, int index, LayerField field, LayerSpec after,
                                   int merge_session)
    : MergingEditCommand(kEditLayerId, index * kLayerFieldCount + static_cast<int>(field),
                         merge_session, layer_at(doc, index), std::move(after)),
      doc_(doc),
      index_(index) {
  setText(tr("Edit %1 of %2").arg(field_name(field), type_name(layer_at(doc, index).type)));
}

void EditLayerCommand::apply(const LayerSpec& layer) {
  doc_->set_layer(index_, layer);
}

EditModelCommand::EditModelCommand(ModelDocument* doc, ModelField field, ModelHeader after,
                                   int merge_session)
    : MergingEditCommand(kEditModelId, static_cast<int>(field), merge_session, doc->header(),
                         std::move(after)),
      doc_(doc) {
  setText(model_field_text(field));
}

void EditModelCommand::apply(const ModelHeader& header) {
  doc_->set_header(header);
}

}  // namespace mixlab::ui
