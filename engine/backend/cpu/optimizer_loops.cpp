#include "engine/backend/cpu/optimizer_loops.h"

#include <omp.h>

#include <algorithm>

namespace mixlab::cpu {

namespace {

// Loops compiled for AVX-512, AVX2 and the baseline, picked at load time (one binary for every
// x86-64 CPU). Each thread runs one over its share.
#define MIXLAB_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

MIXLAB_CLONES void adam_range(AdamUpdate u, float* w, float* m, float* v, const float* g,
                              std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) u(w[i], m[i], v[i], g[i]);
}

MIXLAB_CLONES void sgd_momentum_range(SgdUpdate u, float* w, float* vel, const float* g,
                                      std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) u(w[i], vel[i], g[i]);
}

MIXLAB_CLONES void sgd_range(SgdUpdate u, float* w, const float* g, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) u(w[i], g[i]);
}

template <class F>
void parallel_ranges(std::int64_t n, F f) {
#pragma omp parallel
  {
    const std::int64_t threads = omp_get_num_threads();
    const std::int64_t t = omp_get_thread_num();
    const std::int64_t chunk = (n + threads - 1) / threads;
    const std::int64_t begin = std::min(n, t * chunk);
    const std::int64_t end = std::min(n, begin + chunk);
    if (end > begin) f(begin, end - begin);
  }
}

}  // namespace

void apply_update(const OptimizerConfig& config, const FlatParams& p, float grad_scale,
                  std::int64_t iteration) {
  if (config.kind == OptimizerKind::adam) {
    const AdamUpdate u = make_adam_update(config, iteration, grad_scale);
    parallel_ranges(p.n, [&](std::int64_t b, std::int64_t n) {
      adam_range(u, p.master + b, p.state0 + b, p.state1 + b, p.grad + b, n);
    });
    return;
  }
  const SgdUpdate u = make_sgd_update(config, grad_scale);
  if (p.state0) {
    parallel_ranges(p.n, [&](std::int64_t b, std::int64_t n) {
      sgd_momentum_range(u, p.master + b, p.state0 + b, p.grad + b, n);
    });
  } else {
    parallel_ranges(
        p.n, [&](std::int64_t b, std::int64_t n) { sgd_range(u, p.master + b, p.grad + b, n); });
  }
}

}  // namespace mixlab::cpu
