#include "engine/backend/cuda/batch_norm_node.h"

#include "engine/core/error.h"

namespace mixlab::cuda {

BatchNormNode::BatchNormNode(const ExecutionPlan& plan, const PlanNode& node, const LayerSpec& spec,
                             const LayerInfo& info)
    : CudaNode(node.layer, node.out_dtype, node.label),
      relu_(node.activation == ActivationFn::relu) {
  if (node.activation != ActivationFn::linear && !relu_) {
    throw BackendError(label + ": the CUDA backend fuses only a ReLU into BatchNormalization");
  }
  args_.momentum = static_cast<float>(spec.momentum);
  args_.epsilon = static_cast<float>(spec.epsilon);
  args_.has_gamma = spec.scale_gamma;
  args_.has_beta = spec.center;
  shape_.channels = static_cast<int>(info.input_shape.back());
  shape_.rows_per_sample = num_elements(info.input_shape) / shape_.channels;
  shape_.rows = plan.batch * shape_.rows_per_sample;
  for (const int p : node.params) {
    slots_.push_back(param_slot(plan.params.at(static_cast<std::size_t>(p))));
  }
  for (ParamSlot& s : slots_) {
    switch (s.kind) {
      case ParamKind::gamma:
        gamma_ = &s;
        break;
      case ParamKind::beta:
        beta_ = &s;
        break;
      case ParamKind::moving_mean:
        moving_mean_ = &s;
        break;
      case ParamKind::moving_variance:
        moving_variance_ = &s;
        break;
      default:  // no other group belongs to a BatchNormalization
        break;
    }
  }
  if (!moving_mean_ || !moving_variance_) {
    throw BackendError(label + ": the plan gives the layer no moving statistics");
  }
}

std::vector<ParamSlot*> BatchNormNode::params() {
  std::vector<ParamSlot*> out;
  for (ParamSlot& s : slots_) out.push_back(&s);
  return out;
}

void BatchNormNode::reserve(DeviceArena& arena) {
  const auto c = static_cast<std::size_t>(shape_.channels);
  sums_id_ = arena.reserve(2 * c * sizeof(double), Purpose::workspace);
  stats_id_ = arena.reserve(5 * c * sizeof(float), Purpose::workspace);
}

void BatchNormNode::bind(const DeviceArena& arena) {
  sums_ = arena.as<double>(sums_id_);
  stats_ = arena.as<float>(stats_id_);
}

void BatchNormNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  kernels::batch_norm_forward(
      x.data, y.data, x.dtype, shape_, args_, gamma_ ? ctx.master + gamma_->offset : nullptr,
      beta_ ? ctx.master + beta_->offset : nullptr, ctx.master + moving_mean_->offset,
      ctx.master + moving_variance_->offset, sums_, stats_, ctx.params, ctx.stream, relu_);
}

void BatchNormNode::backward(CudaContext& ctx, const DTensor& x, const DTensor& y,
                             const DTensor& dy, const DTensor* dx) {
  kernels::batch_norm_backward(x.data, dy.data, dx ? dx->data : nullptr, x.dtype, shape_,
                               gamma_ ? ctx.master + gamma_->offset : nullptr,
                               gamma_ ? ctx.gradient(*gamma_) : nullptr,
                               beta_ ? ctx.gradient(*beta_) : nullptr, sums_, stats_, ctx.params,
                               ctx.stream, relu_ ? y.data : nullptr);
}

}  // namespace mixlab::cuda
