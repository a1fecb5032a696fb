// The CPU emulation's FP8 rounding by table. Under mixed_float8 every value is bfloat16 before it
// is rounded into FP8 (fp8.h's fp8_quantize_bf16), and a bfloat16 has 2^15 magnitudes: a table
// of their FP8 roundings gives round_to_fp8 bit for bit (NaN kept, saturation, subnormals) for a
// load where the arithmetic takes a dozen branches. Host only; 128 KiB a format, built once.
#pragma once

#include <cstdint>

#include "engine/core/fp8.h"

namespace mixlab {

// round_to_fp8(format, |b|) for every bfloat16 magnitude b (its bits 0..0x7fff).
const float* fp8_rounding_table(Fp8Format format);

// round_to_fp8(format, x) for a float32 `x` that is a bfloat16 (its low 16 bits zero).
inline float round_bf16_to_fp8(const float* table, float x) {
  const std::uint32_t bits = float_bits(x);
  return bits_float(float_bits(table[(bits >> 16) & 0x7fffu]) | (bits & 0x80000000u));
}

}  // namespace mixlab
