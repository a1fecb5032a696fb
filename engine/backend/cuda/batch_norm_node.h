// BatchNormalization on the CUDA executor: MixLab's kernels (kernels_norm.cu), float32 statistics
// and affine transform on the layer's dtype, gamma and beta read from the float32 masters, the
// moving statistics updated in place in the masters (slots the optimizer leaves at zero
// gradient, so its update keeps them). With the plan's fused ReLU (node.activation) it writes
// the ReLU's output and takes its gradient in the same kernels.
#pragma once

#include "engine/backend/cuda/cuda_context.h"

namespace mixlab::cuda {

class BatchNormNode final : public CudaNode {
 public:
  BatchNormNode(const ExecutionPlan& plan, const PlanNode& node, const LayerSpec& spec,
                const LayerInfo& info);
  void reserve(DeviceArena& arena) override;
  void bind(const DeviceArena& arena) override;
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;
  std::vector<ParamSlot*> params() override;

 private:
  BatchNormArgs args_;
  bool relu_ = false;
  kernels::BatchNormShape shape_;
  std::vector<ParamSlot> slots_;  // Keras's order: gamma, beta (each if present), mean, variance
  ParamSlot* gamma_ = nullptr;
  ParamSlot* beta_ = nullptr;
  ParamSlot* moving_mean_ = nullptr;
  ParamSlot* moving_variance_ = nullptr;
  DeviceArena::Id sums_id_ = 0, stats_id_ = 0;
  double* sums_ = nullptr;
  float* stats_ = nullptr;
};

}  // namespace mixlab::cuda
