#include "engine/backend/cuda/conv_node.h"

namespace mixlab::cuda {

ConvNode::ConvNode(CudaContext& ctx, const ExecutionPlan& plan, const PlanNode& node,
                   const LayerSpec& spec, const LayerInfo& info)
    : CudaNode(node.layer, node.out_dtype, node.label), bias_(spec.use_bias) {
  const auto& in = info.input_shape;
  const auto& out = info.output_shape;
  h_ = static_cast<int>(in[0]);
  w_ = static_cast<int>(in[1]);
  c_ = static_cast<int>(in[2]);
  n_ = plan.batch;
  top_ = info.pad_top;
  left_ = info.pad_left;
  asymmetric_ = info.pad_top != info.pad_bottom || info.pad_left != info.pad_right;
  hp_ = h_ + info.pad_top + info.pad_bottom;
  wp_ = w_ + info.pad_left + info.pad_right;
  shape_.n = n_;
  shape_.h = asymmetric_ ? hp_ : h_;
  shape_.w = asymmetric_ ? wp_ : w_;
  shape_.c = c_;
  shape_.k = static_cast<int>(out[2]);
  shape_.r = spec.kernel_size.h;
  shape_.s = spec.kernel_size.w;
  shape_.oh = static_cast<int>(out[0]);
  shape_.ow = static_cast<int>(out[1]);
  shape_.pad_h = asymmetric_ ? 0 : info.pad_top;
  shape_.pad_w = asymmetric_ ? 0 : info.pad_left;
  shape_.stride_h = spec.strides.h;
  shape_.stride_w = spec.strides.w;
  shape_.dtype = out_dtype;
  shape_.tf32 = ctx.tf32;

  kernel_ = param_slot(plan.params.at(static_cast<std::size_t>(node.params.at(0))));
  kernel_.conv_kh = shape_.r;
  kernel_.conv_kw = shape_.s;
  // DepthwiseConv2D: Keras's (kh, kw, in, multiplier) is (kh, kw, 1, in * multiplier) in
  // memory, the grouped filters' (filters, kh, kw, 1) after the same re-layout as Conv2D's.
  shape_.groups = node.groups;
  kernel_.conv_in = c_ / node.groups;
  kernel_.conv_out = shape_.k;
  if (bias_) bias_slot_ = param_slot(plan.params.at(static_cast<std::size_t>(node.params.at(1))));
  conv_ = std::make_unique<DnnConv>(ctx.dnn, shape_, label);
}

std::vector<ParamSlot*> ConvNode::params() {
  if (bias_) return {&kernel_, &bias_slot_};
  return {&kernel_};
}

void ConvNode::reserve(DeviceArena& arena) {
  const std::size_t padded_bytes =
      static_cast<std::size_t>(n_) * hp_ * wp_ * c_ * dtype_bytes(out_dtype);
  if (asymmetric_) {
    padded_id_ = arena.reserve(padded_bytes, Purpose::activations);
    padded_grad_id_ = arena.reserve(padded_bytes, Purpose::workspace);
  }
  if (out_dtype != DType::f32) {
    dw16_id_ = arena.reserve(static_cast<std::size_t>(kernel_.count) * dtype_bytes(out_dtype),
                             Purpose::workspace);
  }
}

void ConvNode::bind(const DeviceArena& arena) {
  if (asymmetric_) {
    padded_ = arena.ptr(padded_id_);  // its border stays zero: only the interior is written
    padded_grad_ = arena.ptr(padded_grad_id_);
  }
  if (out_dtype != DType::f32) dw16_ = arena.ptr(dw16_id_);
}

void ConvNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  const void* src = x.data;
  if (padded_) {
    kernels::pad_nhwc(x.data, padded_, x.dtype, n_, h_, w_, c_, top_, left_, hp_, wp_, ctx.stream);
    src = padded_;
  }
  // A 16-bit output: the bias first, then the convolution added to it (cuDNN's beta = 1, in
  // float32), so that conv + bias is rounded once, as the CPU backend's fused bias; adding the
  // bias after would round twice, and a value within a rounding of zero could then fall on the
  // other side of a ReLU. A float32 output: the bias after (one float32 rounding more), as
  // cuDNN's beta = 1 made the CIFAR-100 convnet's float32 and TF32 forward 0.2-0.6 ms slower
  // a step at batch 1020-1024 on an H200 (16-bit outputs: no slower).
  const bool bias_first = bias_ && y.dtype != DType::f32;
  const std::int64_t rows = static_cast<std::int64_t>(n_) * shape_.oh * shape_.ow;
  if (bias_first) {
    kernels::fill_bias(y.data, ctx.weights(bias_slot_), y.dtype, rows, shape_.k, ctx.stream);
  }
  conv_->forward(src, ctx.weights(kernel_), y.data, ctx.dnn_workspace, bias_first);
  if (bias_ && !bias_first) {
    kernels::add_bias(y.data, ctx.weights(bias_slot_), y.dtype, rows, shape_.k, ctx.stream);
  }
}

void ConvNode::backward(CudaContext& ctx, const DTensor& x, const DTensor&, const DTensor& dy,
                        const DTensor* dx) {
  const void* src = padded_ ? static_cast<const void*>(padded_) : x.data;
  if (out_dtype == DType::f32) {
    conv_->backward_filter(src, dy.data, ctx.gradient(kernel_), ctx.dnn_workspace);
  } else {
    conv_->backward_filter(src, dy.data, dw16_, ctx.dnn_workspace);
    kernels::cast(dw16_, out_dtype, ctx.gradient(kernel_), DType::f32, kernel_.count, ctx.stream);
  }
  if (bias_) {
    kernels::bias_gradient(dy.data, dy.dtype, static_cast<std::int64_t>(n_) * shape_.oh * shape_.ow,
                           shape_.k, ctx.gradient(bias_slot_), ctx.stream);
  }
  if (dx) {
    if (padded_) {
      conv_->backward_data(dy.data, ctx.weights(kernel_), padded_grad_, ctx.dnn_workspace);
      kernels::crop_nhwc(padded_grad_, dx->data, dx->dtype, n_, h_, w_, c_, top_, left_, hp_, wp_,
                         ctx.stream);
    } else {
      conv_->backward_data(dy.data, ctx.weights(kernel_), dx->data, ctx.dnn_workspace);
    }
  }
}

}  // namespace mixlab::cuda
