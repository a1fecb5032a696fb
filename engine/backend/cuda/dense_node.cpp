#include "engine/backend/cuda/dense_node.h"

namespace mixlab::cuda {

DenseNode::DenseNode(CudaContext& ctx, const ExecutionPlan& plan, const PlanNode& node)
    : CudaNode(node.layer, node.out_dtype, node.label),
      in_(node.in_shape.back()),
      units_(node.out_shape.back()),
      relu_(node.activation == ActivationFn::relu),
      bias_(node.params.size() > 1) {
  rows_ = plan.batch * num_elements(node.in_shape) / in_;
  kernel_ = param_slot(plan.params.at(static_cast<std::size_t>(node.params.at(0))));
  if (bias_) bias_slot_ = param_slot(plan.params.at(static_cast<std::size_t>(node.params[1])));
  const DenseProducts p = dense_products(rows_, in_, units_, out_dtype, ctx.tf32, relu_, bias_);
  forward_ = LtMatmul(ctx.lt, p.forward, ctx.lt_workspace_bytes, label + " forward");
  backward_data_ = LtMatmul(ctx.lt, p.data_grad, ctx.lt_workspace_bytes, label + " input gradient");
  backward_weights_ =
      LtMatmul(ctx.lt, p.weight_grad, ctx.lt_workspace_bytes, label + " kernel gradient");
}

std::vector<ParamSlot*> DenseNode::params() {
  if (bias_) return {&kernel_, &bias_slot_};
  return {&kernel_};
}

void DenseNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  forward_.run(ctx.weights(kernel_), x.data, y.data, bias_ ? ctx.weights(bias_slot_) : nullptr,
               ctx.lt_workspace, ctx.stream);
}

void DenseNode::backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                         const DTensor* dx) {
  if (relu_) {  // dz = dy * (y > 0), in place
    kernels::activation_backward(ActivationFn::relu, nullptr, y.data, dy.data, dy.data, dy.dtype,
                                 dy.elements(), ctx.stream);
  }
  backward_weights_.run(dy.data, x.data, ctx.gradient(kernel_), nullptr, ctx.lt_workspace,
                        ctx.stream);
  if (bias_) {
    kernels::bias_gradient(dy.data, dy.dtype, rows_, static_cast<int>(units_),
                           ctx.gradient(bias_slot_), ctx.stream);
  }
  if (dx) {
    backward_data_.run(ctx.weights(kernel_), dy.data, dx->data, nullptr, ctx.lt_workspace,
                       ctx.stream);
  }
}

}  // namespace mixlab::cuda
