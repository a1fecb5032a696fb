// BatchNormalization on the CPU: MixLab's own OpenMP loops over NHWC rows (engine/ops/
// batch_norm.h's math), in float32 whatever the tensors' storage, reading each input once per
// pass and converting as it reads. The statistics are over the real samples of the batch only
// (a padded last batch's zero rows would bias them); the padding rows' input gradient is zero.
#pragma once

#include "engine/backend/cpu/cpu_node.h"
#include "engine/ops/batch_norm.h"

namespace mixlab::cpu {

class BatchNormNode : public CpuNode {
 public:
  BatchNormNode(const LayerSpec& spec, const LayerInfo& info, Storage storage);

  std::size_t reserve(Arena& arena) override;
  void bind(const Arena& arena, const dnnl::memory& scratchpad) override;
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;
  std::vector<ParamSlot*> params() override;

 private:
  // Per-channel sums over rows [0, rows) of f(row, channel), in double, into `out`.
  template <class F>
  void channel_sums(std::int64_t rows, double* out, F f) const;

  BatchNormArgs args_;
  std::int64_t channels_;
  ParamSlot gamma_, beta_, moving_mean_, moving_variance_;
  Arena::Id stats_id_ = 0;
  // (channels) each: the step's mean and 1/sqrt(var + eps) (for backward), the affine a and b;
  // (2 * channels) double: the sums.
  float* mean_ = nullptr;
  float* inv_std_ = nullptr;
  float* a_ = nullptr;
  float* b_ = nullptr;
  double* sums_ = nullptr;
  bool trained_ = false;   // the last forward used the batch's statistics
  std::int64_t rows_ = 0;  // of real samples in the last training forward
};

}  // namespace mixlab::cpu
