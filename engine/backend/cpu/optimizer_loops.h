// The optimizer update and the overflow check over all parameters at once (the executor keeps
// masters, gradients and state as flat float32 arrays in one layout).
#pragma once

#include <cstdint>

#include "engine/ops/optimizer.h"

namespace mixlab::cpu {

struct FlatParams {
  float* master = nullptr;  // (n)
  float* grad = nullptr;    // (n)
  float* state0 = nullptr;  // (n): SGD velocity or Adam m; null when unused
  float* state1 = nullptr;  // (n): Adam v
  std::int64_t n = 0;
};

void apply_update(const OptimizerConfig& config, const FlatParams& p, float grad_scale,
                  std::int64_t iteration);

}  // namespace mixlab::cpu
