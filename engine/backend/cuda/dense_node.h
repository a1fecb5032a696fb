// Dense on cuBLASLt: Y = X W (+ b), the bias (and ReLU, when the plan fused it) in the matmul's
// epilogue; backward as two more matmuls and MixLab's bias-gradient kernel.
// mixed_float8 (PlanNode::fp8, every dimension a multiple of 16): the three products on FP8
// tensor cores, each operand cast into its scaled FP8 copy first (kernels::fp8_cast, the CPU
// emulation's rounding) and its delayed scaling kept on the host (engine/ops/fp8_scaling.h,
// the CPU's code): the scales on the device are what cuBLASLt and the casts read.
#pragma once

#include <array>
#include <optional>

#include "engine/backend/cuda/cuda_context.h"
#include "engine/backend/cuda/dense_lt.h"
#include "engine/ops/fp8_scaling.h"

namespace mixlab::cuda {

class DenseNode final : public CudaNode {
 public:
  // `fp8`: the run's recipe when the node runs in FP8 (its dimensions allow it); null otherwise.
  DenseNode(CudaContext& ctx, const ExecutionPlan& plan, const PlanNode& node,
            const Fp8Recipe* fp8 = nullptr);

  std::vector<ParamSlot*> params() override;
  void reserve(DeviceArena& arena) override;
  void bind(const DeviceArena& arena) override;
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;
  void end_training_step(CudaContext& ctx, bool applied) override;
  void append_fp8_steps(std::vector<Fp8TensorStep>& out) override;
  bool restore_fp8(Fp8StateRestorer& restorer) override;

 private:
  // The device side of FP8: each operand's codes (and transposed codes), the three dequantising
  // scales (input, kernel, gradient; bfloat16-rounded) and the three casts' figures.
  struct Fp8Device {
    std::uint8_t *x = nullptr, *xt = nullptr, *w = nullptr, *wt = nullptr, *dy = nullptr,
                 *dyt = nullptr;
    float* scales = nullptr;
    kernels::Fp8CastStats* stats = nullptr;
  };
  struct Fp8Host {
    std::array<Fp8TensorScaling, 3> scaling;
    std::array<Fp8TensorStep, 3> steps{};
    std::array<float, 3> uploaded{};  // the scales' source for the asynchronous copy
    bool reported = false;
  };
  void fp8_forward(CudaContext& ctx, const DTensor& x, const DTensor& y);
  void fp8_backward(CudaContext& ctx, const DTensor& dy, const DTensor* dx);
  void upload_scales(CudaContext& ctx);

  std::int64_t rows_, in_, units_;  // X (rows, in), W (in, units)
  bool relu_, bias_;
  ParamSlot kernel_, bias_slot_;
  LtMatmul forward_, backward_data_, backward_weights_;
  std::optional<Fp8Host> fp8_;
  Fp8Device dev_;
  DeviceArena::Id codes_id_ = 0, state_id_ = 0;
  bool scales_uploaded_ = false;
};

}  // namespace mixlab::cuda
