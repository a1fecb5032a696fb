// Precision policies (named as in Keras) and the element types they compute and store in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mixlab {

// Keras mixed-precision policies. Mixed policies keep float32 master weights and optimizer state
// and compute in 16 bits; the loss, softmax-with-loss and layers with "dtype": "float32" run in
// float32.
enum class Policy : std::uint8_t { float32, mixed_float16, mixed_bfloat16 };

// Element types of tensors.
enum class DType : std::uint8_t { f32, f16, bf16 };

std::string_view to_string(Policy policy);
std::string_view to_string(DType dtype);
std::optional<Policy> parse_policy(std::string_view name);

// The type a layer computes in under a policy (f32 when the layer is forced to float32).
DType compute_dtype(Policy policy, bool force_float32 = false);
std::size_t dtype_bytes(DType dtype);

}  // namespace mixlab
