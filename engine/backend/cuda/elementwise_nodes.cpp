#include "engine/backend/cuda/elementwise_nodes.h"

#include "engine/backend/cuda/cuda_check.h"
#include "engine/ops/dropout.h"

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
    kernels::activation_forward(fn_, x.data, y.data, y.dtype, x.elements(), ctx.stream, relu_);
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
                                 ctx.stream, relu_);
  }
}

void RescalingNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  kernels::scale_offset(x.data, y.data, y.dtype, scale_, offset_, x.elements(), ctx.stream);
}

void RescalingNode::backward(CudaContext& ctx, const DTensor&, const DTensor&, const DTensor& dy,
                             const DTensor* dx) {
  if (dx) kernels::scale_offset(dy.data, dx->data, dy.dtype, scale_, 0.0f, dy.elements(), ctx.stream);
}

NormalizationNode::NormalizationNode(int layer, const LayerSpec& spec, const LayerInfo& info,
                                     DType dtype, std::string label)
    : CudaNode(layer, dtype, std::move(label)),
      constants_(
          normalization_constants(spec.mean, spec.variance, info.output_shape.back(), dtype)) {}

void NormalizationNode::reserve(DeviceArena& arena) {
  constants_id_ = arena.reserve(2 * constants_.mean.size() * sizeof(float), Purpose::workspace);
}

void NormalizationNode::bind(const DeviceArena& arena) {
  device_constants_ = arena.as<float>(constants_id_);
  const std::size_t c = constants_.mean.size();
  CUDA_CHECK(cudaMemcpy(device_constants_, constants_.mean.data(), c * sizeof(float),
                        cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(device_constants_ + c, constants_.divisor.data(), c * sizeof(float),
                        cudaMemcpyHostToDevice));
}

void NormalizationNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  const auto c = static_cast<int>(constants_.mean.size());
  kernels::channel_normalize(x.data, y.data, y.dtype, device_constants_, device_constants_ + c, c,
                             x.elements(), ctx.stream);
}

void NormalizationNode::backward(CudaContext& ctx, const DTensor&, const DTensor&,
                                 const DTensor& dy, const DTensor* dx) {
  const auto c = static_cast<int>(constants_.mean.size());
  if (dx) {
    kernels::channel_normalize(dy.data, dx->data, dy.dtype, nullptr, device_constants_ + c, c,
                               dy.elements(), ctx.stream);
  }
}

void DropoutNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  kernels::dropout(x.data, y.data, y.dtype, x.elements(), rate_, ctx.seed, layer, ctx.params,
                   ctx.stream, dropout_noise(noise_shape_, x.dims));
}

void DropoutNode::backward(CudaContext& ctx, const DTensor&, const DTensor&, const DTensor& dy,
                           const DTensor* dx) {
  // The same mask: same seed, layer and step (still in the step's parameters).
  if (dx) {
    kernels::dropout(dy.data, dx->data, dy.dtype, dy.elements(), rate_, ctx.seed, layer, ctx.params,
                     ctx.stream, dropout_noise(noise_shape_, dy.dims));
  }
}

ZeroPaddingNode::ZeroPaddingNode(int batch, const LayerInfo& info, DType dtype, std::string label)
    : CudaNode(info.index, dtype, std::move(label)),
      n_(batch),
      h_(static_cast<int>(info.input_shape[0])),
      w_(static_cast<int>(info.input_shape[1])),
      c_(static_cast<int>(info.input_shape[2])),
      top_(info.pad_top),
      left_(info.pad_left),
      hp_(static_cast<int>(info.output_shape[0])),
      wp_(static_cast<int>(info.output_shape[1])) {}

void ZeroPaddingNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  kernels::pad_nhwc(x.data, y.data, x.dtype, n_, h_, w_, c_, top_, left_, hp_, wp_, ctx.stream);
}

void ZeroPaddingNode::backward(CudaContext& ctx, const DTensor&, const DTensor&, const DTensor& dy,
                               const DTensor* dx) {
  if (dx) {
    kernels::crop_nhwc(dy.data, dx->data, dy.dtype, n_, h_, w_, c_, top_, left_, hp_, wp_,
                       ctx.stream);
  }
}

}  // namespace mixlab::cuda
