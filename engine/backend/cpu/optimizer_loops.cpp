#include "engine/backend/cpu/optimizer_loops.h"

#include <omp.h>

#include <algorithm>

#include "engine/core/error.h"
#include "engine/core/half.h"

namespace mixlab::cpu {

namespace {

// What the loop writes besides master and state.
enum class CopyOut { none, bf16, f16 };

// Returns non-zero when a gradient in the range was inf or NaN (checked in the same pass).
// Pointers are hoisted and the check is arithmetic, so that the loop vectorises.
template <Storage G, CopyOut C, class Step>
__attribute__((always_inline)) inline std::uint32_t update_range(const Step& step,
                                                                 const SlotArrays& p,
                                                                 std::int64_t begin,
                                                                 std::int64_t end) {
  float* const w = p.master;
  float* const s0 = p.state0;
  float* const s1 = p.state1;
  const void* const grad = p.grad;
  void* const copy = p.copy;
  std::uint32_t bad = 0;
#pragma omp simd reduction(| : bad)
  for (std::int64_t i = begin; i < end; ++i) {
    const float g = load<G>(grad, i);
    // Exponent all ones (inf or NaN) carries into bit 31.
    bad |= ((float_bits(g) & 0x7f800000u) + 0x00800000u) >> 31;
    step(w, s0, s1, i, g);
    if constexpr (C == CopyOut::bf16) {
      static_cast<std::uint16_t*>(copy)[i] = float_to_bf16_bits(w[i]);
    } else if constexpr (C == CopyOut::f16) {
      static_cast<float*>(copy)[i] = round_to_f16(w[i]);
    }
  }
  return bad;
}

struct AdamStep {
  AdamUpdate u;
  void operator()(float* w, float* m, float* v, std::int64_t i, float g) const {
    u(w[i], m[i], v[i], g);
  }
};
struct MomentumStep {
  SgdUpdate u;
  void operator()(float* w, float* vel, float*, std::int64_t i, float g) const {
    u(w[i], vel[i], g);
  }
};
struct SgdStep {
  SgdUpdate u;
  void operator()(float* w, float*, float*, std::int64_t i, float g) const { u(w[i], g); }
};

// One function per combination, each compiled for AVX-512, AVX2 and the baseline and picked at
// load time (one binary for every x86-64 CPU).
#define MIXLAB_UPDATE_KERNEL(NAME, STEP, G, C)                                       \
  __attribute__((target_clones("avx512f", "avx2", "default"))) std::uint32_t NAME(   \
      const STEP& step, const SlotArrays& p, std::int64_t begin, std::int64_t end) { \
    return update_range<G, C>(step, p, begin, end);                                  \
  }
MIXLAB_UPDATE_KERNEL(adam_f32, AdamStep, Storage::f32, CopyOut::none)
MIXLAB_UPDATE_KERNEL(adam_f32_bf16, AdamStep, Storage::f32, CopyOut::bf16)
MIXLAB_UPDATE_KERNEL(adam_f32_f16, AdamStep, Storage::f32, CopyOut::f16)
MIXLAB_UPDATE_KERNEL(adam_bf16_bf16, AdamStep, Storage::bf16, CopyOut::bf16)
MIXLAB_UPDATE_KERNEL(momentum_f32, MomentumStep, Storage::f32, CopyOut::none)
MIXLAB_UPDATE_KERNEL(momentum_f32_bf16, MomentumStep, Storage::f32, CopyOut::bf16)
MIXLAB_UPDATE_KERNEL(momentum_f32_f16, MomentumStep, Storage::f32, CopyOut::f16)
MIXLAB_UPDATE_KERNEL(momentum_bf16_bf16, MomentumStep, Storage::bf16, CopyOut::bf16)
MIXLAB_UPDATE_KERNEL(sgd_f32, SgdStep, Storage::f32, CopyOut::none)
MIXLAB_UPDATE_KERNEL(sgd_f32_bf16, SgdStep, Storage::f32, CopyOut::bf16)
MIXLAB_UPDATE_KERNEL(sgd_f32_f16, SgdStep, Storage::f32, CopyOut::f16)
MIXLAB_UPDATE_KERNEL(sgd_bf16_bf16, SgdStep, Storage::bf16, CopyOut::bf16)
#undef MIXLAB_UPDATE_KERNEL

template <class Step, class Kernel>
bool parallel(const Step& step, const SlotArrays& p, Kernel kernel) {
  const std::int64_t n = p.n;
  if (n < 4096) return kernel(step, p, 0, n) == 0;  // a bias: not worth waking the team
  std::uint32_t bad = 0;
#pragma omp parallel reduction(| : bad)
  {
    const std::int64_t threads = omp_get_num_threads();
    const std::int64_t t = omp_get_thread_num();
    const std::int64_t chunk = (n + threads - 1) / threads / 16 * 16 + 16;
    const std::int64_t begin = std::min(n, t * chunk);
    const std::int64_t end = std::min(n, begin + chunk);
    if (end > begin) bad |= kernel(step, p, begin, end);
  }
  return bad == 0;
}

// Kernels by (gradient storage, copy written): (f32, none), (f32, bf16), (f32, f16), (bf16, bf16).
template <class Step, class K>
bool dispatch(const Step& step, const SlotArrays& p, K f32, K f32_bf16, K f32_f16, K bf16_bf16) {
  const bool copy = p.copy != nullptr;
  if (p.grad_storage == Storage::bf16) {
    MIXLAB_ASSERT(copy && p.copy_storage == Storage::bf16);
    return parallel(step, p, bf16_bf16);
  } else if (copy && p.copy_storage == Storage::bf16) {
    return parallel(step, p, f32_bf16);
  } else if (copy && p.copy_storage == Storage::f16) {
    return parallel(step, p, f32_f16);
  } else {
    MIXLAB_ASSERT(!copy);
    return parallel(step, p, f32);
  }
}

}  // namespace

bool apply_update(const OptimizerConfig& config, const SlotArrays& p, float grad_scale,
                  std::int64_t iteration) {
  if (config.kind == OptimizerKind::adam) {
    return dispatch(AdamStep{make_adam_update(config, iteration, grad_scale)}, p, adam_f32,
                    adam_f32_bf16, adam_f32_f16, adam_bf16_bf16);
  }
  if (p.state0) {
    return dispatch(MomentumStep{make_sgd_update(config, grad_scale)}, p, momentum_f32,
                    momentum_f32_bf16, momentum_f32_f16, momentum_bf16_bf16);
  }
  return dispatch(SgdStep{make_sgd_update(config, grad_scale)}, p, sgd_f32, sgd_f32_bf16,
                  sgd_f32_f16, sgd_bf16_bf16);
}

}  // namespace mixlab::cpu
