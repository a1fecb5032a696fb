// A float32 value as a dtype holds it: Keras's cast of a layer's constants (ReLU's max_value,
// Normalization's mean and variance) to its compute dtype.
#pragma once

#include "engine/core/half.h"
#include "engine/core/precision.h"

namespace mixlab {

inline float round_to_dtype(DType dtype, float v) {
  switch (dtype) {
    case DType::bf16:
      return round_to_bf16(v);
    case DType::f16:
      return round_to_f16(v);
    case DType::f32:
      break;
  }
  return v;
}

}  // namespace mixlab
