// Every layer's forward and backward on the CPU backend, op by op: forward against a float64
// reference, backward against that reference's central finite differences; then the same ops
// under mixed_bfloat16 and mixed_float16 against float32 with a tolerance scaled by the 16-bit
// type's epsilon.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "engine/backend/backend.h"
#include "engine/backend/op_access.h"
#include "engine/core/half.h"
#include "engine/ops/normalization.h"
#include "engine/spec/shape_inference.h"
#include "tests/cpu/layers.h"
#include "tests/cpu/reference.h"

namespace mixlab {
namespace {

constexpr int kBatch = 3;
constexpr std::uint64_t kSeed = 11;
constexpr std::uint64_t kStep = 5;

struct OpCase {
  std::string name;
  std::vector<std::int64_t> input;
  LayerSpec layer;
};

using namespace test_layers;

std::vector<OpCase> cases() {
  using A = ActivationFn;
  const LayerSpec rescale = rescaling(0.5, -1.25);
  const LayerSpec drop = dropout(0.3);
  return {
      {"DenseLinear", {7}, dense(5)},
      {"DenseRelu", {6}, dense(4, A::relu)},
      {"DenseSigmoid", {6}, dense(3, A::sigmoid)},
      {"DenseTanh", {5}, dense(3, A::tanh)},
      {"DenseGelu", {5}, dense(4, A::gelu)},
      {"DenseSoftmax", {6}, dense(4, A::softmax)},
      {"DenseNoBias", {6}, dense(3, A::linear, false)},
      {"DenseOnLastAxis", {2, 3, 4}, dense(3)},
      {"Conv2DValid", {6, 5, 2}, conv(3, {3, 3}, {1, 1}, Padding::valid)},
      {"Conv2DSameStride2", {7, 6, 3}, conv(4, {3, 3}, {2, 2}, Padding::same)},
      {"Conv2DSameRectRelu", {5, 5, 2}, conv(2, {2, 3}, {1, 1}, Padding::same, A::relu)},
      {"Conv2DNoBias", {5, 4, 2}, conv(2, {2, 2}, {1, 1}, Padding::valid, A::linear, false)},
      {"MaxPool2", {6, 6, 3}, pool(LayerType::MaxPooling2D, {2, 2}, {2, 2}, Padding::valid)},
      {"MaxPool3SameStride2",
       {7, 7, 2},
       pool(LayerType::MaxPooling2D, {3, 3}, {2, 2}, Padding::same)},
      {"AvgPool2", {6, 4, 2}, pool(LayerType::AveragePooling2D, {2, 2}, {2, 2}, Padding::valid)},
      {"AvgPool3SameStride2",
       {7, 5, 2},
       pool(LayerType::AveragePooling2D, {3, 3}, {2, 2}, Padding::same)},
      {"GlobalAvgPool", {5, 4, 3}, global_pool(LayerType::GlobalAveragePooling2D)},
      {"GlobalMaxPool", {4, 6, 2}, global_pool(LayerType::GlobalMaxPooling2D)},
      {"GlobalAvgPoolKeepdims", {3, 3, 4}, global_pool(LayerType::GlobalAveragePooling2D, true)},
      // Sequences: (steps, features).
      {"DenseOnSequence", {4, 6}, dense(3, A::relu)},
      {"ActivationSoftmaxOnSequence", {3, 5}, activation(A::softmax)},
      {"GlobalAvgPool1D", {5, 3}, global_pool(LayerType::GlobalAveragePooling1D)},
      {"GlobalMaxPool1D", {4, 6}, global_pool(LayerType::GlobalMaxPooling1D)},
      {"GlobalMaxPool1DKeepdims", {3, 4}, global_pool(LayerType::GlobalMaxPooling1D, true)},
      {"ActivationRelu", {10}, activation(A::relu)},
      {"ActivationSigmoid", {10}, activation(A::sigmoid)},
      {"ActivationTanh", {10}, activation(A::tanh)},
      {"ActivationGelu", {10}, activation(A::gelu)},
      {"ActivationSoftmax", {7}, activation(A::softmax)},
      {"ActivationLinear", {10}, activation(A::linear)},
      {"ActivationSilu", {10}, activation(A::silu)},
      {"ActivationHardSigmoid", {10}, activation(A::hard_sigmoid)},
      {"ActivationHardSilu", {10}, activation(A::hard_silu)},
      {"ActivationElu", {10}, activation(A::elu)},
      {"ActivationRelu6", {10}, activation(A::relu6)},
      {"ActivationLeakyRelu", {10}, activation(A::leaky_relu)},
      {"DenseSilu", {6}, dense(4, A::silu)},
      // Kinks away from the inputs (bfloat16 values): 1.3 and 0.3 are none.
      {"ReLUMaxValue", {4, 3, 2}, relu(1.3)},
      {"ReLULeakyThreshold", {12}, relu(INFINITY, 0.1, 0.3)},
      {"ReLUAllArguments", {12}, relu(1.3, 0.2, 0.3)},
      {"ZeroPadding", {3, 4, 2}, zero_padding({1, 2, 0, 1})},
      {"DepthwiseValid", {5, 6, 3}, depthwise({3, 3}, {1, 1}, Padding::valid)},
      {"DepthwiseSameStride2Multiplier2",
       {7, 6, 2},
       depthwise({3, 3}, {2, 2}, Padding::same, 2, A::relu)},
      {"DepthwiseNoBias", {4, 5, 3}, depthwise({2, 3}, {1, 1}, Padding::same, 1, A::linear, false)},
      {"SeparableSame", {5, 6, 3}, separable(4, {3, 3}, {1, 1}, Padding::same, 1, A::silu)},
      {"SeparableStride2Multiplier2NoBias",
       {7, 6, 2},
       separable(3, {3, 3}, {2, 2}, Padding::valid, 2, A::linear, false)},
      {"BatchNorm", {3, 2, 4}, batch_norm()},
      {"BatchNormOnFeatures", {5}, batch_norm()},
      {"BatchNormNoScaleNoCenter", {2, 2, 3}, batch_norm(false, false)},
      {"Rescaling", {9}, rescale},
      // Per channel, one for all, none (the floor of the root: NormalizationConstants below).
      {"NormalizationPerChannel",
       {3, 2, 4},
       normalization({0.5, -0.25, 0.0, 2.0}, {4.0, 0.3, 4e-4, 0.01})},
      {"NormalizationScalar", {5}, normalization({0.75}, {2.5})},
      {"NormalizationIdentity", {2, 2, 3}, normalization({}, {})},
      {"Dropout", {40}, drop},
      // Keras's noise_shape: whole samples (EfficientNet's stochastic depth), and whole channels.
      {"DropoutPerSample", {2, 3, 4}, noise_dropout(0.5, {-1, 1, 1, 1})},
      {"DropoutPerChannel", {2, 3, 4}, noise_dropout(0.5, {-1, 1, 1, -1})},
      {"Flatten", {2, 3, 4}, simple(LayerType::Flatten)},
      {"ReshapeToImage", {24}, reshape({2, -1, 4})},
      {"ReshapeImage", {2, 3, 4}, reshape({4, 6})},
      // Sequence layers.
      {"LayerNorm", {4, 6}, layer_norm()},
      {"LayerNormOnFeatures", {9}, layer_norm(true, true, 1e-5)},
      {"LayerNormNoCenter", {3, 5}, layer_norm(false, true)},
      {"LayerNormNoScaleNoCenter", {2, 7}, layer_norm(false, false)},
      {"Embedding", {5}, embedding(11, 4)},
      {"PositionEmbedding", {4, 3}, position_embedding(6)},
  };
}

// A model of the case's layer (plus a Flatten when its output is not flat).
ModelSpec model_of(const OpCase& c) {
  ModelSpec spec;
  spec.name = c.name;
  spec.input_shape = c.input;
  spec.layers.push_back(c.layer);
  if (needs_flatten(c.layer, c.input.size())) spec.layers.push_back(simple(LayerType::Flatten));
  return spec;
}

std::vector<double> random_values(std::size_t n, std::mt19937_64& rng, double scale = 1.0) {
  std::uniform_real_distribution<double> dist(-scale, scale);
  std::vector<double> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<float> to_float(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}
std::vector<double> to_double(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

// The float64 forward of the case's layer for a batch.
std::vector<double> reference_forward(const OpCase& c, const LayerInfo& info,
                                      const std::vector<double>& x,
                                      const std::vector<double>& kernel,
                                      const std::vector<double>& bias,
                                      const std::vector<double>& pointwise = {}) {
  const LayerSpec& l = c.layer;
  switch (l.type) {
    case LayerType::Dense:
      return reference::dense(x, kernel, bias, info.input_shape.back(), l.units, l.activation);
    case LayerType::Conv2D:
      return reference::conv2d(x, kernel, bias, kBatch, l, info);
    case LayerType::MaxPooling2D:
    case LayerType::AveragePooling2D:
      return reference::pool(x, kBatch, l, info);
    case LayerType::GlobalAveragePooling2D:
    case LayerType::GlobalMaxPooling2D:
    case LayerType::GlobalAveragePooling1D:
    case LayerType::GlobalMaxPooling1D:
      return reference::global_pool(x, kBatch, l, info);
    case LayerType::Activation:
      return reference::activate(l.activation, x, info.output_shape.back());
    case LayerType::Rescaling: {
      std::vector<double> y(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * l.scale + l.offset;
      return y;
    }
    case LayerType::Dropout:
      return reference::dropout(x, l.rate, kSeed, 0, kStep, l.noise_shape, kBatch,
                                info.input_shape);
    case LayerType::Flatten:
    case LayerType::Reshape:
      return x;
    case LayerType::ReLU: {
      std::vector<double> y(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        y[i] = reference::relu(x[i], l.max_value, l.negative_slope, l.threshold);
      }
      return y;
    }
    case LayerType::ZeroPadding2D:
      return reference::zero_padding(x, kBatch, info);
    case LayerType::DepthwiseConv2D:
      return reference::depthwise_conv2d(x, kernel, bias, kBatch, l, info);
    case LayerType::SeparableConv2D:
      return reference::separable_conv2d(x, kernel, pointwise, bias, kBatch, l, info);
    case LayerType::Normalization: {
      const std::int64_t channels = info.output_shape.back();
      const auto at = [](const std::vector<double>& v, std::int64_t c, double fallback) {
        return v.empty() ? fallback : v[v.size() == 1 ? 0 : static_cast<std::size_t>(c)];
      };
      std::vector<double> y(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        const auto c = static_cast<std::int64_t>(i) % channels;
        y[i] = (x[i] - at(l.mean, c, 0.0)) / std::max(std::sqrt(at(l.variance, c, 1.0)), 1e-7);
      }
      return y;
    }
    case LayerType::BatchNormalization:
      // kernel: gamma, bias: beta (OpInputs).
      return reference::batch_norm_train(x, info.input_shape.back(), kernel, bias, l.epsilon);
    case LayerType::LayerNormalization:
      return reference::layer_norm(x, info.input_shape.back(), kernel, bias, l.epsilon);
    case LayerType::Embedding:  // kernel: the table
      return reference::embedding(x, kernel, l.output_dim);
    case LayerType::PositionEmbedding:
      return reference::position_embedding(kBatch, kernel, num_elements(info.input_shape));
    case LayerType::MultiHeadAttention:
      break;  // several parameter groups: tests/cpu/attention_test.cpp
    case LayerType::Add:
    case LayerType::Subtract:
    case LayerType::Multiply:
    case LayerType::Average:
    case LayerType::Maximum:
    case LayerType::Concatenate:
      break;  // one-input cases only; merges have tests of their own
  }
  return {};
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// Expects |got - want| <= tol * max(1, max|want|) elementwise.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double scale = std::max(1.0, max_abs(want));
  int reported = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= tol * scale) && reported++ < 5) {
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i]
                    << " (tolerance " << tol * scale << ")";
    }
  }
}

// Central differences of L(v) = sum(dy * forward(v)) w.r.t. each element of v.
std::vector<double> finite_difference(
    std::vector<double> v, const std::vector<double>& dy,
    const std::function<std::vector<double>(const std::vector<double>&)>& f) {
  constexpr double h = 1e-4;
  std::vector<double> g(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    double lp = 0, lm = 0;
    v[i] = keep + h;
    const auto yp = f(v);
    v[i] = keep - h;
    const auto ym = f(v);
    v[i] = keep;
    for (std::size_t j = 0; j < dy.size(); ++j) {
      lp += dy[j] * yp[j];
      lm += dy[j] * ym[j];
    }
    g[i] = (lp - lm) / (2 * h);
  }
  return g;
}

// The op's parameters as OpInputs::kernel and ::bias: the normalizations' gamma and beta, an
// embedding's table.
bool normalizes(const OpCase& c) {
  return c.layer.type == LayerType::BatchNormalization ||
         c.layer.type == LayerType::LayerNormalization;
}
ParamKind kernel_kind(const OpCase& c) {
  if (c.layer.type == LayerType::Embedding || c.layer.type == LayerType::PositionEmbedding) {
    return ParamKind::embeddings;
  }
  return normalizes(c) ? ParamKind::gamma : ParamKind::kernel;
}
ParamKind bias_kind(const OpCase& c) {
  return normalizes(c) ? ParamKind::beta : ParamKind::bias;
}
// Its input gets no gradient: token ids, or an input read for its shape only.
bool input_has_gradient(const OpCase& c) {
  return c.layer.type != LayerType::Embedding && c.layer.type != LayerType::PositionEmbedding;
}

struct OpResult {
  std::vector<double> y, dx, dkernel, dbias, dpointwise;
};

struct OpInputs {
  std::vector<double> x, kernel, bias, dy;
  std::vector<double> pointwise;  // SeparableConv2D's second kernel
};

// Inputs are bfloat16 values, so that casting them for a 16-bit policy is exact and the policies
// differ only in what the op itself rounds. Pooling gets distinct values (no ties for max).
OpInputs make_inputs(const OpCase& c, const ShapeTable& table) {
  std::mt19937_64 rng(1234);
  OpInputs in;
  const auto n = static_cast<std::size_t>(kBatch * num_elements(table.input_shape));
  in.x = random_values(n, rng, 2.0);
  for (auto& v : in.x) v = round_to_bf16(static_cast<float>(v));
  if (c.layer.type == LayerType::MaxPooling2D || c.layer.type == LayerType::AveragePooling2D) {
    for (std::size_t i = 0; i < n; ++i) in.x[i] = (static_cast<double>(i) - n / 2.0) / 16.0;
    std::shuffle(in.x.begin(), in.x.end(), rng);
  }
  if (c.layer.type == LayerType::Embedding) {  // token ids, every one repeated somewhere
    for (std::size_t i = 0; i < n; ++i) in.x[i] = static_cast<double>((i * 7) % 9);
  }
  for (const auto& p : table.layers[0].params) {
    if (!is_trainable(p.kind)) continue;  // moving statistics: not used while training
    auto& dst = p.kind == kernel_kind(c)                ? in.kernel
                : p.kind == ParamKind::pointwise_kernel ? in.pointwise
                                                        : in.bias;
    dst = random_values(static_cast<std::size_t>(p.count()), rng, 0.7);
    if (p.kind == ParamKind::gamma) {
      for (auto& v : dst) v += 1.0;  // around 1, as trained gammas are
    }
  }
  in.dy = random_values(static_cast<std::size_t>(kBatch * num_elements(table.output_shape)), rng);
  (void)c;
  return in;
}

OpResult run_backend(const OpCase& c, Policy policy, const OpInputs& in) {
  const ModelSpec spec = model_of(c);
  const ShapeTable table = infer_shapes(spec, policy);
  auto backend = make_cpu_backend(2);
  ExecutorOptions options;
  options.policy = policy;
  options.batch_size = kBatch;
  options.seed = kSeed;
  options.input_gradient = true;
  auto exec = backend->compile(spec, table, options);
  OpAccess& ops = exec->ops();
  if (!in.kernel.empty()) ops.write_parameter(0, kernel_kind(c), to_float(in.kernel));
  if (!in.bias.empty()) ops.write_parameter(0, bias_kind(c), to_float(in.bias));
  if (!in.pointwise.empty()) {
    ops.write_parameter(0, ParamKind::pointwise_kernel, to_float(in.pointwise));
  }
  const std::vector<std::int32_t> labels(kBatch, 0);
  exec->load_batch(to_float(in.x), labels, kBatch);
  ops.forward(Phase::train, kStep);
  OpResult r;
  r.y = to_double(ops.read_output());
  ops.set_output_gradient(to_float(in.dy));
  ops.backward();
  if (input_has_gradient(c)) r.dx = to_double(ops.read_input_gradient());
  if (!in.kernel.empty()) r.dkernel = to_double(ops.read_gradient(0, kernel_kind(c)));
  if (!in.bias.empty()) r.dbias = to_double(ops.read_gradient(0, bias_kind(c)));
  if (!in.pointwise.empty()) {
    r.dpointwise = to_double(ops.read_gradient(0, ParamKind::pointwise_kernel));
  }
  return r;
}

class CpuOp : public ::testing::TestWithParam<OpCase> {};

TEST_P(CpuOp, Float32MatchesFloat64ReferenceAndFiniteDifferences) {
  const OpCase& c = GetParam();
  const ShapeTable table = infer_shapes(model_of(c), Policy::float32);
  const LayerInfo& info = table.layers[0];
  const OpInputs in = make_inputs(c, table);
  const OpResult r = run_backend(c, Policy::float32, in);

  expect_close(r.y, reference_forward(c, info, in.x, in.kernel, in.bias, in.pointwise), 1e-5,
               "forward");
  if (input_has_gradient(c)) {
    expect_close(r.dx,
                 finite_difference(in.x, in.dy,
                                   [&](const auto& x) {
                                     return reference_forward(c, info, x, in.kernel, in.bias,
                                                              in.pointwise);
                                   }),
                 2e-4, "input gradient");
  }
  if (!in.kernel.empty()) {
    expect_close(r.dkernel,
                 finite_difference(in.kernel, in.dy,
                                   [&](const auto& k) {
                                     return reference_forward(c, info, in.x, k, in.bias,
                                                              in.pointwise);
                                   }),
                 2e-4, "kernel gradient");
  }
  if (!in.bias.empty()) {
    expect_close(r.dbias,
                 finite_difference(in.bias, in.dy,
                                   [&](const auto& b) {
                                     return reference_forward(c, info, in.x, in.kernel, b,
                                                              in.pointwise);
                                   }),
                 2e-4, "bias gradient");
  }
  if (!in.pointwise.empty()) {
    expect_close(r.dpointwise,
                 finite_difference(in.pointwise, in.dy,
                                   [&](const auto& p) {
                                     return reference_forward(c, info, in.x, in.kernel, in.bias, p);
                                   }),
                 2e-4, "pointwise kernel gradient");
  }
}

// 16-bit policies: the same op against float32, within a few epsilons of the 16-bit type per
// rounding the op goes through (inputs, weights, output; more for long dot products).
TEST_P(CpuOp, MixedPoliciesMatchFloat32WithinTheirEpsilon) {
  const OpCase& c = GetParam();
  const ShapeTable table = infer_shapes(model_of(c), Policy::float32);
  const OpInputs in = make_inputs(c, table);
  const OpResult ref = run_backend(c, Policy::float32, in);
  for (Policy policy : {Policy::mixed_bfloat16, Policy::mixed_float16}) {
    SCOPED_TRACE(std::string(to_string(policy)));
    const double eps = policy == Policy::mixed_bfloat16 ? 1.0 / 256 : 1.0 / 2048;
    const double tol = 16 * eps;
    const OpResult r = run_backend(c, policy, in);
    expect_close(r.y, ref.y, tol, "forward");
    expect_close(r.dx, ref.dx, tol, "input gradient");
    if (!ref.dkernel.empty()) expect_close(r.dkernel, ref.dkernel, tol, "kernel gradient");
    if (!ref.dbias.empty()) expect_close(r.dbias, ref.dbias, tol, "bias gradient");
    if (!ref.dpointwise.empty()) {
      expect_close(r.dpointwise, ref.dpointwise, tol, "pointwise kernel gradient");
    }
    // Native or emulated (cpu.ops_avx2), the output is a 16-bit value.
    for (double v : r.y) {
      const auto f = static_cast<float>(v);
      if (policy == Policy::mixed_float16) {
        ASSERT_EQ(f, round_to_f16(f)) << "a mixed_float16 output is not a float16 value";
      } else {
        ASSERT_EQ(f, round_to_bf16(f)) << "a mixed_bfloat16 output is not a bfloat16 value";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layers, CpuOp, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// Keras's Normalization: the mean and variance as the layer's dtype holds them, the divisor
// max(sqrt(variance), 1e-7) rounded as Keras rounds each result; a variance of 0 or below the
// floor's square divides by the floor, not by 0.
TEST(NormalizationConstants, RoundLikeKerasAndFloorTheRoot) {
  const NormalizationConstants f32 =
      normalization_constants({0.1, -2.0}, {1e-16, 2.0}, 2, DType::f32);
  EXPECT_EQ(f32.mean, (std::vector<float>{0.1f, -2.0f}));
  EXPECT_EQ(f32.divisor[0], 1e-7f);
  EXPECT_EQ(f32.divisor[1], std::sqrt(2.0f));
  const NormalizationConstants bf16 =
      normalization_constants({0.1, -2.0}, {0.0, 2.0}, 2, DType::bf16);
  EXPECT_EQ(bf16.mean[0], round_to_bf16(0.1f));
  EXPECT_EQ(bf16.divisor[0], round_to_bf16(1e-7f));
  EXPECT_EQ(bf16.divisor[1], round_to_bf16(std::sqrt(round_to_bf16(2.0f))));
  // One value for every channel; none: mean 0 and variance 1.
  const NormalizationConstants one = normalization_constants({3.0}, {9.0}, 3, DType::f16);
  EXPECT_EQ(one.mean, (std::vector<float>{3.0f, 3.0f, 3.0f}));
  EXPECT_EQ(one.divisor, (std::vector<float>{3.0f, 3.0f, 3.0f}));
  const NormalizationConstants none = normalization_constants({}, {}, 2, DType::f32);
  EXPECT_EQ(none.mean, (std::vector<float>{0.0f, 0.0f}));
  EXPECT_EQ(none.divisor, (std::vector<float>{1.0f, 1.0f}));
}

}  // namespace
}  // namespace mixlab
