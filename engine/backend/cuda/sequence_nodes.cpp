#include "engine/backend/cuda/sequence_nodes.h"

#include "engine/core/error.h"
#include "engine/ops/layer_norm.h"

namespace mixlab::cuda {

namespace {

ParamSlot only_slot(const ExecutionPlan& plan, const PlanNode& node, const std::string& label) {
  if (node.params.size() != 1) {
    throw BackendError(label + ": the plan gives the layer " + std::to_string(node.params.size()) +
                       " parameter groups, not its table");
  }
  return param_slot(plan.params.at(static_cast<std::size_t>(node.params.front())));
}

}  // namespace

EmbeddingNode::EmbeddingNode(const ExecutionPlan& plan, const PlanNode& node, const LayerSpec& spec)
    : CudaNode(node.layer, node.out_dtype, node.label),
      vocabulary_(spec.input_dim),
      width_(spec.output_dim),
      table_(only_slot(plan, node, node.label)) {}

void EmbeddingNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  kernels::embedding_forward(static_cast<const float*>(x.data), ctx.master + table_.offset, y.data,
                             y.dtype, x.elements(), vocabulary_, width_, ctx.stream);
}

void EmbeddingNode::backward(CudaContext& ctx, const DTensor& x, const DTensor&, const DTensor& dy,
                             const DTensor*) {
  kernels::embedding_backward(static_cast<const float*>(x.data), dy.data, dy.dtype,
                              ctx.gradient(table_), x.elements(), vocabulary_, width_, ctx.stream);
}

PositionEmbeddingNode::PositionEmbeddingNode(const ExecutionPlan& plan, const PlanNode& node)
    : CudaNode(node.layer, node.out_dtype, node.label), table_(only_slot(plan, node, node.label)) {}

void PositionEmbeddingNode::forward(CudaContext& ctx, const DTensor&, const DTensor& y) {
  const auto samples = static_cast<int>(y.dims.front());
  kernels::position_embedding_forward(ctx.master + table_.offset, y.data, y.dtype, samples,
                                      y.elements() / samples, ctx.stream);
}

void PositionEmbeddingNode::backward(CudaContext& ctx, const DTensor&, const DTensor&,
                                     const DTensor& dy, const DTensor*) {
  const auto samples = static_cast<int>(dy.dims.front());
  kernels::position_embedding_backward(dy.data, dy.dtype, ctx.gradient(table_), samples,
                                       dy.elements() / samples, table_.count, ctx.stream);
}

LayerNormNode::LayerNormNode(const ExecutionPlan& plan, const PlanNode& node, const LayerSpec& spec)
    : CudaNode(node.layer, node.out_dtype, node.label),
      epsilon_(static_cast<float>(spec.epsilon)),
      rows_(plan.batch * num_elements(node.in_shape) / node.in_shape.back()),
      width_(static_cast<int>(node.in_shape.back())) {
  for (const int p : node.params) {
    slots_.push_back(param_slot(plan.params.at(static_cast<std::size_t>(p))));
  }
  for (ParamSlot& s : slots_) {
    if (s.kind == ParamKind::gamma) gamma_ = &s;
    if (s.kind == ParamKind::beta) beta_ = &s;
  }
}

std::vector<ParamSlot*> LayerNormNode::params() {
  std::vector<ParamSlot*> out;
  for (ParamSlot& s : slots_) out.push_back(&s);
  return out;
}

void LayerNormNode::reserve(DeviceArena& arena) {
  stats_id_ = arena.reserve(static_cast<std::size_t>(rows_) * sizeof(RowStats), Purpose::workspace);
  partials_id_ = arena.reserve(
      static_cast<std::size_t>(kernels::layer_norm_partials_floats(width_)) * sizeof(float),
      Purpose::workspace);
}

void LayerNormNode::bind(const DeviceArena& arena) {
  stats_ = arena.ptr(stats_id_);
  partials_ = arena.as<float>(partials_id_);
}

void LayerNormNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  kernels::layer_norm_forward(x.data, y.data, x.dtype, rows_, width_, epsilon_,
                              gamma_ ? ctx.master + gamma_->offset : nullptr,
                              beta_ ? ctx.master + beta_->offset : nullptr, stats_, ctx.stream);
}

void LayerNormNode::backward(CudaContext& ctx, const DTensor& x, const DTensor&, const DTensor& dy,
                             const DTensor* dx) {
  kernels::layer_norm_backward(x.data, dy.data, dx ? dx->data : nullptr, x.dtype, rows_, width_,
                               gamma_ ? ctx.master + gamma_->offset : nullptr, stats_,
                               gamma_ ? ctx.gradient(*gamma_) : nullptr,
                               beta_ ? ctx.gradient(*beta_) : nullptr, partials_, ctx.stream);
}

AttentionNode::AttentionNode(const ExecutionPlan& plan, const PlanNode& node)
    : CudaNode(node.layer, node.out_dtype, node.label) {
  shape_.batch = plan.batch;
  shape_.steps = static_cast<int>(node.out_shape.front());
  shape_.heads = node.heads;
  shape_.key_dim = node.key_dim;
  shape_.value_dim = node.value_dim;
  shape_.causal = node.causal;
  // The block's shared row: the query (or output gradient) and a score per step.
  const std::size_t shared =
      static_cast<std::size_t>(node.key_dim + node.value_dim + shape_.steps) * sizeof(float);
  if (shared > 48 * 1024) {
    throw BackendError(label + ": " + std::to_string(shape_.steps) +
                       " steps are too many for the unfused attention kernels (48 KiB of shared "
                       "memory a row)");
  }
}

void AttentionNode::reserve(DeviceArena& arena) {
  const auto units =
      static_cast<std::size_t>(shape_.batch) * static_cast<std::size_t>(shape_.heads);
  const auto steps = static_cast<std::size_t>(shape_.steps);
  probs_id_ = arena.reserve(units * steps * steps * sizeof(float), Purpose::activations);
  grads_id_ = arena.reserve(units * steps *
                                static_cast<std::size_t>(2 * shape_.key_dim + shape_.value_dim) *
                                sizeof(float),
                            Purpose::workspace);
}

void AttentionNode::bind(const DeviceArena& arena) {
  probs_ = arena.as<float>(probs_id_);
  grads_ = arena.as<float>(grads_id_);
}

void AttentionNode::forward(CudaContext&, const DTensor&, const DTensor&) {
  throw BackendError(label + ": forward() of one input; the executor calls forward_inputs()");
}

void AttentionNode::backward(CudaContext&, const DTensor&, const DTensor&, const DTensor&,
                             const DTensor*) {
  throw BackendError(label + ": backward() of one input; the executor calls backward_input()");
}

void AttentionNode::forward_inputs(CudaContext& ctx, std::span<const DTensor* const> xs,
                                   const DTensor& y) {
  kernels::attention_forward(xs[0]->data, xs[1]->data, xs[2]->data, y.data, y.dtype, shape_, probs_,
                             ctx.stream);
}

void AttentionNode::backward_input(CudaContext& ctx, std::span<const DTensor* const> xs,
                                   const DTensor& dy, int i, const DTensor& dx) {
  const std::int64_t q_elements = xs[0]->elements();
  float* dq = grads_;
  float* dk = dq + q_elements;
  float* dv = dk + q_elements;
  if (i == 0) {
    kernels::attention_backward(xs[0]->data, xs[1]->data, xs[2]->data, dy.data, dy.dtype, shape_,
                                probs_, dq, dk, dv, ctx.stream);
  }
  const float* src = i == 0 ? dq : i == 1 ? dk : dv;
  kernels::cast(src, DType::f32, dx.data, dx.dtype, dx.elements(), ctx.stream);
}

}  // namespace mixlab::cuda
