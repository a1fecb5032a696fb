// float16 / bfloat16 conversions: round to nearest even, overflow, subnormals, NaN; and, where
// the CPU has F16C, bit-exact agreement with the hardware's conversion over a sweep of floats.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "engine/core/half.h"

namespace mixlab {
namespace {

TEST(Half, Float16KnownValues) {
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7bff);  // largest finite
  EXPECT_EQ(float_to_f16_bits(65519.0f), 0x7bff);  // still rounds down
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7c00);  // rounds to inf
  EXPECT_EQ(float_to_f16_bits(1e6f), 0x7c00);
  EXPECT_EQ(float_to_f16_bits(-1e6f), 0xfc00);
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie rounds to even zero
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(float_to_f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_TRUE(std::isnan(round_to_f16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(round_to_f16(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_bits_to_float(0x3555), 0.333251953125f);
}

TEST(Half, Float16RoundTripsEveryHalf) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_bits_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_f16_bits(f), h) << std::hex << h;
  }
}

TEST(Half, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(round_to_bf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);  // tie to even
  EXPECT_EQ(round_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::max()),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(round_to_bf16(255.0f), 255.0f);  // pixel values are exact
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) std::uint16_t hardware_f16(float x) {
  return static_cast<std::uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
}

TEST(Half, Float16MatchesF16cHardware) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C instructions";
  // Every 97th float bit pattern: all exponents, many mantissas, both signs.
  for (std::uint64_t u = 0; u <= 0xffffffffull; u += 97) {
    const float x = bits_float(static_cast<std::uint32_t>(u));
    if (std::isnan(x)) continue;
    ASSERT_EQ(float_to_f16_bits(x), hardware_f16(x)) << std::hex << u;
  }
}
#endif

}  // namespace
}  // namespace mixlab
