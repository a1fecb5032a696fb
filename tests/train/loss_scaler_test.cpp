// The loss-scaler state machine (Keras's LossScaleOptimizer): growth, backoff, floor, skip.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "engine/ops/loss_scale.h"

namespace mixlab {
namespace {

// A run's loss scaling as the CPU executor keeps it: a configuration and a state.
struct LossScaler {
  explicit LossScaler(const LossScaleConfig& config)
      : config(config), state(initial_loss_scale<double>(config)) {}
  double scale() const { return state.scale; }
  std::int64_t good_steps() const { return state.good_steps; }
  bool update(bool finite) { return update_loss_scale(state, config, finite); }
  LossScaleConfig config;
  LossScaleState<double> state;
};

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

// The state machine in float (the CUDA step's, in device memory) and in double (the CPU
// executor's) takes the same steps: with power-of-two factors the scales are the same numbers.
LossScaleConfig config_of(bool dynamic, std::int64_t growth_interval) {
  LossScaleConfig config = dynamic ? LossScaleConfig::dynamic() : LossScaleConfig::fixed(1.0);
  config.growth_interval = growth_interval;
  return config;
}

void expect_same_steps(bool dynamic, std::int64_t growth_interval, double overflow_rate,
                       int burst_period, double initial_scale, int steps) {
  LossScaleState<float> f;
  LossScaleState<double> d;
  f.scale = static_cast<float>(initial_scale);
  d.scale = initial_scale;
  const LossScaleConfig config = config_of(dynamic, growth_interval);
  std::mt19937_64 rng(7);
  std::bernoulli_distribution overflow(overflow_rate);
  int skipped = 0, grew = 0, floored = 0;
  for (int i = 0; i < steps; ++i) {
    // Isolated overflows, and bursts of 20 in a row (down to min_scale) every burst_period.
    const bool finite = !(overflow(rng) || i % burst_period < 20);
    const double before = d.scale;
    const bool applied_f = update_loss_scale(f, config, finite);
    const bool applied_d = update_loss_scale(d, config, finite);
    ASSERT_EQ(applied_f, applied_d) << "step " << i;
    ASSERT_EQ(applied_d, finite) << "step " << i;
    ASSERT_EQ(static_cast<double>(f.scale), d.scale) << "step " << i;
    ASSERT_EQ(f.good_steps, d.good_steps) << "step " << i;
    skipped += !applied_d;
    grew += d.scale > before;
    floored += !finite && d.scale == before && dynamic;
  }
  EXPECT_GT(skipped, 0);
  if (dynamic) {
    EXPECT_GT(grew, 0) << "the sequence never grew the scale";
    EXPECT_GT(floored, 0) << "the sequence never reached min_scale";
  } else {
    EXPECT_EQ(d.scale, initial_scale);
  }
}

TEST(LossScaleState, FloatAndDoubleTakeTheSameDynamicSteps) {
  expect_same_steps(true, 8, 0.08, 997, 32768.0, 200000);
  expect_same_steps(true, 2000, 0.0002, 20011, 32768.0, 200000);
}

TEST(LossScaleState, FloatAndDoubleTakeTheSameFixedSteps) {
  expect_same_steps(false, 2000, 0.01, 997, 1024.0, 50000);
  expect_same_steps(false, 2000, 0.01, 997, 1.0, 50000);
}

}  // namespace
}  // namespace mixlab
