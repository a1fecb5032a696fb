// MixLab's CUDA kernels (kernels.h) of the training step's end: the step's bookkeeping, the
// overflow check fused with the unscale, the loss-scale state machine (engine/ops/loss_scale.h)
// and the optimizer over all parameters at once (engine/ops/optimizer.h).
#include "engine/backend/cuda/kernels.h"

#include <algorithm>
#include <cmath>

#include "engine/backend/cuda/kernels_common.cuh"
#include "engine/core/half.h"
#include "engine/ops/loss_scale.h"
#include "engine/ops/optimizer.h"

namespace mixlab::cuda::kernels {

namespace {

using namespace detail;

// ---- the step: loss scale, unscale, optimizer ----------------------------------------------

__global__ void begin_step_kernel(DeviceState* state, bool scaling_enabled) {
  state->step_scale = scaling_enabled ? state->scaler.scale : 1.0f;
  state->loss_sum = 0.0f;
  state->correct = 0.0f;
  state->nonfinite = 0;
  state->applied = 0;
}

__device__ __forceinline__ bool is_finite(float v) {
  return (float_bits(v) & 0x7f800000u) != 0x7f800000u;
}

// g = round_T(g) * (1 / step_scale); a non-finite rounded gradient sets state->nonfinite (one
// store per block): the CPU backend's check, which rounds a 16-bit layer's weight gradients to
// its type first (in float16, past 65504 that is inf, as in Keras). T = float rounds nothing.
// float4 over the aligned body, scalars for the tail.
template <class T>
__device__ __forceinline__ float as_raw(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    return to_float(from_float<T>(v));
  }
}

template <class T>
__global__ void unscale_and_check_kernel(float* grads, std::int64_t n, DeviceState* state) {
  const float inv = 1.0f / state->step_scale;
  bool bad = false;
  const std::int64_t n4 = n / 4;
  float4* g4 = reinterpret_cast<float4*>(grads);
  for (std::int64_t i = thread_index(); i < n4; i += thread_stride()) {
    float4 v = g4[i];
    v.x = as_raw<T>(v.x);
    v.y = as_raw<T>(v.y);
    v.z = as_raw<T>(v.z);
    v.w = as_raw<T>(v.w);
    bad |= !(is_finite(v.x) && is_finite(v.y) && is_finite(v.z) && is_finite(v.w));
    v.x *= inv;
    v.y *= inv;
    v.z *= inv;
    v.w *= inv;
    g4[i] = v;
  }
  for (std::int64_t i = n4 * 4 + thread_index(); i < n; i += thread_stride()) {
    const float v = as_raw<T>(grads[i]);
    bad |= !is_finite(v);
    grads[i] = v * inv;
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) state->nonfinite = 1;
}

template <class T>
__global__ void unscale_and_check_scalar_kernel(float* grads, std::int64_t n, DeviceState* state) {
  const float inv = 1.0f / state->step_scale;
  bool bad = false;
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    const float v = as_raw<T>(grads[i]);
    bad |= !is_finite(v);
    grads[i] = v * inv;
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) state->nonfinite = 1;
}

__global__ void update_loss_scale_kernel(DeviceState* state, LossScaleConfig config, bool adam,
                                         double lr, double beta_1, double beta_2) {
  LossScaleState<float> scaler = state->scaler;
  // A non-finite loss counts as the gradients' overflow, as the CPU executor counts it.
  if (!isfinite(state->loss_sum)) state->nonfinite = 1;
  const bool applied = mixlab::update_loss_scale(scaler, config, state->nonfinite == 0);
  state->scaler = scaler;
  state->applied = applied ? 1 : 0;
  if (applied) {
    const std::int64_t t = ++state->iteration;
    if (adam) state->lr_t = mixlab::adam_learning_rate(lr, beta_1, beta_2, t);
  }
}

enum class Rule : std::uint8_t { sgd, momentum, adam };

