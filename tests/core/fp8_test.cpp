// FP8 formats (OCP E4M3 / E5M2) and Keras's delayed scaling. tests/keras/parity.py's fp8 part
// compares the conversions with ml_dtypes over every bfloat16 value and float32's edge cases,
// and the scales with keras.quantizers; these tests hold the rules themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/fp8.h"
#include "engine/core/fp8_table.h"
#include "engine/ops/fp8_scaling.h"

namespace mixlab {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(Fp8, E4m3KnownValues) {
  EXPECT_EQ(float_to_e4m3_bits(1.0f), 0x38);
  EXPECT_EQ(float_to_e4m3_bits(-2.0f), 0xc0);
  EXPECT_EQ(float_to_e4m3_bits(448.0f), 0x7e);
  EXPECT_EQ(e4m3_bits_to_float(0x7e), 448.0f);
  EXPECT_EQ(float_to_e4m3_bits(464.0f), 0x7e);  // halfway to 480 (no such value): saturates
  EXPECT_EQ(float_to_e4m3_bits(1e9f), 0x7e);
  EXPECT_EQ(float_to_e4m3_bits(kInf), 0x7e);
  EXPECT_EQ(float_to_e4m3_bits(-kInf), 0xfe);
  EXPECT_EQ(e4m3_bits_to_float(0x01), std::ldexp(1.0f, -9));   // smallest subnormal
  EXPECT_EQ(e4m3_bits_to_float(0x08), std::ldexp(1.0f, -6));   // smallest normal
  EXPECT_EQ(float_to_e4m3_bits(std::ldexp(1.0f, -10)), 0x00);  // tie rounds to even zero
  EXPECT_EQ(float_to_e4m3_bits(std::ldexp(1.0f, -10) * 1.0001f), 0x01);
  EXPECT_EQ(float_to_e4m3_bits(std::ldexp(3.0f, -10)), 0x02);   // tie 1.5 units: to even 2
  EXPECT_EQ(float_to_e4m3_bits(std::ldexp(15.0f, -10)), 0x08);  // 7.5 units: carries to normal
  EXPECT_EQ(float_to_e4m3_bits(1.0625f), 0x38);                 // 1 + 1/16: tie to even 1
  EXPECT_EQ(float_to_e4m3_bits(1.1875f), 0x3a);                 // 1 + 3/16: tie to even 1.25
  EXPECT_EQ(float_to_e4m3_bits(-0.0f), 0x80);
  EXPECT_EQ(float_to_e4m3_bits(std::numeric_limits<float>::denorm_min()), 0x00);
  EXPECT_EQ(float_to_e4m3_bits(kNaN), 0x7f);
  EXPECT_TRUE(std::isnan(e4m3_bits_to_float(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_bits_to_float(0xff)));
}

TEST(Fp8, E5m2KnownValues) {
  EXPECT_EQ(float_to_e5m2_bits(1.0f), 0x3c);
  EXPECT_EQ(float_to_e5m2_bits(57344.0f), 0x7b);
  EXPECT_EQ(e5m2_bits_to_float(0x7b), 57344.0f);
  EXPECT_EQ(float_to_e5m2_bits(61440.0f), 0x7b);  // halfway to 65536: saturates, not inf
  EXPECT_EQ(float_to_e5m2_bits(kInf), 0x7b);
  EXPECT_EQ(float_to_e5m2_bits(-kInf), 0xfb);
  EXPECT_EQ(e5m2_bits_to_float(0x7c), kInf);
  EXPECT_EQ(e5m2_bits_to_float(0xfc), -kInf);
  EXPECT_EQ(e5m2_bits_to_float(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(e5m2_bits_to_float(0x04), std::ldexp(1.0f, -14));
  EXPECT_EQ(float_to_e5m2_bits(std::ldexp(1.0f, -17)), 0x00);
  EXPECT_EQ(float_to_e5m2_bits(std::ldexp(1.0f, -17) * 1.0001f), 0x01);
  EXPECT_EQ(float_to_e5m2_bits(1.125f), 0x3c);  // 1 + 1/8: tie to even 1
  EXPECT_EQ(float_to_e5m2_bits(1.375f), 0x3e);  // 1 + 3/8: tie to even 1.5
  EXPECT_TRUE(std::isnan(round_to_e5m2(kNaN)));
  EXPECT_TRUE(std::isnan(e5m2_bits_to_float(0x7d)));
}

// Every finite code decodes to a value that encodes back to the same code, and the codes of
// each sign are in increasing order of value: the decoder and the encoder are one table.
TEST(Fp8, EveryCodeRoundTripsInOrder) {
  for (Fp8Format format : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    float previous = -1.0f;
    int finite = 0;
    for (int code = 0; code < 0x80; ++code) {
      const auto bits = static_cast<std::uint8_t>(code);
      const float v =
          format == Fp8Format::e4m3 ? e4m3_bits_to_float(bits) : e5m2_bits_to_float(bits);
      if (!std::isfinite(v)) continue;
      ++finite;
      EXPECT_GT(v, previous) << "code " << code;
      previous = v;
      const auto back = format == Fp8Format::e4m3 ? float_to_e4m3_bits(v) : float_to_e5m2_bits(v);
      EXPECT_EQ(back, code);
      const auto negative =
          format == Fp8Format::e4m3 ? float_to_e4m3_bits(-v) : float_to_e5m2_bits(-v);
      EXPECT_EQ(negative, code | 0x80);
    }
    EXPECT_EQ(previous, fp8_max(format));
    EXPECT_EQ(finite, format == Fp8Format::e4m3 ? 127 : 124);
  }
}

// Between two neighbouring values every float32 rounds to the nearer, ties to the even code:
// checked at the midpoint and one float32 step either side of it, over the whole range.
TEST(Fp8, RoundsToNearestEvenBetweenEveryPair) {
  for (Fp8Format format : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    const auto decode = [&](int c) {
      return format == Fp8Format::e4m3 ? e4m3_bits_to_float(static_cast<std::uint8_t>(c))
                                       : e5m2_bits_to_float(static_cast<std::uint8_t>(c));
    };
    for (int code = 0; decode(code + 1) <= fp8_max(format); ++code) {
      const float lo = decode(code);
      const float hi = decode(code + 1);
      const float mid = lo + (hi - lo) / 2;
      EXPECT_EQ(round_to_fp8(format, std::nextafter(mid, 0.0f)), lo);
      EXPECT_EQ(round_to_fp8(format, std::nextafter(mid, kInf)), hi);
      EXPECT_EQ(round_to_fp8(format, mid), code % 2 == 0 ? lo : hi) << "code " << code;
    }
  }
}

TEST(Fp8, QuantizeDequantizeUsesTheScaleAsKerasDoes) {
  // x / scale into E4M3, times scale: 1000 with scale 4 is 250 -> 256 (E4M3's nearest) -> 1024.
  EXPECT_EQ(fp8_quantize_dequantize(Fp8Format::e4m3, 1000.0f, 4.0f), 1024.0f);
  // Saturation happens after the division: 1e6 / 4 saturates at 448, read back as 1792.
  EXPECT_EQ(fp8_quantize_dequantize(Fp8Format::e4m3, 1e6f, 4.0f), 1792.0f);
  EXPECT_EQ(fp8_quantize_dequantize(Fp8Format::e5m2, -3.0f, 0.5f), -3.0f);
}

TEST(Fp8Scaling, NewScaleMapsTheAmaxToTheFormatsMaximum) {
  EXPECT_EQ(fp8_next_scale(448.0f, 1.0f, kE4m3Max, 0), 1.0f);
  EXPECT_EQ(fp8_next_scale(896.0f, 1.0f, kE4m3Max, 0), 2.0f);
  EXPECT_EQ(fp8_next_scale(896.0f, 1.0f, kE4m3Max, 1), 4.0f);  // margin: one binade of headroom
  EXPECT_EQ(fp8_next_scale(0.0f, 3.0f, kE4m3Max, 0), 3.0f);    // nothing seen: the old scale
  EXPECT_EQ(fp8_next_scale(kInf, 3.0f, kE4m3Max, 0), 3.0f);
  EXPECT_EQ(fp8_next_scale(kNaN, 3.0f, kE4m3Max, 0), 3.0f);
  EXPECT_FLOAT_EQ(fp8_next_scale(1.0f, 1.0f, kE5m2Max, 0), 1.0f / 57344.0f);
}

// Keras's order: a step's new scale comes from the history before the step's amax joins it.
TEST(Fp8Scaling, AStepsAmaxReachesTheScaleOneStepLater) {
  Fp8Recipe recipe;
  recipe.history = 3;
  Fp8TensorScaling s(Fp8Format::e4m3, recipe);
  EXPECT_EQ(s.scale(), 1.0f);
  s.update(896.0f);  // history was all zero: the scale stays
  EXPECT_EQ(s.scale(), 1.0f);
  EXPECT_EQ(s.history().front(), 896.0f);
  s.update(224.0f);  // from max(896): 2
  EXPECT_EQ(s.scale(), 2.0f);
  s.update(224.0f);
  EXPECT_EQ(s.scale(), 2.0f);
  s.update(224.0f);  // the history holds the last three amaxes: 896 is still in it
  EXPECT_EQ(s.scale(), 2.0f);
  s.update(224.0f);  // now 896 has left the window of three
  EXPECT_EQ(s.scale(), 0.5f);
}

TEST(Fp8Scaling, MostRecentReadsOnlyTheLastAmax) {
  Fp8Recipe recipe;
  recipe.history = 4;
  recipe.amax = Fp8AmaxAlgo::most_recent;
  Fp8TensorScaling s(Fp8Format::e4m3, recipe);
  s.update(896.0f);
  s.update(224.0f);
  EXPECT_EQ(s.scale(), 2.0f);
  s.update(7.0f);
  EXPECT_EQ(s.scale(), 0.5f);  // 224 alone, though 896 is still in the history
}

TEST(Fp8Scaling, SettingsParseAndPrint) {
  EXPECT_EQ(parse_fp8_amax("most_recent"), Fp8AmaxAlgo::most_recent);
  EXPECT_EQ(parse_fp8_amax("mean"), std::nullopt);
  EXPECT_EQ(parse_fp8_formats("hybrid"), Fp8Formats::hybrid);
  EXPECT_EQ(to_string(Fp8Formats::e4m3), "e4m3");
  Fp8Recipe recipe;
  EXPECT_EQ(recipe.history, 1024);
  EXPECT_EQ(recipe.gradient_format(), Fp8Format::e5m2);
  recipe.formats = Fp8Formats::e4m3;
  EXPECT_EQ(recipe.gradient_format(), Fp8Format::e4m3);
}

}  // namespace
}  // namespace mixlab

namespace mixlab {
namespace {

// The CPU emulation's table (engine/core/fp8_table.h) is round_to_fp8 for every bfloat16, both
// signs, zeros, subnormals, saturation, infinities and NaNs included, bit for bit.
TEST(Fp8, TheRoundingTableIsRoundToFp8ForEveryBfloat16) {
  for (const Fp8Format format : {Fp8Format::e4m3, Fp8Format::e5m2}) {
    const float* table = fp8_rounding_table(format);
    int checked = 0;
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
      const float x = bits_float(b << 16);
      const float want = round_to_fp8(format, x), got = round_bf16_to_fp8(table, x);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << std::hex << b;
      } else {
        EXPECT_EQ(float_bits(got), float_bits(want)) << "bfloat16 0x" << std::hex << b;
      }
      ++checked;
    }
    EXPECT_EQ(checked, 65536);
  }
}

}  // namespace
}  // namespace mixlab
