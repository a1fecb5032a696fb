// mixed_float8 on the CPU backend (issue 30): a Dense's matmul reads its input and kernel rounded
// through scaled E4M3 and its backward the output gradient rounded through E5M2, computed here
// from the same values by hand; the bias gradient is the unrounded one; each training step
// reports every FP8 tensor's amax and scales, which follow Keras's delayed-scaling recipe; a
// layer kept in float32 stays out of FP8.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/backend/backend.h"
#include "engine/backend/op_access.h"
#include "engine/core/fp8.h"
#include "engine/core/half.h"
#include "engine/ops/fp8_scaling.h"
#include "engine/spec/shape_inference.h"
#include "tests/cpu/layers.h"

namespace mixlab {
namespace {

using namespace test_layers;

constexpr int kBatch = 4;
constexpr int kIn = 9;
constexpr int kOut = 5;

std::vector<float> bf16_values(std::size_t n, std::mt19937_64& rng, double scale) {
  std::uniform_real_distribution<double> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = round_to_bf16(static_cast<float>(dist(rng)));
  return v;
}

std::unique_ptr<ModelExecutor> compile(const ModelSpec& spec, Policy policy,
                                       const Fp8Recipe& recipe = {}) {
  static const auto backend = make_cpu_backend(2);
  ExecutorOptions options;
  options.policy = policy;
  options.batch_size = kBatch;
  options.input_gradient = true;
  options.fp8 = recipe;
  return backend->compile(spec, infer_shapes(spec, policy), options);
}

ModelSpec one_dense() {
  ModelSpec spec;
  spec.name = "fp8-dense";
  spec.input_shape = {kIn};
  spec.layers.push_back(dense(kOut));
  return spec;
}

float qdq(Fp8Format format, float v) {
  return fp8_quantize_dequantize_bf16(format, v, 1.0f);  // the scales start at 1
}

// Values that E4M3 (3 mantissa bits) rounds but bfloat16 keeps, so that a Dense that skipped
// the FP8 rounding would fail the comparison below.
TEST(CpuFp8, DenseComputesWithTheRoundedInputKernelAndGradient) {
  std::mt19937_64 rng(30);
  const auto x = bf16_values(kBatch * kIn, rng, 3.0);
  const auto kernel = bf16_values(kIn * kOut, rng, 0.8);  // Keras's layout: (in, out)
  const auto bias = bf16_values(kOut, rng, 0.5);
  const auto dy = bf16_values(kBatch * kOut, rng, 2.0);

  auto exec = compile(one_dense(), Policy::mixed_float8);
  OpAccess& ops = exec->ops();
  ops.write_parameter(0, ParamKind::kernel, kernel);
  ops.write_parameter(0, ParamKind::bias, bias);
  exec->load_batch(x, std::vector<std::int32_t>(kBatch, 0), kBatch);
  ops.forward(Phase::train, 0);
  const std::vector<float> y = ops.read_output();
  ops.set_output_gradient(dy);
  ops.backward();
  const std::vector<float> dx = ops.read_input_gradient();
  const std::vector<float> dkernel = ops.read_gradient(0, ParamKind::kernel);
  const std::vector<float> dbias = ops.read_gradient(0, ParamKind::bias);

  const auto at = [](const std::vector<float>& m, int cols, int r, int c) {
    return static_cast<double>(m[static_cast<std::size_t>(r * cols + c)]);
  };
  std::vector<float> xq(x.size()), kq(kernel.size()), gq(dy.size());
  std::transform(x.begin(), x.end(), xq.begin(), [](float v) { return qdq(Fp8Format::e4m3, v); });
  std::transform(kernel.begin(), kernel.end(), kq.begin(),
                 [](float v) { return qdq(Fp8Format::e4m3, v); });
  std::transform(dy.begin(), dy.end(), gq.begin(), [](float v) { return qdq(Fp8Format::e5m2, v); });
  ASSERT_NE(xq, x) << "the inputs must be values that E4M3 rounds";
  ASSERT_NE(gq, dy) << "the gradients must be values that E5M2 rounds";

  // bfloat16 results: within one bfloat16 rounding of the float64 sums of the rounded values.
  const auto expect_bf16_close = [](double got, double want, const char* what) {
    EXPECT_NEAR(got, want, std::abs(want) * std::ldexp(1.0, -8) + 1e-6) << what;
  };
  bool differs_from_bf16 = false;
  for (int b = 0; b < kBatch; ++b) {
    for (int o = 0; o < kOut; ++o) {
      double sum = bias[static_cast<std::size_t>(o)], plain = sum;
      for (int i = 0; i < kIn; ++i) {
        sum += at(xq, kIn, b, i) * at(kq, kOut, i, o);
        plain += at(x, kIn, b, i) * at(kernel, kOut, i, o);
      }
      expect_bf16_close(at(y, kOut, b, o), sum, "forward");
      differs_from_bf16 |= std::abs(plain - sum) > std::abs(sum) * std::ldexp(1.0, -6);
    }
  }
  EXPECT_TRUE(differs_from_bf16) << "the FP8 rounding should show in some output";
  for (int i = 0; i < kIn; ++i) {
    for (int o = 0; o < kOut; ++o) {
      double sum = 0.0;
      for (int b = 0; b < kBatch; ++b) sum += at(xq, kIn, b, i) * at(gq, kOut, b, o);
      expect_bf16_close(at(dkernel, kOut, i, o), sum, "kernel gradient");
    }
  }
  for (int b = 0; b < kBatch; ++b) {
    for (int i = 0; i < kIn; ++i) {
      double sum = 0.0;
      for (int o = 0; o < kOut; ++o) sum += at(gq, kOut, b, o) * at(kq, kOut, i, o);
      expect_bf16_close(at(dx, kIn, b, i), sum, "input gradient");
    }
  }
  for (int o = 0; o < kOut; ++o) {  // Keras adds the bias after the gradient's rounding
    double sum = 0.0;
    for (int b = 0; b < kBatch; ++b) sum += at(dy, kOut, b, o);
    expect_bf16_close(dbias[static_cast<std::size_t>(o)], sum, "bias gradient (unrounded)");
  }
}

// Training steps: each reports the Dense's three FP8 tensors, whose scales follow the recipe fed
// with the reported amaxes; the Dense kept in float32 reports none.
TEST(CpuFp8, StepsReportEachTensorAndItsDelayedScale) {
  ModelSpec spec;
  spec.name = "fp8-steps";
  spec.input_shape = {kIn};
  spec.layers.push_back(dense(6, ActivationFn::relu));
  LayerSpec kept = dense(4);
  kept.force_float32 = true;
  spec.layers.push_back(kept);
  spec.layers.push_back(activation(ActivationFn::softmax, true));
  Fp8Recipe recipe;
  recipe.history = 2;
  auto exec = compile(spec, Policy::mixed_float8, recipe);
  std::mt19937_64 rng(31);
  const auto x = bf16_values(kBatch * kIn, rng, 40.0);  // an amax of about 40
  const std::vector<std::int32_t> labels = {0, 1, 2, 3};
  exec->load_batch(x, labels, kBatch);

  Fp8TensorScaling input(Fp8Format::e4m3, recipe), kernel(Fp8Format::e4m3, recipe),
      gradient(Fp8Format::e5m2, recipe);
  float x_amax = 0.0f;
  for (float v : x) x_amax = std::max(x_amax, std::abs(v));
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    exec->launch_step(Phase::train, static_cast<std::uint64_t>(step));
    const StepResult r = exec->finish_step();
    ASSERT_TRUE(r.applied);
    ASSERT_EQ(r.fp8.size(), 3u);
    Fp8TensorScaling* expected[] = {&input, &kernel, &gradient};
    for (int i = 0; i < 3; ++i) {
      const Fp8TensorStep& t = r.fp8[static_cast<std::size_t>(i)];
      EXPECT_EQ(t.layer, 0);
      EXPECT_EQ(t.part, 0);
      EXPECT_EQ(t.role, static_cast<Fp8Role>(i));
      EXPECT_EQ(t.scale, expected[i]->scale()) << to_string(t.role);
      expected[i]->update(t.amax);
      EXPECT_EQ(t.next_scale, expected[i]->scale()) << to_string(t.role);
      EXPECT_GT(t.amax, 0.0f);
    }
    EXPECT_EQ(r.fp8[0].amax, x_amax);  // the batch itself, already bfloat16 values
    EXPECT_EQ(r.fp8[0].values, kBatch * kIn);
    EXPECT_EQ(r.fp8[1].values, kIn * 6);
    EXPECT_EQ(r.fp8[2].values, kBatch * 6);
    // Scale 1 maps 40 to 40, below E4M3's 448: nothing saturates, the small values flush.
    EXPECT_EQ(r.fp8[0].saturated, 0);
  }
  // From the second update on, the input's scale maps its amax to 448.
  EXPECT_EQ(input.scale(), 1.0f / (448.0f / x_amax));

