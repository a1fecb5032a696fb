// MaxPooling2D and AveragePooling2D on oneDNN's pooling (NHWC). Max pooling keeps oneDNN's
// workspace (the argmax) for backward; average pooling with 'same' padding averages only the
// elements inside the input, as Keras does.
#pragma once

#include "engine/backend/cpu/cpu_node.h"

namespace mixlab::cpu {

class PoolingNode : public CpuNode {
 public:
  PoolingNode(CpuContext& ctx, const LayerSpec& spec, const LayerInfo& info, std::int64_t batch,
              Storage storage);

  std::size_t reserve(Arena& arena) override;
  void bind(const Arena& arena, const dnnl::memory& scratchpad) override;
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;

 private:
  Storage storage_;
  bool max_;
  dnnl::pooling_forward::primitive_desc fwd_pd_;
  dnnl::pooling_backward::primitive_desc bwd_pd_;
  dnnl::pooling_forward fwd_;
  dnnl::pooling_backward bwd_;
  Arena::Id workspace_id_ = 0;
  dnnl::memory src_, dst_, diff_dst_, diff_src_, workspace_;
  ArgMap fwd_args_, bwd_args_;
};

}  // namespace mixlab::cpu
