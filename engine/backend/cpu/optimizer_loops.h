// The optimizer update of one parameter group in one pass: read the gradient (float32 or
// bfloat16), update the float32 master and state, and write the layer's compute copy when it
// shares the master's element order (bfloat16, or float32 rounded to float16 or bfloat16).
#pragma once

#include <cstdint>

#include "engine/backend/cpu/cpu_tensor.h"
#include "engine/ops/optimizer.h"

namespace mixlab::cpu {

struct SlotArrays {
  float* master = nullptr;     // (n)
  const void* grad = nullptr;  // (n) in grad_storage
  Storage grad_storage = Storage::f32;
  float* state0 = nullptr;  // (n): SGD velocity or Adam m; null when unused
  float* state1 = nullptr;  // (n): Adam v
  void* copy = nullptr;     // (n) in copy_storage, or null: not written here
  Storage copy_storage = Storage::f32;
  std::int64_t n = 0;
};

// Returns whether every gradient it read was finite.
bool apply_update(const OptimizerConfig& config, const SlotArrays& p, float grad_scale,
                  std::int64_t iteration);

}  // namespace mixlab::cpu