  // An evaluation step neither reports nor updates.
  exec->launch_step(Phase::eval, 4);
  EXPECT_TRUE(exec->finish_step().fp8.empty());
}

TEST(CpuFp8, SaturationIsCountedAtTheScaleInUse) {
  auto exec = compile(one_dense(), Policy::mixed_float8);
  std::vector<float> x(kBatch * kIn, 1.0f);
  x[3] = 1000.0f;  // past 448 at scale 1
  x[7] = -500.0f;
  x[8] = 4e-4f;  // below half E4M3's smallest subnormal (2^-10): flushed to zero
  exec->load_batch(x, std::vector<std::int32_t>(kBatch, 0), kBatch);
  exec->launch_step(Phase::train, 0);
  const StepResult r = exec->finish_step();
  ASSERT_EQ(r.fp8.size(), 3u);
  EXPECT_EQ(r.fp8[0].saturated, 2);
  EXPECT_EQ(r.fp8[0].flushed, 1);
  EXPECT_EQ(r.fp8[0].amax, 1000.0f);
}

// The rounded input (kept for backward), kernel and gradient are in the executor's one
// allocation, so the run's memory figures count them. Against mixed_float16, whose layers run the
// same float32 primitives on emulated 16-bit values as mixed_float8's (mixed_bfloat16's are
// bfloat16 primitives where the CPU has them, with oneDNN scratchpads of other sizes).
TEST(CpuFp8, ItsRoundedCopiesAreInTheMemoryPlan) {
  const MemoryPlan f16 = compile(one_dense(), Policy::mixed_float16)->memory_plan();
  const MemoryPlan fp8 = compile(one_dense(), Policy::mixed_float8)->memory_plan();
  EXPECT_GE(fp8.activation_bytes - f16.activation_bytes, kBatch * kIn * 4);
  EXPECT_GE(fp8.weight_copy_bytes - f16.weight_copy_bytes, kIn * kOut * 4);
  EXPECT_GE(fp8.workspace_bytes - f16.workspace_bytes, kBatch * kOut * 4);
}

TEST(CpuFp8, Conv2DUsesFp8AndAPolicyWithoutFp8ReportsNothing) {
  ModelSpec spec;
  spec.name = "fp8-conv";
  spec.input_shape = {6, 6, 2};
  spec.layers.push_back(conv(3, {3, 3}, {1, 1}, Padding::valid, ActivationFn::relu));
  spec.layers.push_back(simple(LayerType::Flatten));
  spec.layers.push_back(dense(4));
  spec.layers.push_back(activation(ActivationFn::softmax, true));
  std::mt19937_64 rng(32);
  const auto x = bf16_values(kBatch * 6 * 6 * 2, rng, 1.0);
  for (Policy policy : {Policy::mixed_float8, Policy::mixed_bfloat16}) {
    SCOPED_TRACE(std::string(to_string(policy)));
    auto exec = compile(spec, policy);
    const std::vector<std::int32_t> labels = {0, 1, 2, 3};
    exec->load_batch(x, labels, kBatch);
    exec->launch_step(Phase::train, 0);
    const StepResult r = exec->finish_step();
    if (policy == Policy::mixed_bfloat16) {
      EXPECT_TRUE(r.fp8.empty());
      continue;
    }
    ASSERT_EQ(r.fp8.size(), 6u);
    EXPECT_EQ(r.fp8[0].layer, 0);  // Conv2D
    EXPECT_EQ(r.fp8[3].layer, 2);  // Dense
    EXPECT_EQ(r.fp8[1].values, 3 * 3 * 2 * 3);
    EXPECT_TRUE(std::isfinite(r.batch.loss));
  }
}

// "dtype": "bfloat16" keeps a layer out of FP8: it reports no tensors and computes what
// mixed_bfloat16 computes (bfloat16 rounding, no FP8 rounding), while the other Dense stays in.
TEST(CpuFp8, ALayerKeptInBfloat16ReportsNoTensorsAndComputesAsBfloat16) {
  ModelSpec spec;
  spec.name = "fp8-kept";
  spec.input_shape = {kIn};
  LayerSpec kept = dense(6, ActivationFn::relu);
  kept.force_bfloat16 = true;
  spec.layers.push_back(kept);
  spec.layers.push_back(dense(4));
  spec.layers.push_back(activation(ActivationFn::softmax, true));
  std::mt19937_64 rng(33);
  const auto x = bf16_values(kBatch * kIn, rng, 3.0);
  const std::vector<std::int32_t> labels = {0, 1, 2, 3};
  auto fp8 = compile(spec, Policy::mixed_float8);
  fp8->load_batch(x, labels, kBatch);
  fp8->launch_step(Phase::train, 0);
  const StepResult r = fp8->finish_step();
  ASSERT_EQ(r.fp8.size(), 3u);
  for (const Fp8TensorStep& t : r.fp8) EXPECT_EQ(t.layer, 1);
  // Every layer out of FP8: the loss is mixed_bfloat16's, on the same weights and batch.
  spec.layers[1].force_bfloat16 = true;
  auto none = compile(spec, Policy::mixed_float8);
  auto bf16 = compile(spec, Policy::mixed_bfloat16);
  float losses[2];
  int k = 0;
  for (auto* exec : {none.get(), bf16.get()}) {
    exec->load_batch(x, labels, kBatch);
    exec->launch_step(Phase::train, 0);
    const StepResult s = exec->finish_step();
    EXPECT_TRUE(s.fp8.empty());
    losses[k++] = static_cast<float>(s.batch.loss);
  }
  EXPECT_EQ(losses[0], losses[1]);
}

}  // namespace
}  // namespace mixlab
