// What Dense and Conv2D share: a kernel and an optional bias, three oneDNN primitives (forward,
// backward data, backward weights), the parameter slots and the float16 rounding. Each layer's
// file sets up its own primitive descriptors and hands them to init().
#pragma once

#include <array>
#include <functional>
#include <optional>

#include "engine/backend/cpu/cpu_node.h"
#include "engine/ops/fp8_scaling.h"
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
  // mixed_float8 (issue 30): the matmul reads its input and kernel rounded through E4M3, and its
  // backward the output gradient rounded through the recipe's gradient format (E5M2 in hybrid),
  // each with its own delayed scale; the bias gradient is the unrounded output gradient's, as in
  // Keras's Dense._float8_call, where the bias is added after the gradient's quantization.
  // Needs float32 data rounded to bfloat16 (Storage::bf16_emulated). Call before bind().
  void enable_fp8(const Fp8Recipe& recipe);
  void end_training_step(bool applied) override;
  void append_fp8_steps(std::vector<Fp8TensorStep>& out) override;
  bool restore_fp8(Fp8StateRestorer& restorer) override;
  // The FP8 tensors' scaling state (input, kernel, output gradient); empty outside FP8.
  struct Fp8Tensors {
    Fp8TensorScaling input, kernel, gradient;
  };
  const std::optional<Fp8Tensors>& fp8() const { return fp8_; }

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

  // --- mixed_float8 ---
  std::optional<Fp8Tensors> fp8_;
  // The training step's input, kernel and gradient figures; their amaxes update the scales at
  // its end, and then they are reported once (append_fp8_steps).
  std::array<Fp8TensorStep, 3> steps_{};
  bool amax_pending_ = false, reported_ = false;
  // The rounded input (kept for backward), kernel copies (forward's and, when oneDNN lays it out
  // otherwise, backward-data's) and output gradient, in the executor's arena.
  struct Fp8Buffer {
    Arena::Id id = 0;
    float* data = nullptr;
    std::int64_t count = 0;  // floats; 0: none
  };
  Fp8Buffer input_q_, kernel_q_, backward_kernel_q_, gradient_q_;
  dnnl::memory kernel_q_mem_, backward_kernel_q_mem_;
  void backward_bias_from(const Tensor& dy);
};

}  // namespace mixlab::cpu
