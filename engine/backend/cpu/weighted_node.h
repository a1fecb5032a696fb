// What Dense and Conv2D share: a kernel and an optional bias, three oneDNN primitives (forward,
// backward data, backward weights), the parameter slots and the float16 rounding. Each layer's
// file sets up its own primitive descriptors and hands them to init().
#pragma once

#include <functional>

#include "engine/backend/cpu/cpu_node.h"
#include "engine/plan/execution_plan.h"

namespace mixlab::cpu {

class WeightedNode : public CpuNode {
 public:
  std::size_t reserve(Arena& arena) override;
  void bind(const Arena& arena, const dnnl::memory& scratchpad) override;
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;
  std::vector<ParamSlot*> params() override;
  // The kernel's kind when it is not the layer's first (SeparableConv2D's pointwise part).
  void set_kernel_kind(ParamKind kind) { kernel_.kind = kind; }
  // Another layer's kinds and fans for its groups (MultiHeadAttention's projections).
  void set_params(const PlanSlot& kernel, const PlanSlot* bias) {
    kernel_.kind = kernel.kind;
    kernel_.fan_in = kernel.fan_in;
    kernel_.fan_out = kernel.fan_out;
    if (bias) bias_.kind = bias->kind;
  }

 protected:
  WeightedNode(int layer_index, const char* name, Storage storage, bool use_bias);

  // Builds the backward-weights descriptor for a given gradient memory descriptor.
  using BackwardWeightsFactory = std::function<dnnl::primitive_desc(const dnnl::memory::desc&)>;
  // Creates the primitives and describes the parameter slots. `diff_weights_any` is the kernel's
  // shape with format `any`: bfloat16 layers get bfloat16 weight gradients in the forward
  // weights' own layout when oneDNN offers it (as a GPU computes them, and one update loop then
  // writes the master and the copy); float32 gradients otherwise.
  void init(const dnnl::primitive_desc& forward_pd, const dnnl::primitive_desc& backward_data_pd,
            const BackwardWeightsFactory& make_backward_weights,
            const dnnl::memory::dims& kernel_dims, const dnnl::memory::desc& keras_kernel_desc,
            std::int64_t fan_in, std::int64_t fan_out, const dnnl::memory::desc& bias_desc);

 private:
  Storage storage_;
  bool use_bias_;
  dnnl::primitive_desc fwd_pd_, bwd_data_pd_, bwd_weights_pd_;
  dnnl::primitive fwd_, bwd_data_, bwd_weights_;
  ParamSlot kernel_, bias_;
  dnnl::memory src_, dst_, diff_dst_, diff_src_;
  ArgMap fwd_args_, bwd_data_args_, bwd_weights_args_;
};

}  // namespace mixlab::cpu
