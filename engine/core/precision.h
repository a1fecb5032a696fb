// Precision policies (named as in Keras) and the element types they compute and store in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mixlab {

// Keras mixed-precision policies. Mixed policies keep float32 master weights and optimizer state
// and compute in 16 bits; the loss, softmax-with-loss and layers with "dtype": "float32" run in
// float32. mixed_float8 (issue 30) is mixed_bfloat16 whose Dense and Conv2D matmuls take their
// inputs and weights in FP8 E4M3 and their output gradients in E5M2, each tensor with its own
// delayed scale (engine/ops/fp8_scaling.h), as Keras's model.quantize("float8") trains.
enum class Policy : std::uint8_t { float32, mixed_float16, mixed_bfloat16, mixed_float8 };

// Every policy, in the order the screens list them.
inline constexpr Policy kAllPolicies[] = {Policy::float32, Policy::mixed_float16,
                                          Policy::mixed_bfloat16, Policy::mixed_float8};

// Element types of tensors.
enum class DType : std::uint8_t { f32, f16, bf16 };

std::string_view to_string(Policy policy);
std::string_view to_string(DType dtype);
std::optional<Policy> parse_policy(std::string_view name);

// The type a layer computes in under a policy (f32 when the layer is forced to float32);
// mixed_float8's layers compute in bfloat16 around their FP8 matmuls.
DType compute_dtype(Policy policy, bool force_float32 = false);
std::size_t dtype_bytes(DType dtype);

}  // namespace mixlab
