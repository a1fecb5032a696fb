#include "engine/core/precision.h"

namespace mixlab {

std::string_view to_string(Policy policy) {
  switch (policy) {
    case Policy::float32:
      return "float32";
    case Policy::mixed_float16:
      return "mixed_float16";
    case Policy::mixed_bfloat16:
      return "mixed_bfloat16";
    case Policy::mixed_float8:
      return "mixed_float8";
  }
  return "?";
}

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "float32";
    case DType::f16:
      return "float16";
    case DType::bf16:
      return "bfloat16";
  }
  return "?";
}

std::optional<Policy> parse_policy(std::string_view name) {
  for (Policy p : kAllPolicies) {
    if (name == to_string(p)) return p;
  }
  return std::nullopt;
}

DType compute_dtype(Policy policy, bool force_float32) {
  if (force_float32) return DType::f32;
  switch (policy) {
    case Policy::float32:
      return DType::f32;
    case Policy::mixed_float16:
      return DType::f16;
    case Policy::mixed_bfloat16:
    case Policy::mixed_float8:
      return DType::bf16;
  }
  return DType::f32;
}

std::size_t dtype_bytes(DType dtype) {
  return dtype == DType::f32 ? 4 : 2;
}

}  // namespace mixlab