// w, s0, s1: master and state; Copy: the compute copy's element type, void for none.
template <Rule kRule, class Copy>
__global__ void optimizer_kernel(SgdUpdate sgd, AdamUpdate adam, float* master, const float* grads,
                                 float* state0, float* state1, Copy* copy, std::int64_t n,
                                 const DeviceState* state) {
  if (!state->applied) return;
  if constexpr (kRule == Rule::adam) adam.lr_t = state->lr_t;
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    float w = master[i];
    const float g = grads[i];
    if constexpr (kRule == Rule::sgd) {
      sgd(w, g);
    } else if constexpr (kRule == Rule::momentum) {
      float v = state0[i];
      sgd(w, v, g);
      state0[i] = v;
    } else {
      float m = state0[i], v = state1[i];
      adam(w, m, v, g);
      state0[i] = m;
      state1[i] = v;
    }
    master[i] = w;
    if constexpr (!std::is_void_v<Copy>) copy[i] = from_float<Copy>(w);
  }
}

}  // namespace

void begin_step(DeviceState* state, bool scaling_enabled, cudaStream_t stream) {
  begin_step_kernel<<<1, 1, 0, stream>>>(state, scaling_enabled);
  MIXLAB_CHECK_LAUNCH("begin_step_kernel");
}

void unscale_and_check(float* grads, std::int64_t n, DType raw_dtype, DeviceState* state,
                       cudaStream_t stream) {
  if (n <= 0) return;
  const bool aligned = reinterpret_cast<std::uintptr_t>(grads) % alignof(float4) == 0;
  with_dtype(raw_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (aligned) {
      unscale_and_check_kernel<T><<<grid_for((n + 3) / 4), kBlock, 0, stream>>>(grads, n, state);
    } else {
      unscale_and_check_scalar_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(grads, n, state);
    }
  });
  MIXLAB_CHECK_LAUNCH("unscale_and_check_kernel");
}

void update_loss_scale(DeviceState* state, const LossScaleConfig& config,
                       const OptimizerParams& optimizer, cudaStream_t stream) {
  update_loss_scale_kernel<<<1, 1, 0, stream>>>(state, config, optimizer.kind == OptimizerKind::adam,
                                                optimizer.lr, optimizer.beta_1, optimizer.beta_2);
  MIXLAB_CHECK_LAUNCH("update_loss_scale_kernel");
}

namespace {

template <Rule kRule>
void optimizer_launch(const SgdUpdate& sgd, const AdamUpdate& adam, float* master,
                      const float* grads, float* state0, float* state1, void* copy,
                      DType copy_dtype, std::int64_t n, const DeviceState* state,
                      cudaStream_t stream) {
  const unsigned grid = grid_for(n);
  if (!copy) {
    optimizer_kernel<kRule, void>
        <<<grid, kBlock, 0, stream>>>(sgd, adam, master, grads, state0, state1, nullptr, n, state);
    return;
  }
  with_dtype(copy_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    optimizer_kernel<kRule, T><<<grid, kBlock, 0, stream>>>(
        sgd, adam, master, grads, state0, state1, static_cast<T*>(copy), n, state);
  });
}

}  // namespace

void optimizer_update(const OptimizerParams& optimizer, float* master, const float* grads,
                      float* state0, float* state1, void* copy, DType copy_dtype, std::int64_t n,
                      const DeviceState* state, cudaStream_t stream) {
  if (n <= 0) return;
  // As make_sgd_update / make_adam_update with grad_scale 1 (grads are already unscaled); Adam's
  // lr_t comes from state->lr_t, computed by update_loss_scale.
  SgdUpdate sgd;
  sgd.lr = static_cast<float>(optimizer.lr);
  sgd.momentum = optimizer.momentum;
  sgd.nesterov = optimizer.nesterov;
  sgd.grad_scale = 1.0f;
  AdamUpdate adam;
  adam.one_minus_beta_1 = static_cast<float>(1.0 - optimizer.beta_1);
  adam.one_minus_beta_2 = static_cast<float>(1.0 - optimizer.beta_2);
  adam.epsilon = optimizer.epsilon;
  adam.grad_scale = 1.0f;
  if (optimizer.kind == OptimizerKind::adam) {
    optimizer_launch<Rule::adam>(sgd, adam, master, grads, state0, state1, copy, copy_dtype, n,
                                 state, stream);
  } else if (optimizer.momentum != 0.0f) {
    optimizer_launch<Rule::momentum>(sgd, adam, master, grads, state0, state1, copy, copy_dtype, n,
                                     state, stream);
  } else {
    optimizer_launch<Rule::sgd>(sgd, adam, master, grads, state0, state1, copy, copy_dtype, n,
                                state, stream);
  }
  MIXLAB_CHECK_LAUNCH("optimizer_kernel");
}

}  // namespace mixlab::cuda::kernels
