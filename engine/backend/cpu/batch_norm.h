// BatchNormalization on the CPU. A full batch in float32 or native bfloat16 (every step but a
// padded last one) runs on oneDNN's batch normalization: statistics and affine transform in
// float32 whatever the tensors' dtype, as Keras computes them, one fused pass where MixLab's
// loops made four (it measured 3 to 6 times faster on resnet20's layers). Everything else runs
// on MixLab's own OpenMP loops over NHWC rows (engine/ops/batch_norm.h's math, shared with
// CUDA), converting as they read: a padded last batch, whose statistics are over its real
// samples only (its zero rows would bias them) and whose padding rows get no gradient; the
// emulated 16-bit storages (float32 buffers rounded to float16 or bfloat16); a first layer
// without an input gradient. The moving statistics are updated from the batch's either way.
#pragma once

#include "engine/backend/cpu/cpu_node.h"
#include "engine/ops/batch_norm.h"

namespace mixlab::cpu {

class BatchNormNode : public CpuNode {
 public:
  BatchNormNode(CpuContext& ctx, const LayerSpec& spec, const LayerInfo& info, std::int64_t batch,
                Storage storage);

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
  // oneDNN's path (see above): whether it applies to these tensors, and its passes.
  bool onednn_applies(const Tensor& x, const Tensor& y, std::int64_t real_samples) const;
  void onednn_forward(CpuContext& ctx, const Tensor& x, const Tensor& y);
  void onednn_backward(CpuContext& ctx, const Tensor& x, const Tensor& dy, const Tensor& dx);
  dnnl::normalization_flags flags() const;

  BatchNormArgs args_;
  std::int64_t channels_;
  std::int64_t batch_;
  Storage storage_;
  bool onednn_ = false;  // oneDNN has this storage's kernels (float32, native bfloat16)
  dnnl::batch_normalization_forward::primitive_desc train_pd_, infer_pd_;
  dnnl::batch_normalization_backward::primitive_desc bwd_pd_;
  dnnl::batch_normalization_forward train_, infer_;
  dnnl::batch_normalization_backward bwd_;
  dnnl::memory src_, dst_, diff_dst_, diff_src_, mean_mem_, variance_mem_, scratchpad_;
  bool used_onednn_ = false;  // the last training forward ran on oneDNN
  ParamSlot gamma_, beta_, moving_mean_, moving_variance_;
  Arena::Id stats_id_ = 0;
  // (channels) each: the step's mean and 1/sqrt(var + eps) (for backward), the affine a and b;
  // (2 * channels) double: the sums.
  float* mean_ = nullptr;
  float* variance_ = nullptr;  // the batch's (oneDNN's path)
  float* inv_std_ = nullptr;
  float* a_ = nullptr;
  float* b_ = nullptr;
  double* sums_ = nullptr;
  bool trained_ = false;   // the last forward used the batch's statistics
  std::int64_t rows_ = 0;  // of real samples in the last training forward
};

}  // namespace mixlab::cpu
