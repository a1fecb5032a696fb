#include "engine/backend/cuda/elementwise_nodes.h"

namespace mixlab::cuda {

void CastNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  kernels::cast(x.data, x.dtype, y.data, y.dtype, x.elements(), ctx.stream);
}

void CastNode::backward(CudaContext& ctx, const DTensor&, const DTensor&, const DTensor& dy,
                        const DTensor* dx) {
  if (dx) kernels::cast(dy.data, dy.dtype, dx->data, dx->dtype, dy.elements(), ctx.stream);
}

void ActivationNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  if (fn_ == ActivationFn::softmax) {
    kernels::softmax_forward(x.data, y.data, y.dtype, x.elements() / channels_, channels_,
                             ctx.stream);
  } else {
    kernels::activation_forward(fn_, x.data, y.data, y.dtype, x.elements(), ctx.stream);
  }
}

void ActivationNode::backward(CudaContext& ctx, const DTensor& x, const DTensor& y,
                              const DTensor& dy, const DTensor* dx) {
  if (!dx) return;
  if (fn_ == ActivationFn::softmax) {
    kernels::softmax_backward(y.data, dy.data, dx->data, dy.dtype, y.elements() / channels_,
                              channels_, ctx.stream);
  } else {
    kernels::activation_backward(fn_, x.data, y.data, dy.data, dx->data, dy.dtype, y.elements(),
                                 ctx.stream);
  }
}

void RescalingNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  kernels::scale_offset(x.data, y.data, y.dtype, scale_, offset_, x.elements(), ctx.stream);
}

void RescalingNode::backward(CudaContext& ctx, const DTensor&, const DTensor&, const DTensor& dy,
                             const DTensor* dx) {
  if (dx) kernels::scale_offset(dy.data, dx->data, dy.dtype, scale_, 0.0f, dy.elements(), ctx.stream);
}

void DropoutNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  kernels::dropout(x.data, y.data, y.dtype, x.elements(), rate_, ctx.seed, layer, ctx.params,
                   ctx.stream);
}

void DropoutNode::backward(CudaContext& ctx, const DTensor&, const DTensor&, const DTensor& dy,
                           const DTensor* dx) {
  // The same mask: same seed, layer and step (still in the step's parameters).
  if (dx) {
    kernels::dropout(dy.data, dx->data, dy.dtype, dy.elements(), rate_, ctx.seed, layer,
                     ctx.params, ctx.stream);
  }
}

}  // namespace mixlab::cuda
