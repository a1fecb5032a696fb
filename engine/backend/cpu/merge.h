// The merge layers on the CPU (Add, Subtract, Multiply, Average, Maximum, Concatenate): every
// input in the node's storage (the plan casts them first), the math of engine/ops/merge.h.
#pragma once

#include <span>

#include "engine/backend/cpu/cpu_node.h"
#include "engine/plan/execution_plan.h"

namespace mixlab::cpu {

class MergeNode : public CpuNode {
 public:
  MergeNode(int layer_index, const PlanNode& node, Storage storage);

  // The one-input interface does not apply: the executor calls the two below.
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;

  void forward_inputs(std::span<const Tensor* const> xs, const Tensor& y) const;
  // Writes input i's gradient into dx (in dx's storage).
  void backward_input(std::span<const Tensor* const> xs, const Tensor& y, const Tensor& dy, int i,
                      const Tensor& dx) const;

 private:
  MergeOp op_;
  int axis_;         // concatenate: of the per-sample shape
  Shape out_shape_;  // per sample; a concatenate's inputs' extents come with the tensors
};

// dst += src, elementwise in dst's storage (a gradient added to an earlier reader's).
void accumulate(const Tensor& src, const Tensor& dst);

}  // namespace mixlab::cpu
