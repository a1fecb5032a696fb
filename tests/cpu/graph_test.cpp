// Graphs on the CPU backend (issue 27): every merge forward against a float64 reference and
// backward against that reference's central finite differences, through a graph whose branches
// read the batch; a residual network's gradients, where a branch point sums two readers', against
// finite differences of the network itself; and a residual network that learns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/op_access.h"
#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/spec/shape_inference.h"
#include "engine/train/trainer.h"
#include "tests/cpu/layers.h"

namespace mixlab {
namespace {

using namespace test_layers;

constexpr int kBatch = 3;
constexpr int kFeatures = 5;

// Two branches of the batch, a = 0.5 x + 1 and b = -2 x + 0.25, merged by `type`.
ModelSpec merge_model(LayerType type) {
  ModelSpec spec;
  spec.name = "merge";
  spec.input_shape = {kFeatures};
  spec.layers = {named(rescaling(0.5, 1.0), "a", {"input"}),
                 named(rescaling(-2.0, 0.25), "b", {"input"}), named(merge(type, {"a", "b"}), "m")};
  return spec;
}

// The merge of a and b for one element, in float64; Concatenate is handled by the caller.
double reference_merge(LayerType type, double a, double b) {
  switch (type) {
    case LayerType::Add:
      return a + b;
    case LayerType::Subtract:
      return a - b;
    case LayerType::Multiply:
      return a * b;
    case LayerType::Average:
      return (a + b) / 2;
    case LayerType::Maximum:
      return std::max(a, b);
    default:
      return 0;
  }
}

std::vector<double> reference_forward(LayerType type, const std::vector<double>& x) {
  std::vector<double> y;
  for (int r = 0; r < kBatch; ++r) {
    std::vector<double> a, b;
    for (int f = 0; f < kFeatures; ++f) {
      const double v = x[static_cast<std::size_t>(r * kFeatures + f)];
      a.push_back(0.5 * v + 1.0);
      b.push_back(-2.0 * v + 0.25);
    }
    if (type == LayerType::Concatenate) {
      y.insert(y.end(), a.begin(), a.end());
      y.insert(y.end(), b.begin(), b.end());
    } else {
      for (int f = 0; f < kFeatures; ++f) y.push_back(reference_merge(type, a[f], b[f]));
    }
  }
  return y;
}

// Central differences of L(v) = sum(dy * f(v)).
std::vector<double> finite_difference(
    std::vector<double> v, const std::vector<double>& dy,
    const std::function<std::vector<double>(const std::vector<double>&)>& f, double h) {
  std::vector<double> g(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + h;
    const auto yp = f(v);
    v[i] = keep - h;
    const auto ym = f(v);
    v[i] = keep;
    double l = 0;
    for (std::size_t j = 0; j < dy.size(); ++j) l += dy[j] * (yp[j] - ym[j]);
    g[i] = l / (2 * h);
  }
  return g;
}

std::vector<float> floats(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << "[" << i << "]";
  }
}

std::unique_ptr<ModelExecutor> compile(const ModelSpec& spec, Policy policy, bool input_gradient) {
  static const auto backend = make_cpu_backend(2);
  ExecutorOptions options;
  options.policy = policy;
  options.batch_size = kBatch;
  options.input_gradient = input_gradient;
  return backend->compile(spec, infer_shapes(spec, policy), options);
}

using Reference = std::function<std::vector<double>(const std::vector<double>&)>;

// `spec` in float32 on a batch of `inputs` random values: its output against `reference`, and
// (both branches read the batch, so its gradient is the sum of both through the merge) the
// input gradient against the reference's finite differences.
void expect_merge_matches(const ModelSpec& spec, std::size_t inputs, const Reference& reference,
                          std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  std::vector<double> x(inputs), dy;
  for (double& v : x) v = u(rng);
  const auto exec = compile(spec, Policy::float32, true);
  const std::vector<std::int32_t> labels(kBatch, 0);
  exec->load_batch(floats(x), labels, kBatch);
  OpAccess& ops = exec->ops();
  ops.forward(Phase::train, 1);
  const std::vector<double> want = reference(x);
  expect_close(ops.read_output(), want, 1e-6, "forward");
  for (std::size_t i = 0; i < want.size(); ++i) dy.push_back(u(rng));
  ops.set_output_gradient(floats(dy));
  ops.backward();
  expect_close(ops.read_input_gradient(), finite_difference(x, dy, reference, 1e-4), 1e-4,
               "input gradient");
}

class CpuMerge : public ::testing::TestWithParam<LayerType> {};

TEST_P(CpuMerge, Float32MatchesFloat64AndFiniteDifferences) {
  const LayerType type = GetParam();
  expect_merge_matches(
      merge_model(type), kBatch * kFeatures,
      [&](const auto& v) { return reference_forward(type, v); }, 7);
}

INSTANTIATE_TEST_SUITE_P(Merges, CpuMerge,
                         ::testing::Values(LayerType::Add, LayerType::Subtract, LayerType::Multiply,
                                           LayerType::Average, LayerType::Maximum,
                                           LayerType::Concatenate),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// Keras's broadcasting (EfficientNet's squeeze-and-excitation): a = 0.5 x + 1 of 2x3x4 and
// s = x's per-channel mean kept as 1x1x4, merged by the type either way round; the gradient of
// s sums over the positions that read it.
struct BroadcastCase {
  LayerType type;
  bool small_first;
};

constexpr std::int64_t kH = 2, kW = 3, kC = 4;

ModelSpec broadcast_model(const BroadcastCase& c) {
  ModelSpec spec;
  spec.name = "broadcast";
  spec.input_shape = {kH, kW, kC};
  const std::vector<std::string> order =
      c.small_first ? std::vector<std::string>{"s", "a"} : std::vector<std::string>{"a", "s"};
  spec.layers = {named(rescaling(0.5, 1.0), "a", {"input"}),
                 named(global_pool(LayerType::GlobalAveragePooling2D, true), "s", {"input"}),
                 named(merge(c.type, order), "m"), simple(LayerType::Flatten)};
  return spec;
}

std::vector<double> reference_broadcast(const BroadcastCase& c, const std::vector<double>& x) {
  std::vector<double> y;
  const std::int64_t per = kH * kW * kC;
  for (std::int64_t r = 0; r < kBatch; ++r) {
    std::vector<double> s(kC, 0.0);
    for (std::int64_t p = 0; p < kH * kW; ++p)
      for (std::int64_t ch = 0; ch < kC; ++ch)
        s[ch] += x[static_cast<std::size_t>(r * per + p * kC + ch)] / (kH * kW);
    for (std::int64_t p = 0; p < kH * kW; ++p)
      for (std::int64_t ch = 0; ch < kC; ++ch) {
        const double a = 0.5 * x[static_cast<std::size_t>(r * per + p * kC + ch)] + 1.0;
        y.push_back(c.small_first ? reference_merge(c.type, s[ch], a)
                                  : reference_merge(c.type, a, s[ch]));
      }
  }
  return y;
}

class CpuBroadcastMerge : public ::testing::TestWithParam<BroadcastCase> {};

TEST_P(CpuBroadcastMerge, Float32MatchesFloat64AndFiniteDifferences) {
  const BroadcastCase c = GetParam();
  const ModelSpec spec = broadcast_model(c);
  EXPECT_EQ(infer_shapes(spec).layers[2].output_shape, (Shape{kH, kW, kC}));
  expect_merge_matches(
      spec, static_cast<std::size_t>(kBatch * kH * kW * kC),
      [&](const auto& v) { return reference_broadcast(c, v); }, 11);
}

INSTANTIATE_TEST_SUITE_P(Merges, CpuBroadcastMerge,
                         ::testing::Values(BroadcastCase{LayerType::Multiply, false},
                                           BroadcastCase{LayerType::Multiply, true},
                                           BroadcastCase{LayerType::Add, true},
                                           BroadcastCase{LayerType::Subtract, true},
                                           BroadcastCase{LayerType::Average, false},
                                           BroadcastCase{LayerType::Maximum, false}),
                         [](const auto& info) {
                           return std::string(to_string(info.param.type)) +
                                  (info.param.small_first ? "SmallFirst" : "SmallSecond");
                         });

// Shapes that do not broadcast are refused with both named.
TEST(CpuBroadcastMerge, MismatchedAxesAreRefusedByName) {
  ModelSpec spec;
  spec.name = "mismatch";
  spec.input_shape = {kH, kW, kC};
  spec.layers = {named(rescaling(0.5), "a", {"input"}),
                 named(conv(3, {1, 1}, {1, 1}, Padding::valid), "b", {"input"}),
                 named(merge(LayerType::Multiply, {"a", "b"}), "m")};
  try {
    infer_shapes(spec);
    FAIL() << "2x3x4 times 2x3x3 was accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("multiplies 2x3x4 from 'a' by 2x3x3 from 'b'"),
              std::string::npos)
        << e.what();
  }
}

// input 6 -> h1 (8, tanh) -> h2 (8, tanh) -> add(h1, h2) -> out (3): h1 is read by h2 and by
// the add, so its gradient is the sum of both readers'.
ModelSpec residual_mlp() {
  ModelSpec spec;
  spec.name = "residual-mlp";
  spec.input_shape = {6};
  spec.layers = {named(dense(8, ActivationFn::tanh), "h1"),
                 named(dense(8, ActivationFn::tanh), "h2"),
                 named(merge(LayerType::Add, {"h1", "h2"}), "add"), named(dense(3), "out")};
  return spec;
}

TEST(CpuGraph, AResidualNetworksGradientsMatchFiniteDifferences) {
  const ModelSpec spec = residual_mlp();
  const auto exec = compile(spec, Policy::float32, true);
  OpAccess& ops = exec->ops();
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> x(kBatch * 6), dy(kBatch * 3);
  for (double& v : x) v = u(rng);
  for (double& v : dy) v = u(rng);
  const std::vector<std::int32_t> labels(kBatch, 0);
  exec->load_batch(floats(x), labels, kBatch);
  const auto loss = [&]() {
    ops.forward(Phase::train, 1);
    const std::vector<float> y = ops.read_output();
    double l = 0;
    for (std::size_t i = 0; i < y.size(); ++i) l += dy[i] * y[i];
    return l;
  };
  loss();
  ops.set_output_gradient(floats(dy));
  ops.backward();
  const std::vector<float> dkernel = ops.read_gradient(0, ParamKind::kernel);  // h1's
  const std::vector<float> dx = ops.read_input_gradient();
  std::vector<float> kernel = ops.read_parameter(0, ParamKind::kernel);
  constexpr double h = 1e-2;  // float32 forward: a step large enough to rise above its rounding
  for (std::size_t i = 0; i < kernel.size(); i += 5) {
    const float keep = kernel[i];
    kernel[i] = keep + static_cast<float>(h);
    ops.write_parameter(0, ParamKind::kernel, kernel);
    const double lp = loss();
    kernel[i] = keep - static_cast<float>(h);
    ops.write_parameter(0, ParamKind::kernel, kernel);
    const double lm = loss();
    kernel[i] = keep;
    ops.write_parameter(0, ParamKind::kernel, kernel);
    EXPECT_NEAR(dkernel[i], (lp - lm) / (2 * h), 2e-3) << "h1 kernel[" << i << "]";
  }
  std::vector<double> xs = x;
  for (std::size_t i = 0; i < xs.size(); i += 4) {
    const double keep = xs[i];
    xs[i] = keep + h;
    exec->load_batch(floats(xs), labels, kBatch);
    const double lp = loss();
    xs[i] = keep - h;
    exec->load_batch(floats(xs), labels, kBatch);
    const double lm = loss();
    xs[i] = keep;
    EXPECT_NEAR(dx[i], (lp - lm) / (2 * h), 2e-3) << "input[" << i << "]";
  }
}

TEST(CpuGraph, AResidualNetworkLearnsInEveryPolicy) {
  ModelSpec spec = residual_mlp();
  spec.input_shape = {4, 4, 1};
  // Synthetic images are raw bytes: scale them to [0, 1] first, as a model for them would.
  spec.layers.insert(spec.layers.begin(), rescaling(1.0 / 255, 0.0));
  spec.layers.insert(spec.layers.begin(), simple(LayerType::Flatten));
  spec.layers.push_back(activation(ActivationFn::softmax, true));
  for (const Policy policy : {Policy::float32, Policy::mixed_bfloat16, Policy::mixed_float16}) {
    SCOPED_TRACE(to_string(policy));
    RunConfig config;
    config.precision = policy;
    config.batch_size = 32;
    config.epochs = 3;
    config.optimizer = default_optimizer(OptimizerKind::adam);
    config.optimizer.learning_rate = 0.01;
    config.dataset.kind = DatasetSpec::Kind::synthetic;
    config.dataset.shape = {4, 4, 1};
    config.dataset.classes = 3;
    config.dataset.train_size = 480;
    config.evaluate = false;
    config.threads = 2;
    const DatasetPair data = load_dataset(config.dataset);
    struct Sink : RunSink {
      std::vector<double> losses;
      void on_step(const StepMetrics& s) override { losses.push_back(s.loss); }
    } sink;
    std::atomic<bool> cancel{false};
    const auto backend = make_cpu_backend(2);
    const RunSummary r = train(spec, config, data, *backend, sink, cancel);
    ASSERT_EQ(r.status, RunStatus::finished) << r.message;
    ASSERT_GE(sink.losses.size(), 40U);
    const auto mean = [&](std::size_t from, std::size_t to) {
      double s = 0;
      for (std::size_t i = from; i < to; ++i) s += sink.losses[i];
      return s / static_cast<double>(to - from);
    };
    EXPECT_LT(mean(sink.losses.size() - 5, sink.losses.size()), 0.5 * mean(0, 5));
  }
}

}  // namespace
}  // namespace mixlab
