// The merge layers on the GPU: Add, Subtract, Multiply, Average and Maximum on MixLab's kernels
// (kernels_merge.cu), Concatenate as strided copies. Every input is in the node's dtype (the
// plan casts them first). An Add may carry the plan's fused ReLU (node.activation).
#pragma once

#include <span>

#include "engine/backend/cuda/cuda_context.h"
#include "engine/plan/execution_plan.h"

namespace mixlab::cuda {

class MergeNode final : public CudaNode {
 public:
  // Throws BackendError for an elementwise merge of more inputs than one launch takes.
  MergeNode(const PlanNode& node, DType dtype);

  // The one-input interface does not apply: the executor calls the two below.
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;

  void forward_inputs(CudaContext& ctx, std::span<const DTensor* const> xs, const DTensor& y) const;
  // Writes input i's gradient into dx.
  void backward_input(CudaContext& ctx, std::span<const DTensor* const> xs, const DTensor& y,
                      const DTensor& dy, int i, const DTensor& dx) const;

 private:
  MergeOp op_;
  int axis_;  // concatenate: of the per-sample shape
  bool relu_;
};

}  // namespace mixlab::cuda
