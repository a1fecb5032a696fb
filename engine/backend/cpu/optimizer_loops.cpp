#include "engine/backend/cpu/optimizer_loops.h"

#include <omp.h>

#include <algorithm>

#include "engine/core/error.h"
#include "engine/core/half.h"

namespace mixlab::cpu {

namespace {

// What the loop writes besides master and state.
enum class CopyOut { none, bf16, f16, bf16_emulated };

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
    } else if constexpr (C == CopyOut::bf16_emulated) {
      static_cast<float*>(copy)[i] = round_to_bf16(w[i]);
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
// The kernels of one optimizer, by (gradient storage, copy written).
template <class Step>
struct Kernels {
  using K = std::uint32_t (*)(const Step&, const SlotArrays&, std::int64_t, std::int64_t);
  K f32;            // (f32, none)
  K f32_bf16;       // (f32, bf16)
  K f32_f16;        // (f32, float16-rounded float32)
  K f32_bf16_emul;  // (f32, bfloat16-rounded float32)
  K bf16_bf16;      // (bf16, bf16)
};
#define MIXLAB_UPDATE_KERNELS(PREFIX, STEP)                                            \
  MIXLAB_UPDATE_KERNEL(PREFIX##_f32, STEP, Storage::f32, CopyOut::none)                \
  MIXLAB_UPDATE_KERNEL(PREFIX##_f32_bf16, STEP, Storage::f32, CopyOut::bf16)           \
  MIXLAB_UPDATE_KERNEL(PREFIX##_f32_f16, STEP, Storage::f32, CopyOut::f16)             \
  MIXLAB_UPDATE_KERNEL(PREFIX##_f32_bf16e, STEP, Storage::f32, CopyOut::bf16_emulated) \
  MIXLAB_UPDATE_KERNEL(PREFIX##_bf16_bf16, STEP, Storage::bf16, CopyOut::bf16)         \
  constexpr Kernels<STEP> PREFIX##_kernels{PREFIX##_f32, PREFIX##_f32_bf16, PREFIX##_f32_f16, \
                                           PREFIX##_f32_bf16e, PREFIX##_bf16_bf16};
MIXLAB_UPDATE_KERNELS(adam, AdamStep)
MIXLAB_UPDATE_KERNELS(momentum, MomentumStep)
MIXLAB_UPDATE_KERNELS(sgd, SgdStep)
#undef MIXLAB_UPDATE_KERNELS
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

template <class Step>
bool dispatch(const Step& step, const SlotArrays& p, const Kernels<Step>& k) {
  const bool copy = p.copy != nullptr;
  if (p.grad_storage == Storage::bf16) {
    MIXLAB_ASSERT(copy && p.copy_storage == Storage::bf16);
    return parallel(step, p, k.bf16_bf16);
  }
  if (!copy) return parallel(step, p, k.f32);
  switch (p.copy_storage) {
    case Storage::bf16:
      return parallel(step, p, k.f32_bf16);
    case Storage::f16:
      return parallel(step, p, k.f32_f16);
    case Storage::bf16_emulated:
      return parallel(step, p, k.f32_bf16_emul);
    case Storage::f32:
      break;
  }
  MIXLAB_ASSERT(!"a float32 copy is the master itself");
  return false;
}

}  // namespace

bool apply_update(const OptimizerConfig& config, const SlotArrays& p, float grad_scale,
                  std::int64_t iteration) {
  if (config.kind == OptimizerKind::adam) {
    return dispatch(AdamStep{make_adam_update(config, iteration, grad_scale)}, p, adam_kernels);
  }
  if (p.state0) {
    return dispatch(MomentumStep{make_sgd_update(config, grad_scale)}, p, momentum_kernels);
  }
  return dispatch(SgdStep{make_sgd_update(config, grad_scale)}, p, sgd_kernels);
}

}  // namespace mixlab::cpu
