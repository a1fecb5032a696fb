// The loss-scaler state machine (Keras's LossScaleOptimizer): growth, backoff, floor, skip.
#include <gtest/gtest.h>

#include "engine/train/loss_scaler.h"

namespace mixlab {
namespace {

TEST(LossScaler, DynamicStartsAt2To15AndDoublesAfter2000FiniteSteps) {
  LossScaler s(LossScaleConfig::dynamic());
  EXPECT_EQ(s.scale(), 32768.0);
  for (int i = 0; i < 1999; ++i) ASSERT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 32768.0) << "grew before the 2000th finite step";
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_EQ(s.good_steps(), 0);
}

TEST(LossScaler, DynamicHalvesAndSkipsOnOverflowAndRestartsTheCount) {
  LossScaler s(LossScaleConfig::dynamic());
  for (int i = 0; i < 1500; ++i) s.update(true);
  EXPECT_FALSE(s.update(false)) << "a non-finite step must be skipped";
  EXPECT_EQ(s.scale(), 16384.0);
  EXPECT_EQ(s.good_steps(), 0);
  for (int i = 0; i < 1999; ++i) s.update(true);
  EXPECT_EQ(s.scale(), 16384.0) << "the growth count must restart after an overflow";
  s.update(true);
  EXPECT_EQ(s.scale(), 32768.0);
}

TEST(LossScaler, DynamicNeverGoesBelowOne) {
  LossScaler s(LossScaleConfig::dynamic());
  for (int i = 0; i < 40; ++i) EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 1.0);
}

TEST(LossScaler, StaticKeepsItsFactorButStillSkipsNonFiniteSteps) {
  LossScaler s(LossScaleConfig::fixed(1024.0));
  EXPECT_EQ(s.scale(), 1024.0);
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 1024.0);
  for (int i = 0; i < 5000; ++i) EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 1024.0);
}

TEST(LossScaler, NoneIsScaleOneAndSkipsNonFinite) {
  LossScaler s(LossScaleConfig::none());
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_FALSE(s.update(false));
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 1.0);
}

TEST(LossScaler, ParsesTheCommandLineForms) {
  EXPECT_EQ(parse_loss_scale("none")->mode, LossScaleConfig::Mode::none);
  EXPECT_EQ(parse_loss_scale("dynamic")->mode, LossScaleConfig::Mode::dynamic);
  EXPECT_EQ(parse_loss_scale("dynamic")->initial_scale, 32768.0);
  const auto d = parse_loss_scale("dynamic:16777216");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->mode, LossScaleConfig::Mode::dynamic);
  EXPECT_EQ(d->initial_scale, 16777216.0);
  const auto f = parse_loss_scale("128");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->mode, LossScaleConfig::Mode::fixed);
  EXPECT_EQ(f->initial_scale, 128.0);
  for (const char* bad : {"", "0", "-4", "abc", "12x", "dynamic:", "dynamic:-1", "inf", "nan"}) {
    EXPECT_FALSE(parse_loss_scale(bad)) << bad;
  }
  for (const char* text : {"none", "dynamic", "dynamic:1024", "512"}) {
    EXPECT_EQ(parse_loss_scale(text)->to_string(), text);
  }
}

}  // namespace
}  // namespace mixlab
