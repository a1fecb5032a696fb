// Conv2D on oneDNN's convolution (NHWC activations, as Keras): forward, backward data and
// backward weights, with Keras's 'same' padding split (more at the bottom/right).
#pragma once

#include "engine/backend/cpu/cpu_node.h"

namespace mixlab::cpu {

class Conv2DNode : public CpuNode {
 public:
  Conv2DNode(CpuContext& ctx, const LayerSpec& spec, const LayerInfo& info, std::int64_t batch,
             Storage storage);

  std::size_t reserve(Arena& arena) override;
  void bind(const Arena& arena, const dnnl::memory& scratchpad) override;
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;
  std::vector<ParamSlot*> params() override;

 private:
  Storage storage_;
  bool use_bias_;
  dnnl::convolution_forward::primitive_desc fwd_pd_;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd_;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd_;
  dnnl::convolution_forward fwd_;
  dnnl::convolution_backward_data bwd_data_;
  dnnl::convolution_backward_weights bwd_weights_;
  ParamSlot kernel_, bias_;
  dnnl::memory src_, dst_, diff_dst_, diff_src_;  // (N, H, W, C) / (N, OH, OW, filters)
  ArgMap fwd_args_, bwd_data_args_, bwd_weights_args_;
};

}  // namespace mixlab::cpu
