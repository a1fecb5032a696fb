// The two FP8 formats of the OCP 8-bit floating point specification (v1.0), written once for the
// CPU and CUDA:
//   E4M3 ("float8_e4m3fn"): 4 exponent bits (bias 7), 3 mantissa bits, no infinities, NaN is
//        S.1111.111; largest finite 448, smallest subnormal 2^-9.
//   E5M2 ("float8_e5m2"):   5 exponent bits (bias 15), 2 mantissa bits, IEEE-like infinities and
//        NaNs; largest finite 57344, smallest subnormal 2^-16.
// From float32: round to nearest even, through subnormals to +-0, and saturating: anything past
// the largest finite value, infinities included, becomes +-max, as Transformer Engine's casts
// (__NV_SATFINITE) and Keras's quantize_and_dequantize (clip, then cast) do. NaN stays NaN.
#pragma once

#include <cstdint>

#include "engine/core/half.h"
#include "engine/core/hd.h"

namespace mixlab {

enum class Fp8Format : std::uint8_t { e4m3, e5m2 };

constexpr float kE4m3Max = 448.0f;
constexpr float kE5m2Max = 57344.0f;

constexpr float fp8_max(Fp8Format format) {
  return format == Fp8Format::e4m3 ? kE4m3Max : kE5m2Max;
}

namespace fp8_detail {

// Exponent and mantissa widths, the bias, the code of the largest finite value and of the NaN
// produced, per format.
template <int E, int M>
struct Layout {
  static constexpr std::uint32_t kMant = M;
  static constexpr std::uint32_t kBias = (1u << (E - 1)) - 1u;
  // float32 exponent field of the format's smallest normal, 2^(1 - bias).
  static constexpr std::uint32_t kMinNormalExp = 127u + 1u - kBias;
};

template <typename L>
MIXLAB_HD std::uint8_t encode(float x, std::uint32_t max_code, std::uint32_t nan_code) {
  const std::uint32_t u = float_bits(x);
  const std::uint32_t sign = (u >> 24) & 0x80u;
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint8_t>(sign | nan_code);
  if (abs >= 0x7f800000u) return static_cast<std::uint8_t>(sign | max_code);  // +-inf saturates
  std::uint32_t code;
  if ((abs >> 23) >= L::kMinNormalExp) {
    constexpr std::uint32_t drop = 23u - L::kMant;
    code = (abs >> drop) - ((127u - L::kBias) << L::kMant);  // rebias the exponent
    const std::uint32_t rem = abs & ((1u << drop) - 1u);
    const std::uint32_t mid = 1u << (drop - 1u);
    if (rem > mid || (rem == mid && (code & 1u))) ++code;  // a carry moves into the exponent
    if (code > max_code) code = max_code;
  } else {
    // Subnormal in the format (or zero): the value in units of the smallest subnormal,
    // 2^(1 - bias - M), rounded to nearest even.
    const std::uint32_t exp = abs >> 23;
    constexpr std::uint32_t top = 150u + 1u - L::kBias - L::kMant;  // shift = top - exp
    if (exp + 24u < top) return static_cast<std::uint8_t>(sign);    // below half the smallest
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;       // exp >= 1 from here on
    const std::uint32_t shift = top - exp;                          // 21..24 (E4M3), 22..24 (E5M2)
    code = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (code & 1u))) ++code;  // may become the smallest normal
  }
  return static_cast<std::uint8_t>(sign | code);
}

template <typename L>
MIXLAB_HD float decode(std::uint8_t bits) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(bits) & 0x80u) << 24;
  const std::uint32_t exp = (bits >> L::kMant) & ((0x7fu >> L::kMant));
  const std::uint32_t mant = bits & ((1u << L::kMant) - 1u);
  if (exp == 0) {
    // mant x 2^(1 - bias - M), exact in float32; the sign kept for -0.
    const float magnitude =
        static_cast<float>(mant) * bits_float((127u + 1u - L::kBias - L::kMant) << 23);
    return bits_float(sign | float_bits(magnitude));
  }
  return bits_float(sign | ((exp - L::kBias + 127u) << 23) | (mant << (23u - L::kMant)));
}

using E4m3 = Layout<4, 3>;
using E5m2 = Layout<5, 2>;

}  // namespace fp8_detail

// E4M3: 0x7e is 448; the NaN produced is S.1111.111 (the format's only NaN).
MIXLAB_HD std::uint8_t float_to_e4m3_bits(float x) {
  return fp8_detail::encode<fp8_detail::E4m3>(x, 0x7eu, 0x7fu);
}

MIXLAB_HD float e4m3_bits_to_float(std::uint8_t bits) {
  if ((bits & 0x7fu) == 0x7fu) return bits_float(0x7fc00000u | ((bits & 0x80u) << 24));
  return fp8_detail::decode<fp8_detail::E4m3>(bits);
}

// E5M2: 0x7b is 57344; 0x7c is infinity (never produced from float32: saturated); the NaN
// produced is the quiet S.11111.10.
MIXLAB_HD std::uint8_t float_to_e5m2_bits(float x) {
  return fp8_detail::encode<fp8_detail::E5m2>(x, 0x7bu, 0x7eu);
}

MIXLAB_HD float e5m2_bits_to_float(std::uint8_t bits) {
  if ((bits & 0x7cu) == 0x7cu) {  // exponent all ones: infinity or NaN
    const std::uint32_t sign = (static_cast<std::uint32_t>(bits) & 0x80u) << 24;
    return bits_float(sign | ((bits & 0x3u) == 0 ? 0x7f800000u : 0x7fc00000u));
  }
  return fp8_detail::decode<fp8_detail::E5m2>(bits);
}

MIXLAB_HD float round_to_e4m3(float x) {
  return e4m3_bits_to_float(float_to_e4m3_bits(x));
}
MIXLAB_HD float round_to_e5m2(float x) {
  return e5m2_bits_to_float(float_to_e5m2_bits(x));
}

MIXLAB_HD float round_to_fp8(Fp8Format format, float x) {
  return format == Fp8Format::e4m3 ? round_to_e4m3(x) : round_to_e5m2(x);
}

// Keras's quantize_and_dequantize with a per-tensor scale (Keras's `scale`, the dequantising
// factor): x / scale rounded into the format, saturated, and multiplied back by scale.
MIXLAB_HD float fp8_quantize_dequantize(Fp8Format format, float x, float scale) {
  return round_to_fp8(format, x / scale) * scale;
}

// The same in a bfloat16 compute dtype, as Keras's mixed_bfloat16 layers run it under
// model.quantize("float8") (mixed_float8's layers): the scale cast to bfloat16 (`scale_bf16`),
// x / scale rounded to bfloat16, clipped and cast into the format, and the product with the
// scale rounded to bfloat16 again (XLA computes each bfloat16 operation in float32 and rounds its
// result).
// fp8_quantize_bf16 is the first half: the value in the format (as a float).
MIXLAB_HD float fp8_quantize_bf16(Fp8Format format, float x, float scale_bf16) {
  return round_to_fp8(format, round_to_bf16(x / scale_bf16));
}

MIXLAB_HD float fp8_quantize_dequantize_bf16(Fp8Format format, float x, float scale_bf16) {
  return round_to_bf16(fp8_quantize_bf16(format, x, scale_bf16) * scale_bf16);
}

}  // namespace mixlab
