// MultiHeadAttention's core on the CPU (PlanOp::attention): per sample and head, the scores of
// every query step against every key step, their float32 softmax (engine/ops/attention.h), the
// weights times the values; backward the gradients of all three projections at once. MixLab's
// OpenMP loop over (sample, head), each head's rows staged in float32 and its GEMMs run by
// oneDNN's sgemm on blocks of query rows (a causal block skips the keys after it).
#pragma once

#include <span>

#include "engine/backend/cpu/cpu_node.h"
#include "engine/plan/execution_plan.h"

namespace mixlab::cpu {

class AttentionNode : public CpuNode {
 public:
  AttentionNode(int layer_index, const PlanNode& node, std::int64_t batch, Storage storage);

  std::size_t reserve(Arena& arena) override;
  void bind(const Arena& arena, const dnnl::memory& scratchpad) override;
  // The one-input interface does not apply: the executor calls the two below.
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;

  // xs: queries, keys, values.
  void forward_inputs(std::span<const Tensor* const> xs, const Tensor& y);
  // Input i's gradient into dx: input 0's computes all three (kept for 1 and 2).
  void backward_input(std::span<const Tensor* const> xs, const Tensor& dy, int i, const Tensor& dx);

 private:
  std::int64_t batch_, steps_;
  int heads_, key_dim_, value_dim_;
  bool causal_;
  float scale_;
  Arena::Id probs_id_ = 0, grads_id_ = 0;
  float* probs_ = nullptr;  // (batch, heads, steps, steps): the weights, as stored (rounded)
  float* grads_ = nullptr;  // dq, dk, dv in float32, each (batch, steps, heads * dim)
};

}  // namespace mixlab::cpu
