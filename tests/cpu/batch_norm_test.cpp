// BatchNormalization's state on the CPU backend: the moving statistics Keras keeps (updated by
// momentum from the batch's biased moments while training, left alone by the optimizer), the
// inference path that reads them, and a padded last batch whose zero rows must not enter the
// statistics nor receive a gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/backend/backend.h"
#include "engine/backend/op_access.h"
#include "engine/spec/shape_inference.h"
#include "tests/cpu/layers.h"
#include "tests/cpu/reference.h"

namespace mixlab {
namespace {

using namespace test_layers;

constexpr int kBatch = 4;
constexpr int kChannels = 3;

ModelSpec bn_model(double momentum) {
  ModelSpec spec;
  spec.name = "bn";
  spec.input_shape = {2, 2, kChannels};
  spec.layers = {batch_norm(true, true, momentum), simple(LayerType::Flatten), dense(2)};
  return spec;
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float offset) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng) * 2.0f + offset;
  return v;
}

std::vector<double> to_double(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

std::unique_ptr<ModelExecutor> compile(const ModelSpec& spec) {
  ExecutorOptions options;
  options.batch_size = kBatch;
  options.input_gradient = true;
  options.optimizer.kind = OptimizerKind::sgd;
  options.optimizer.learning_rate = 0.1;
  return make_cpu_backend(2)->compile(spec, infer_shapes(spec), options);
}

TEST(CpuBatchNorm, TrainingUpdatesTheMovingStatisticsAndTheOptimizerLeavesThemAlone) {
  const ModelSpec spec = bn_model(0.9);
  auto exec = compile(spec);
  OpAccess& ops = exec->ops();
  EXPECT_EQ(ops.read_parameter(0, ParamKind::gamma), std::vector<float>(kChannels, 1.0f));
  EXPECT_EQ(ops.read_parameter(0, ParamKind::moving_variance), std::vector<float>(kChannels, 1.0f));
  EXPECT_EQ(ops.read_parameter(0, ParamKind::moving_mean), std::vector<float>(kChannels, 0.0f));

  const auto x = random_floats(kBatch * 4 * kChannels, 7, 0.5f);
  const std::vector<std::int32_t> labels = {0, 1, 1, 0};
  exec->load_batch(x, labels, kBatch);
  exec->launch_step(Phase::train, 0);
  const StepResult r = exec->finish_step();
  ASSERT_TRUE(r.applied);

  reference::Vec mean, variance;
  reference::batch_norm_train(to_double(x), kChannels, {}, {}, 1e-3, &mean, &variance);
  const auto moving_mean = ops.read_parameter(0, ParamKind::moving_mean);
  const auto moving_var = ops.read_parameter(0, ParamKind::moving_variance);
  for (int k = 0; k < kChannels; ++k) {
    EXPECT_NEAR(moving_mean[k], 0.1 * mean[k], 1e-6) << k;
    EXPECT_NEAR(moving_var[k], 0.9 + 0.1 * variance[k], 1e-6) << k;  // biased, as Keras's
  }
  // gamma and beta trained; the moving statistics have no gradient.
  EXPECT_NE(ops.read_parameter(0, ParamKind::gamma), std::vector<float>(kChannels, 1.0f));
  EXPECT_NE(ops.read_parameter(0, ParamKind::beta), std::vector<float>(kChannels, 0.0f));
  EXPECT_EQ(ops.read_gradient(0, ParamKind::moving_mean), std::vector<float>(kChannels, 0.0f));
}

TEST(CpuBatchNorm, InferenceNormalizesByTheMovingStatistics) {
  const ModelSpec spec = bn_model(0.99);
  auto exec = compile(spec);
  OpAccess& ops = exec->ops();
  const std::vector<float> mean = {0.5f, -1.0f, 2.0f}, var = {4.0f, 0.25f, 1.0f};
  const std::vector<float> gamma = {1.5f, -0.5f, 2.0f}, beta = {0.1f, 0.2f, -0.3f};
  ops.write_parameter(0, ParamKind::moving_mean, mean);
  ops.write_parameter(0, ParamKind::moving_variance, var);
  ops.write_parameter(0, ParamKind::gamma, gamma);
  ops.write_parameter(0, ParamKind::beta, beta);
  const auto x = random_floats(kBatch * 4 * kChannels, 3, 0.0f);
  exec->load_batch(x, std::vector<std::int32_t>(kBatch, 0), kBatch);
  ops.forward(Phase::eval, 0);
  const auto y = ops.read_activation(0);
  ASSERT_EQ(y.size(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t k = i % kChannels;
    const double want = (x[i] - mean[k]) / std::sqrt(var[k] + 1e-3) * gamma[k] + beta[k];
    EXPECT_NEAR(y[i], want, 1e-5) << i;
  }
  // Inference leaves the moving statistics as they were.
  EXPECT_EQ(ops.read_parameter(0, ParamKind::moving_mean), mean);
}

TEST(CpuBatchNorm, APaddedBatchKeepsItsZeroRowsOutOfTheStatisticsAndTheGradient) {
  ModelSpec spec;
  spec.name = "bn";
  spec.input_shape = {kChannels};
  spec.layers = {batch_norm()};
  auto exec = compile(spec);
  OpAccess& ops = exec->ops();
  constexpr int kReal = 3;
  auto x = random_floats(kReal * kChannels, 5, 1.0f);
  exec->load_batch(x, std::vector<std::int32_t>(kBatch, 0), kReal);
  ops.forward(Phase::train, 0);
  const auto y = ops.read_output();
  const auto want = reference::batch_norm_train(to_double(x), kChannels, {}, {}, 1e-3);
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-5) << i;
  const auto dy = random_floats(kBatch * kChannels, 9, 0.0f);
  ops.set_output_gradient(dy);
  ops.backward();
  const auto dx = ops.read_input_gradient();
  for (std::size_t i = kReal * kChannels; i < dx.size(); ++i) EXPECT_EQ(dx[i], 0.0f) << i;
  // The real rows' gradients sum to zero per channel (the mean is subtracted).
  for (int k = 0; k < kChannels; ++k) {
    double sum = 0;
    for (int r = 0; r < kReal; ++r) sum += dx[static_cast<std::size_t>(r * kChannels + k)];
    EXPECT_NEAR(sum, 0.0, 1e-5) << k;
  }
}

}  // namespace
}  // namespace mixlab
