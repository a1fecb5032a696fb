// Conversions between float32 and the two 16-bit formats, round-to-nearest-even, written once
// for the CPU and CUDA. float16 overflows to +-inf and underflows through subnormals to +-0, as
// a GPU's __float2half_rn does; bfloat16 keeps float32's range.
#pragma once

#include <cstdint>
#include <cstring>

#include "engine/core/hd.h"

namespace mixlab {

MIXLAB_HD std::uint32_t float_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

MIXLAB_HD float bits_float(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

MIXLAB_HD std::uint16_t float_to_bf16_bits(float x) {
  // Branch-free so that loops over it vectorise: both results computed, one selected.
  const std::uint32_t u = float_bits(x);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (u >> 16) | 0x40u;
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

MIXLAB_HD float bf16_bits_to_float(std::uint16_t h) {
  return bits_float(static_cast<std::uint32_t>(h) << 16);
}

MIXLAB_HD float round_to_bf16(float x) {
  return bf16_bits_to_float(float_to_bf16_bits(x));
}

MIXLAB_HD std::uint16_t float_to_f16_bits(float x) {
  const std::uint32_t u = float_bits(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {  // below 2^-14: subnormal in float16 (or zero)
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);  // below half the smallest
    const std::uint32_t exp = abs >> 23;
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - exp;  // 14..24 for exponents 102..112
    std::uint32_t half = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t h = ((abs >> 13) - (112u << 10));  // rebias exponent 127 -> 15
  const std::uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

MIXLAB_HD float f16_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    int e = -1;  // normalise the subnormal
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    return bits_float(sign | ((112u - static_cast<std::uint32_t>(e)) << 23) |
                      ((mant & 0x3ffu) << 13));
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

MIXLAB_HD float round_to_f16(float x) {
  return f16_bits_to_float(float_to_f16_bits(x));
}

}  // namespace mixlab
