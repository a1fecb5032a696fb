// The optimizer update rules against Keras's formulas computed in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "engine/ops/optimizer.h"

namespace mixlab {
namespace {

TEST(Optimizer, KerasDefaults) {
  const auto sgd = default_optimizer(OptimizerKind::sgd);
  EXPECT_DOUBLE_EQ(sgd.learning_rate, 0.01);
  EXPECT_DOUBLE_EQ(sgd.momentum, 0.0);
  EXPECT_FALSE(sgd.nesterov);
  const auto adam = default_optimizer(OptimizerKind::adam);
  EXPECT_DOUBLE_EQ(adam.learning_rate, 0.001);
  EXPECT_DOUBLE_EQ(adam.beta_1, 0.9);
  EXPECT_DOUBLE_EQ(adam.beta_2, 0.999);
  EXPECT_DOUBLE_EQ(adam.epsilon, 1e-7);
  EXPECT_EQ(optimizer_state_per_param(adam), 2);
  EXPECT_EQ(optimizer_state_per_param(sgd), 0);
}

TEST(Optimizer, AdamFollowsKerasOverManySteps) {
  const OptimizerConfig c = default_optimizer(OptimizerKind::adam);
  float w = 0.5f, m = 0.0f, v = 0.0f;
  double wd = 0.5, md = 0.0, vd = 0.0;
  for (int t = 1; t <= 50; ++t) {
    const double g = std::sin(t * 0.7) * 0.3 + 0.05;  // raw gradient
    const double scale = 1024.0;                      // as if the loss were scaled
    make_adam_update(c, t, static_cast<float>(1.0 / scale))(w, m, v, static_cast<float>(g * scale));
    const double lr_t =
        c.learning_rate * std::sqrt(1 - std::pow(c.beta_2, t)) / (1 - std::pow(c.beta_1, t));
    md += (g - md) * (1 - c.beta_1);
    vd += (g * g - vd) * (1 - c.beta_2);
    wd -= lr_t * md / (std::sqrt(vd) + c.epsilon);
  }
  EXPECT_NEAR(w, wd, 1e-5);
  EXPECT_NEAR(m, md, 1e-6);
  EXPECT_NEAR(v, vd, 1e-7);
}

TEST(Optimizer, SgdPlainMomentumAndNesterov) {
  OptimizerConfig c = default_optimizer(OptimizerKind::sgd);
  float w = 1.0f;
  make_sgd_update(c, 0.5f)(w, 4.0f);  // g = 4 * 0.5 = 2
  EXPECT_FLOAT_EQ(w, 1.0f - 0.01f * 2.0f);

  c.momentum = 0.9;
  float wm = 1.0f, vel = 0.0f;
  double wmd = 1.0, veld = 0.0;
  c.nesterov = true;
  float wn = 1.0f, veln = 0.0f;
  double wnd = 1.0, velnd = 0.0;
  for (int t = 0; t < 10; ++t) {
    const double g = 0.1 * (t + 1);
    OptimizerConfig plain = c;
    plain.nesterov = false;
    make_sgd_update(plain, 1.0f)(wm, vel, static_cast<float>(g));
    veld = 0.9 * veld - 0.01 * g;
    wmd += veld;
    make_sgd_update(c, 1.0f)(wn, veln, static_cast<float>(g));
    velnd = 0.9 * velnd - 0.01 * g;
    wnd += 0.9 * velnd - 0.01 * g;
  }
  EXPECT_NEAR(wm, wmd, 1e-6);
  EXPECT_NEAR(wn, wnd, 1e-6);
  EXPECT_NE(wm, wn) << "Nesterov must differ from plain momentum";
}

// Adam's bias-corrected learning rate, shared by the host and the CUDA step: the same float as
// make_adam_update computed before it was factored out, and Keras's definition
// lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) (Keras: t = iterations + 1) to float precision.
TEST(Optimizer, AdamLearningRateIsTheOldFormulaAndKeras) {
  struct Case {
    double lr, beta_1, beta_2;
  };
  for (const Case c : {Case{0.001, 0.9, 0.999}, Case{0.01, 0.8, 0.99}, Case{3e-4, 0.95, 0.9999}}) {
    for (const std::int64_t t :
         {std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, std::int64_t{10}, std::int64_t{100},
          std::int64_t{1000}, std::int64_t{12345}, std::int64_t{1000000}}) {
      const double td = static_cast<double>(t);
      const float old_formula = static_cast<float>(c.lr * std::sqrt(1.0 - std::pow(c.beta_2, td)) /
                                                   (1.0 - std::pow(c.beta_1, td)));
      const float shared = adam_learning_rate(c.lr, c.beta_1, c.beta_2, t);
      EXPECT_EQ(shared, old_formula) << "t = " << t;
      // Keras, from its iteration counter (0-based before the update).
      const std::int64_t iterations = t - 1;
      const double beta_1_power = std::pow(c.beta_1, static_cast<double>(iterations + 1));
      const double beta_2_power = std::pow(c.beta_2, static_cast<double>(iterations + 1));
      const double keras = c.lr * std::sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power);
      EXPECT_NEAR(shared, keras, keras * 1e-7) << "t = " << t;
      OptimizerConfig config = default_optimizer(OptimizerKind::adam);
      config.learning_rate = c.lr;
      config.beta_1 = c.beta_1;
      config.beta_2 = c.beta_2;
      EXPECT_EQ(make_adam_update(config, t, 1.0f).lr_t, shared) << "t = " << t;
    }
  }
  // The first step's values, worked out by hand: lr * sqrt(0.001) / 0.1.
  EXPECT_FLOAT_EQ(adam_learning_rate(0.001, 0.9, 0.999, 1),
                  static_cast<float>(0.001 * 0.031622776601683794 / 0.1));
}

TEST(Optimizer, ParsesNames) {
  EXPECT_EQ(parse_optimizer("sgd"), OptimizerKind::sgd);
  EXPECT_EQ(parse_optimizer("adam"), OptimizerKind::adam);
  EXPECT_FALSE(parse_optimizer("rmsprop"));
}

}  // namespace
}  // namespace mixlab
