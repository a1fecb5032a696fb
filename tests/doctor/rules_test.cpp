// The doctor's rules: for each, a case built to fire it and a clean case where it stays silent;
// the verdict's first words.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <algorithm>

#include "engine/doctor/diagnosis.h"
#include "engine/doctor/doctor_text.h"
#include "engine/doctor/report_json.h"
#include "tests/doctor/doctor_test_support.h"

namespace mixlab::doctor {
namespace {

using test::model;

const DeviceProfile& gpu(const char* name) { return find_profile(builtin_gpu_profiles(), name); }

DiagnosisInput input(const ModelSpec& spec, const DeviceProfile& device, int batch, Policy mixed,
                     OptimizerKind optimizer = OptimizerKind::sgd) {
  DiagnosisInput in;
  in.spec = spec;
  in.device = device;
  in.run.batch_size = batch;
  in.mixed = mixed;
  in.run.optimizer = default_optimizer(optimizer);
  return in;
}

Diagnosis diagnosis(const DiagnosisInput& in, const std::optional<Measurement>& m = {}) {
  return diagnose(in, m);
}

std::vector<Finding> run(std::vector<Finding> (*rule)(const Diagnosis&), const Diagnosis& d) {
  return rule(d);
}

// Wide and aligned: every GEMM compute-bound and well tiled on an H100 at batch 4096.
const ModelSpec& wide() {
  static const ModelSpec spec = model(R"({"name": "wide", "input": {"shape": [4096]}, "layers": [
      {"type": "Dense", "units": 4096, "activation": "relu"},
      {"type": "Dense", "units": 4096, "activation": "relu"},
      {"type": "Dense", "units": 16},
      {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})");
  return spec;
}

const ModelSpec& cifar10_mlp() {
  static const ModelSpec spec = model(R"({"name": "cifar10-mlp", "input": {"shape": [32, 32, 3]},
    "loss": "sparse_categorical_crossentropy", "layers": [
      {"type": "Flatten"}, {"type": "Dense", "units": 3000, "activation": "relu"},
      {"type": "Dense", "units": 1000, "activation": "relu"}, {"type": "Dense", "units": 10},
      {"type": "Activation", "activation": "sigmoid", "dtype": "float32"}]})");
  return spec;
}

TEST(Rules, CapabilityFiresForBfloat16OnTuringAndNoTensorCores) {
  const auto unsupported = run(rules::capability, diagnosis(input(wide(), gpu("RTX 2060"), 4096,
                                                                  Policy::mixed_bfloat16)));
  ASSERT_EQ(unsupported.size(), 1u);
  EXPECT_EQ(unsupported[0].severity, Severity::high);
  EXPECT_NE(unsupported[0].message.find("8.0"), std::string::npos) << unsupported[0].message;
  EXPECT_NE(unsupported[0].suggestion.find("mixed_float16"), std::string::npos);
  const auto no_tc = run(rules::capability, diagnosis(input(wide(), gpu("GTX 1660 Ti"), 4096,
                                                             Policy::mixed_float16)));
  ASSERT_EQ(no_tc.size(), 1u);
  EXPECT_NE(no_tc[0].message.find("no tensor cores"), std::string::npos);
  const auto cpu = run(rules::capability, diagnosis(input(wide(), test::round_cpu(), 32,
                                                           Policy::mixed_bfloat16)));
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_EQ(cpu[0].severity, Severity::medium);
  EXPECT_TRUE(run(rules::capability,
                  diagnosis(input(wide(), gpu("H100 SXM"), 4096, Policy::mixed_bfloat16)))
                  .empty());
}

TEST(Rules, AlignmentNamesTheBatchAndItsAlignedValue) {
  const Diagnosis d = diagnosis(input(wide(), gpu("A100 40GB"), 1020, Policy::mixed_float16));
  const auto f = run(rules::alignment, d);
  ASSERT_FALSE(f.empty());
  const auto batch = std::find_if(f.begin(), f.end(), [](const Finding& x) {
    return x.change.field == SuggestedChange::Field::batch_size;
  });
  ASSERT_NE(batch, f.end());
  EXPECT_EQ(batch->figures.at("value"), 1020);
  EXPECT_EQ(batch->figures.at("aligned_value"), 1024);
  EXPECT_EQ(batch->change.value, 1024);
  EXPECT_GT(batch->predicted_gain, 1.0);
  EXPECT_EQ(batch->layers, (std::vector<int>{0, 1, 2}));
  EXPECT_NE(batch->message.find("1020"), std::string::npos);
  EXPECT_TRUE(run(rules::alignment,
                  diagnosis(input(wide(), gpu("A100 40GB"), 1024, Policy::mixed_float16)))
                  .empty());
}

TEST(Rules, AlignmentNamesALayerWidthButNotTheOutputSize) {
  const ModelSpec spec = model(R"({"name": "odd", "input": {"shape": [4096]}, "layers": [
      {"type": "Dense", "units": 1001, "activation": "relu"}, {"type": "Dense", "units": 10}]})");
  DiagnosisInput in = input(spec, gpu("A100 40GB"), 1024, Policy::mixed_float16);
  in.run.data_on_device = true;  // else the batch copy outlasts the step, whatever the width
  const auto f = run(rules::alignment, diagnosis(in));
  ASSERT_EQ(f.size(), 2u);  // the 1001 units, and the 10 outputs (the next layer's 1001 inputs
                            // are the same finding)
  const bool first_is_units = f[0].layers == std::vector<int>{0};
  const Finding& units = first_is_units ? f[0] : f[1];
  const Finding& output = first_is_units ? f[1] : f[0];
  EXPECT_EQ(units.change.field, SuggestedChange::Field::units);
  EXPECT_EQ(units.change.layer, 0);
  EXPECT_EQ(units.change.value, 1000);
  EXPECT_GT(units.predicted_gain, 1.0);
  EXPECT_EQ(output.layers, std::vector<int>{1});
  EXPECT_EQ(output.severity, Severity::info);
  EXPECT_FALSE(output.change);
}

TEST(Rules, QuantizationFiresForAHalfEmptyWave) {
  // 384 x 1024 outputs in 256x128 tiles: 16 tiles (32 split) on an H100's 132 SMs.
  const ModelSpec spec = model(R"({"name": "q", "input": {"shape": [1024]}, "layers": [
      {"type": "Dense", "units": 1024}, {"type": "Dense", "units": 16}]})");
  const auto f =
      run(rules::quantization, diagnosis(input(spec, gpu("H100 SXM"), 384, Policy::mixed_float16)));
  ASSERT_FALSE(f.empty());
  EXPECT_LT(f[0].figures.at("wave_efficiency"), 0.8);
  EXPECT_TRUE(run(rules::quantization,
                  diagnosis(input(wide(), gpu("H100 SXM"), 4096, Policy::mixed_float16)))
                  .empty());
}

TEST(Rules, MemoryBoundFiresForSmallBatchGemms) {
  const auto f = run(rules::memory_bound,
                     diagnosis(input(cifar10_mlp(), gpu("H100 SXM"), 32, Policy::mixed_bfloat16)));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_LT(f[0].figures.at("intensity_flop_per_byte"), f[0].figures.at("ridge_flop_per_byte"));
  EXPECT_TRUE(run(rules::memory_bound,
                  diagnosis(input(wide(), gpu("H100 SXM"), 4096, Policy::mixed_bfloat16)))
                  .empty());
}

// Issue 27: a MobileNet-like block, whose 1x1 convolutions the tensor cores speed up, is held
// back by its BatchNormalization and DepthwiseConv2D layers; the wide MLP has none.
TEST(Rules, NormalizationBoundNamesBatchNormAndDepthwiseLayersAndTheirCap) {
  const ModelSpec spec = model(R"({"name": "mobile", "input": {"shape": [32, 32, 32]}, "layers": [
      {"type": "Conv2D", "filters": 192, "kernel_size": 1, "use_bias": false},
      {"type": "BatchNormalization"}, {"type": "ReLU", "max_value": 6},
      {"type": "DepthwiseConv2D", "kernel_size": 3, "padding": "same", "use_bias": false},
      {"type": "BatchNormalization"}, {"type": "ReLU", "max_value": 6},
      {"type": "Conv2D", "filters": 32, "kernel_size": 1, "use_bias": false},
      {"type": "BatchNormalization"},
      {"type": "GlobalAveragePooling2D"}, {"type": "Dense", "units": 10},
      {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})");
  const Diagnosis d = diagnosis(input(spec, gpu("H100 SXM"), 256, Policy::mixed_bfloat16));
  const auto f = run(rules::normalization_bound, d);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].layers, (std::vector<int>{1, 3, 4, 7}));
  EXPECT_GE(f[0].figures.at("share_of_step"), 0.3);
  // Memory-bound: 16 bits gain them about the 2x of halved bytes, not the tensor cores' 15x.
  EXPECT_LT(f[0].figures.at("gain_of_these_layers"), 2.5);
  EXPECT_GT(f[0].figures.at("speedup_bound"), 1.0);
  EXPECT_NE(f[0].message.find("BatchNormalization and DepthwiseConv2D layers take"),
            std::string::npos)
      << f[0].message;
  EXPECT_TRUE(run(rules::normalization_bound,
                  diagnosis(input(wide(), gpu("H100 SXM"), 4096, Policy::mixed_bfloat16)))
                  .empty());
}

// Attention over 1024 steps (issue 29): the unfused cores' 1024 x 1024 weights per head dominate
// the mixed step; the finding predicts cuDNN's fused attention (what --attention auto takes)
// where it applies (Ampere and later, 16-bit, heads of at most 128 in multiples of 8) and says
// why where it does not.
const ModelSpec& long_attention(int key_dim = 16, int steps = 1024) {
  static std::map<std::pair<int, int>, ModelSpec> specs;
  const std::pair<int, int> key{key_dim, steps};
  if (!specs.contains(key)) {
    const std::string json = R"({"name": "long-attention", "input": {"shape": [)" +
                             std::to_string(steps) + R"(]}, "layers": [
      {"type": "Embedding", "input_dim": 256, "output_dim": 64},
      {"type": "MultiHeadAttention", "num_heads": 8, "key_dim": )" +
                             std::to_string(key_dim) + R"(, "use_causal_mask": true},
      {"type": "Dense", "units": 256},
      {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})";
    specs[key] = model(json.c_str());
  }
  return specs[key];
}

TEST(Rules, AttentionBoundSaysWhatFusedAttentionGainsWhereItApplies) {
  DiagnosisInput unfused = input(long_attention(), gpu("RTX 4090"), 16, Policy::mixed_bfloat16);
  unfused.run.attention = AttentionKernels::unfused;
  const Diagnosis d = diagnosis(unfused);
  const auto f = run(rules::attention_bound, d);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].layers, (std::vector<int>{1}));
  EXPECT_GE(f[0].figures.at("share_of_step"), 0.5);
  // 8 heads of 1024 x 1024 bfloat16 weights a sample (the unfused kernels on a GPU).
  EXPECT_EQ(f[0].figures.at("weights_bytes_per_sample"), 2.0 * 1024 * 1024 * 8);
  EXPECT_GT(f[0].predicted_gain, 1.5);
  EXPECT_NE(f[0].suggestion.find("--attention auto"), std::string::npos) << f[0].suggestion;
  // The suggestion itself: the same diagnosis as a run with auto takes it predicts that step.
  DiagnosisInput fused = d.input;
  fused.run.attention = AttentionKernels::automatic;
  const Diagnosis df = diagnosis(fused);
  EXPECT_NEAR(d.mixed.step_s() / df.mixed.step_s(), f[0].predicted_gain, 1e-9);
  EXPECT_LT(df.mixed.step_s(), d.mixed.step_s());
  // float32 runs unfused either way (cuDNN fuses 16-bit attention only).
  EXPECT_EQ(df.float32.step_s(), d.float32.step_s());

  // Turing: no fused attention, and the finding says why.
  const auto turing =
      run(rules::attention_bound,
          diagnosis(input(long_attention(), gpu("RTX 2060 SUPER"), 16, Policy::mixed_float16)));
  ASSERT_EQ(turing.size(), 1u);
  EXPECT_EQ(turing[0].predicted_gain, 0.0);
  EXPECT_NE(turing[0].message.find("needs compute capability 8.0"), std::string::npos)
      << turing[0].message;
  // A head size off a multiple of 8.
  const auto odd =
      run(rules::attention_bound,
          diagnosis(input(long_attention(12), gpu("H100 SXM"), 16, Policy::mixed_bfloat16)));
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_NE(odd[0].message.find("a head size of 12"), std::string::npos) << odd[0].message;
  // A model without attention: nothing.
  EXPECT_TRUE(run(rules::attention_bound,
                  diagnosis(input(wide(), gpu("H100 SXM"), 4096, Policy::mixed_bfloat16)))
                  .empty());
}

// Issue 29: a head size off a multiple of 8 keeps cuDNN's fused attention off (the gain
// predicted with the fused kernels); a sequence length off one leaves the score GEMMs' tiles
// part empty.
TEST(Rules, AlignmentNamesAttentionsHeadSizeAndSequenceLength) {
  const auto attention_findings = [](const Diagnosis& d) {
    std::vector<Finding> out;
    for (Finding& f : run(rules::alignment, d)) {
      if (f.layers == std::vector<int>{1}) out.push_back(std::move(f));
    }
    return out;
  };
  const auto odd = attention_findings(
      diagnosis(input(long_attention(12), gpu("H100 SXM"), 16, Policy::mixed_bfloat16)));
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_NE(odd[0].message.find("key_dim 12 is not a multiple of 8"), std::string::npos)
      << odd[0].message;
  EXPECT_EQ(odd[0].change.field, SuggestedChange::Field::key_dim);
  EXPECT_EQ(odd[0].change.value, 16);
  // With the head size aligned, the fused kernels apply: far faster than the unfused scores.
  EXPECT_GT(odd[0].predicted_gain, 1.5);
  EXPECT_EQ(odd[0].severity, Severity::medium);
  EXPECT_EQ(odd[0].suggestion, "make key_dim 16");  // auto takes the fused kernels then
  DiagnosisInput asked_unfused =
      input(long_attention(12), gpu("H100 SXM"), 16, Policy::mixed_bfloat16);
  asked_unfused.run.attention = AttentionKernels::unfused;
  const auto odd_unfused = attention_findings(diagnosis(asked_unfused));
  ASSERT_EQ(odd_unfused.size(), 1u);
  EXPECT_EQ(odd_unfused[0].suggestion,
            "make key_dim 16 (the gain predicted with fused attention: --attention auto)");
  EXPECT_NEAR(odd_unfused[0].predicted_gain, odd[0].predicted_gain, 1e-9);
  // The change itself: key_dim 16 applies, value_dim following it.
  const DiagnosisInput changed = apply_change(
      input(long_attention(12), gpu("H100 SXM"), 16, Policy::mixed_bfloat16), odd[0].change);
  EXPECT_EQ(changed.spec.layers[1].key_dim, 16);

  // 1018 steps, on the unfused kernels: the score GEMMs on tensor cores feel it too, but their
  // memory traffic dominates; the finding names it either way.
  DiagnosisInput unfused_1018 =
      input(long_attention(16, 1018), gpu("H100 SXM"), 16, Policy::mixed_bfloat16);
  unfused_1018.run.attention = AttentionKernels::unfused;
  const auto unfused = attention_findings(diagnosis(unfused_1018));
  ASSERT_EQ(unfused.size(), 1u);
  EXPECT_NE(unfused[0].message.find("the sequence length 1018 is not a multiple of 8"),
            std::string::npos)
      << unfused[0].message;
  EXPECT_EQ(unfused[0].figures.at("aligned_value"), 1024);
  // Fused (auto), the misaligned score tiles cost the tensor cores their full rate: padding to
  // 1024 gains more than its extra work costs.
  const auto aligned = attention_findings(
      diagnosis(input(long_attention(16, 1018), gpu("H100 SXM"), 16, Policy::mixed_bfloat16)));
  ASSERT_EQ(aligned.size(), 1u);
  EXPECT_EQ(aligned[0].change.field, SuggestedChange::Field::sequence_length);
  EXPECT_EQ(aligned[0].change.value, 1024);
  EXPECT_GT(aligned[0].predicted_gain, 1.0);

  // Aligned, in float32, or on a CPU: nothing about attention.
  EXPECT_TRUE(attention_findings(
                  diagnosis(input(long_attention(), gpu("H100 SXM"), 16, Policy::mixed_bfloat16)))
                  .empty());
  EXPECT_TRUE(attention_findings(diagnosis(input(long_attention(12, 1018), test::round_cpu(), 16,
                                                 Policy::mixed_bfloat16)))
                  .empty());
}

TEST(Rules, WeightBoundFiresForTheBatch32MlpWithItsNumbers) {
  const Diagnosis d = diagnosis(input(cifar10_mlp(), gpu("RTX 2060"), 32, Policy::mixed_float16));
  const auto f = run(rules::weight_bound, d);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_GT(f[0].figures.at("weight_bytes"), 0.5 * f[0].figures.at("step_bytes"));
  EXPECT_NEAR(f[0].figures.at("params"), 12'230'010, 1);
  EXPECT_EQ(f[0].change.field, SuggestedChange::Field::batch_size);
  EXPECT_GT(f[0].change.value, 32);
  EXPECT_TRUE(run(rules::weight_bound,
                  diagnosis(input(wide(), gpu("RTX 2060"), 4096, Policy::mixed_float16)))
                  .empty());
}

// Where the 16-bit math is fast enough that mixed wins all the same (a CPU with AVX512-BF16
// running bf16 matmuls at twice float32's rate, as a Zen 4 EPYC measures), the finding must not
// say "no faster" against its own verdict, nor advise float32: it says what the traffic costs.
TEST(Rules, WeightBoundWhereMixedStillWinsSaysHowMuchTheTrafficCosts) {
  const ModelSpec mlp = model(R"({"name": "fashion-mlp", "input": {"shape": [28, 28, 1]},
    "loss": "sparse_categorical_crossentropy", "layers": [
      {"type": "Rescaling", "scale": 0.00392156862745098}, {"type": "Flatten"},
      {"type": "Dense", "units": 128, "activation": "relu"}, {"type": "Dense", "units": 10},
      {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})");
  DeviceProfile bf16_cpu = test::round_cpu();
  bf16_cpu.isa = CpuIsa::avx512_core_bf16;
  bf16_cpu.peak.bfloat16 = 2 * bf16_cpu.peak.float32;
  const Diagnosis d =
      diagnosis(input(mlp, bf16_cpu, 32, Policy::mixed_bfloat16, OptimizerKind::adam));
  ASSERT_GE(d.predicted_speedup(), 1.1) << "the case needs mixed predicted clearly faster";
  const auto f = run(rules::weight_bound, d);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_GT(f[0].figures.at("weight_bytes"), 0.5 * f[0].figures.at("step_bytes"));
  EXPECT_EQ(f[0].message.find("no faster"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("holds mixed precision's gain to " + ratio(d.predicted_speedup())),
            std::string::npos) << f[0].message;
  EXPECT_LE(f[0].severity, Severity::medium);
  EXPECT_EQ(f[0].suggestion.find("float32,"), std::string::npos) << f[0].suggestion;
  if (f[0].change.field == SuggestedChange::Field::batch_size) {
    // A larger batch where mixed wins clearly more than now.
    const Diagnosis at = diagnosis(input(mlp, bf16_cpu, static_cast<int>(f[0].change.value),
                                         Policy::mixed_bfloat16, OptimizerKind::adam));
    EXPECT_GE(at.predicted_speedup(), 1.1 * d.predicted_speedup());
  }
  // The verdict agrees with itself: faster, and no "no faster" after it.
  EXPECT_EQ(d.verdict.rfind("mixed_bfloat16 is predicted ", 0), 0u) << d.verdict;
  EXPECT_NE(d.verdict.find("faster than float32"), std::string::npos) << d.verdict;
  EXPECT_EQ(d.verdict.find("no faster"), std::string::npos) << d.verdict;

  // On the RTX 2060 the same traffic makes mixed slower: there it says so, and offers float32.
  const Diagnosis on_turing =
      diagnosis(input(cifar10_mlp(), gpu("RTX 2060"), 32, Policy::mixed_float16));
  const auto slower = run(rules::weight_bound, on_turing);
  ASSERT_EQ(slower.size(), 1u);
  EXPECT_NE(slower[0].message.find("expected to be no faster"), std::string::npos);
  EXPECT_EQ(slower[0].suggestion.rfind("stay in float32, or train at batch ", 0), 0u)
      << slower[0].suggestion;
}

TEST(Rules, SuggestionsCarryTheirGainInsideATrailingParenthesis) {
  EXPECT_EQ(with_gain("train at batch 64 or more (mixed then 1.30x faster than float32)", 1.59),
            "train at batch 64 or more "
            "(mixed then 1.30x faster than float32; predicted gain 1.59x)");
  EXPECT_EQ(with_gain("turn CUDA graphs on", 1.5), "turn CUDA graphs on (predicted gain 1.50x)");
  EXPECT_EQ(with_gain("stay in float32", 0.0), "stay in float32");
  EXPECT_EQ(with_gain("", 2.0), "");
}

TEST(Rules, OverheadBoundSuggestsCudaGraphs) {
  const ModelSpec tiny = model(R"({"name": "tiny", "input": {"shape": [16]}, "layers": [
      {"type": "Dense", "units": 16, "activation": "relu"}, {"type": "Dense", "units": 8}]})");
  const auto f =
      run(rules::overhead_bound, diagnosis(input(tiny, gpu("H100 SXM"), 8, Policy::mixed_float16)));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].change.field, SuggestedChange::Field::cuda_graphs);
  EXPECT_GT(f[0].predicted_gain, 1.0);
  EXPECT_TRUE(run(rules::overhead_bound,
                  diagnosis(input(wide(), gpu("H100 SXM"), 4096, Policy::mixed_float16)))
                  .empty());
}

Measurement measured(double step_ms, double wait_ms, std::int64_t skipped = 0) {
  Measurement m;
  m.float32.policy = Policy::float32;
  m.mixed.policy = Policy::mixed_float16;
  for (MeasuredRun* r : {&m.float32, &m.mixed}) {
    r->steps = 100;
    r->step_ms = step_ms;
    r->data_wait_ms = wait_ms;
  }
  m.mixed.skipped_steps = skipped;
  m.mixed.initial_loss_scale = 32768;
  m.mixed.final_loss_scale = skipped > 0 ? 4096 : 32768;
  m.mixed.scale_halvings = skipped > 0 ? 3 : 0;
  return m;
}

TEST(Rules, InputBoundUsesTensorBoardsThresholds) {
  DeviceProfile fast_link = gpu("H100 SXM");
  fast_link.host_link_bytes_per_s = 1e15;  // no copy predicted to show: only the measured wait
  const DiagnosisInput in = input(wide(), fast_link, 4096, Policy::mixed_float16);
  const auto high = run(rules::input_bound, diagnosis(in, measured(10, 2.5)));
  ASSERT_EQ(high.size(), 1u);
  EXPECT_EQ(high[0].severity, Severity::high);
  const auto moderate = run(rules::input_bound, diagnosis(in, measured(10, 0.6)));
  ASSERT_EQ(moderate.size(), 1u);
  EXPECT_EQ(moderate[0].severity, Severity::medium);
  EXPECT_EQ(moderate[0].change.field, SuggestedChange::Field::data_on_device);
  EXPECT_TRUE(run(rules::input_bound, diagnosis(in, measured(10, 0.1))).empty());
}

TEST(Rules, InputBoundIsPredictedWhenTheCopyOutlastsTheStep) {
  const ModelSpec images = model(R"({"name": "big-input", "input": {"shape": [256, 256, 3]},
      "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 8}]})");
  DiagnosisInput in = input(images, gpu("H100 SXM"), 256, Policy::mixed_float16);
  EXPECT_EQ(run(rules::input_bound, diagnosis(in)).size(), 1u);
  in.run.data_on_device = true;
  EXPECT_TRUE(run(rules::input_bound, diagnosis(in)).empty());
}

TEST(Rules, LossScalingFlagsSkippedStepsAndA16BitOutput) {
  const DiagnosisInput in = input(wide(), gpu("H100 SXM"), 4096, Policy::mixed_float16);
  const auto skipped = run(rules::loss_scaling, diagnosis(in, measured(10, 0, 5)));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].id, "loss-scaling");
  EXPECT_NE(skipped[0].suggestion.find("4096"), std::string::npos) << skipped[0].suggestion;
  EXPECT_TRUE(run(rules::loss_scaling, diagnosis(in, measured(10, 0, 0))).empty());

  const ModelSpec half_softmax = model(R"({"name": "s", "input": {"shape": [64]}, "layers": [
      {"type": "Dense", "units": 64}, {"type": "Activation", "activation": "softmax"}]})");
  const auto output =
      run(rules::loss_scaling, diagnosis(input(half_softmax, gpu("H100 SXM"), 64,
                                               Policy::mixed_float16)));
  ASSERT_EQ(output.size(), 1u);
  EXPECT_EQ(output[0].id, "output-precision");
  EXPECT_EQ(output[0].layers, std::vector<int>{1});
}

TEST(Rules, AModelThatDoesNotFitSaysHowManyBytes) {
  const auto f = run(rules::memory_fit,
                     diagnosis(input(wide(), gpu("RTX 2060"), 1 << 20, Policy::mixed_float16)));
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].id, "does-not-fit");
  EXPECT_GT(f[0].figures.at("needed_bytes"), f[0].figures.at("device_bytes"));
  EXPECT_EQ(f[0].change.field, SuggestedChange::Field::batch_size);
  EXPECT_TRUE(run(rules::memory_fit,
                  diagnosis(input(wide(), gpu("RTX 2060"), 256, Policy::mixed_float16)))
                  .empty());
}

TEST(Rules, AMeasuredLayerFarAboveItsRooflineIsTheLibrarys) {
  const DiagnosisInput in = input(wide(), gpu("H100 SXM"), 4096, Policy::mixed_float16);
  const Diagnosis predicted = diagnosis(in);
  Measurement m = measured(predicted.mixed.step_s() * 1e3, 0);
  for (MeasuredRun* r : {&m.float32, &m.mixed}) {
    const StepCost& c = r == &m.float32 ? predicted.float32 : predicted.mixed;
    for (int l = 0; l < 4; ++l) {
      r->layer_forward_ms.push_back(c.layer_seconds(l, false) * 1e3);
      r->layer_backward_ms.push_back(c.layer_seconds(l, true) * 1e3);
    }
  }
  EXPECT_TRUE(run(rules::measured_vs_predicted, diagnosis(in, m)).empty());
  m.mixed.layer_forward_ms[1] *= 6;
  m.mixed.layer_backward_ms[1] *= 6;
  const auto f = run(rules::measured_vs_predicted, diagnosis(in, m));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].layers, std::vector<int>{1});
  EXPECT_NEAR(f[0].figures.at("ratio"), 6.0, 0.01);
}

TEST(Verdict, ComesFirstAndSaysSlowerWithTheCause) {
  const Diagnosis d = diagnosis(input(cifar10_mlp(), gpu("RTX 2060"), 32, Policy::mixed_float16));
  EXPECT_LT(d.predicted_speedup(), 1.0);
  EXPECT_EQ(d.verdict.rfind("mixed_float16 is predicted ", 0), 0u) << d.verdict;
  EXPECT_NE(d.verdict.find("slower than float32 on an RTX 2060"), std::string::npos) << d.verdict;
  EXPECT_NE(d.verdict.find("master weights"), std::string::npos) << d.verdict;
  ASSERT_FALSE(d.findings.empty());
  for (std::size_t i = 1; i < d.findings.size(); ++i) {
    EXPECT_GE(d.findings[i - 1].severity, d.findings[i].severity);
  }
  const Diagnosis fast = diagnosis(input(wide(), gpu("H100 SXM"), 4096, Policy::mixed_bfloat16));
  EXPECT_GT(fast.predicted_speedup(), 2.0);
  EXPECT_NE(fast.verdict.find("faster than float32"), std::string::npos) << fast.verdict;
  const Diagnosis cannot =
      diagnosis(input(wide(), gpu("RTX 2060"), 4096, Policy::mixed_bfloat16));
  EXPECT_EQ(cannot.verdict.rfind("mixed_bfloat16 cannot run on an RTX 2060", 0), 0u)
      << cannot.verdict;
}

TEST(Report, JsonHasTheContractKeys) {
  const Diagnosis d = diagnosis(input(cifar10_mlp(), gpu("RTX 2060"), 32, Policy::mixed_float16));
  const auto j = to_json(d);
  for (const char* key : {"verdict", "device", "batch_size", "predicted_step_ms",
                          "predicted_speedup", "findings", "layers", "time_breakdown_ms"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_TRUE(j["predicted_step_ms"].contains("float32"));
  EXPECT_TRUE(j["predicted_step_ms"].contains("mixed_float16"));
  EXPECT_DOUBLE_EQ(j["predicted_speedup"].get<double>(),
                   j["predicted_step_ms"]["float32"].get<double>() /
                       j["predicted_step_ms"]["mixed_float16"].get<double>());
  for (const auto& f : j["findings"]) {
    for (const char* key : {"id", "severity", "layers", "message", "suggestion",
                            "predicted_gain"}) {
      EXPECT_TRUE(f.contains(key)) << key;
    }
  }
  EXPECT_FALSE(j.contains("measured_step_ms"));
}

TEST(Changes, ApplyToTheRunOrTheLayerNamed) {
  const DiagnosisInput in = input(cifar10_mlp(), gpu("RTX 2060"), 32, Policy::mixed_float16);
  using F = SuggestedChange::Field;
  EXPECT_EQ(apply_change(in, {F::batch_size, -1, 256}).run.batch_size, 256);
  EXPECT_EQ(apply_change(in, {F::units, 1, 3008}).spec.layers[1].units, 3008);
  EXPECT_TRUE(apply_change(in, {F::cuda_graphs, -1, 1}).run.cuda_graphs);
  EXPECT_THROW(apply_change(in, {F::units, 0, 8}), ConfigError);  // a Flatten
  EXPECT_THROW(apply_change(in, {F::filters, 1, 8}), ConfigError);
}

// The issue's second model: Conv2D 16 on 3 channels, AveragePooling2D 3/2, Dense.
const ModelSpec& three_channels() {
  static const ModelSpec spec = model(R"({"name": "three", "input": {"shape": [32, 32, 3]},
      "layers": [{"type": "Conv2D", "filters": 16, "kernel_size": 3, "activation": "relu"},
                 {"type": "AveragePooling2D", "pool_size": 3, "strides": 2},
                 {"type": "Flatten"}, {"type": "Dense", "units": 10, "activation": "softmax"}]})");
  return spec;
}

// Layer times as bench_layers gives them: forward and backward ms per layer.
MeasuredRun timed(Policy policy, std::vector<double> forward, std::vector<double> backward,
                  double optimizer_ms = 0.05) {
  MeasuredRun r;
  r.policy = policy;
  r.steps = 20;
  r.layer_forward_ms = std::move(forward);
  r.layer_backward_ms = std::move(backward);
  r.optimizer_ms = optimizer_ms;
  return r;
}

// Measured layer times replace the model's, item by item in proportion; the roofline's own
// stays beside them; a layer the model gives nothing (Flatten) but the device spends time on
// gets an item; the loss and the data stay modelled.
TEST(LayerTimes, ReplaceTheModelsPerLayerAndKeepTheRoofline) {
  const DiagnosisInput in = input(three_channels(), test::round_cpu(), 64, Policy::mixed_bfloat16);
  StepCost cost = predict_step(in.spec, Policy::float32, in.run, in.device);
  const double roofline_conv = cost.layer_model_seconds(0);
  const double loss_s = cost.seconds(CostPhase::loss);
  ASSERT_GT(roofline_conv, 0.0);
  apply_layer_times(cost, {0.7, 0.2, 0.01, 0.05}, {0.9, 0.3, 0.0, 0.4}, 0.06, "timed");
  EXPECT_NEAR(cost.layer_seconds(0, false), 0.7e-3, 1e-12);
  EXPECT_NEAR(cost.layer_seconds(0, true), 0.9e-3, 1e-12);
  EXPECT_NEAR(cost.layer_seconds(2, false), 0.01e-3, 1e-12);  // Flatten: an item of its own
  EXPECT_NEAR(cost.layer_seconds(3, true), 0.4e-3, 1e-12);
  EXPECT_NEAR(cost.seconds(CostPhase::optimizer) + cost.seconds(CostPhase::loss_scaling), 0.06e-3,
              1e-12);
  EXPECT_DOUBLE_EQ(cost.layer_model_seconds(0), roofline_conv);
  EXPECT_DOUBLE_EQ(cost.seconds(CostPhase::loss), loss_s);
  EXPECT_TRUE(cost.layer_measured(0));
  EXPECT_EQ(cost.measured_source, "timed");
}

// The 3-channel convolution that bf16 does not speed up is named, with its channels and the fix
// (on this CPU: keep it in float32, a change --what-if can measure; on a GPU: pad the input to 8
// channels); a layer that is slower in the mixed policy gets "keep it in float32" with the gain
// that would bring. Without timed layers (a device that is not here) the rule is silent.
TEST(Rules, MixedNoGainNamesTheThreeChannelConvolutionAndItsFix) {
  const DiagnosisInput in = input(three_channels(), test::round_cpu(), 64, Policy::mixed_bfloat16);
  Measurement times;
  times.float32 = timed(Policy::float32, {0.70, 0.20, 0.0, 0.05}, {0.90, 0.30, 0.0, 0.40});
  times.mixed = timed(Policy::mixed_bfloat16, {0.70, 0.25, 0.0, 0.03}, {0.88, 0.40, 0.0, 0.10});
  const Diagnosis d = diagnose(in, std::nullopt, times);
  const std::vector<Finding> found = rules::mixed_no_gain(d);
  ASSERT_EQ(found.size(), 2U);
  const Finding& conv = found[0];
  EXPECT_EQ(conv.id, "no-mixed-gain");
  EXPECT_EQ(conv.layers, std::vector<int>{0});
  EXPECT_NE(conv.message.find("gains nothing at this shape (3 input channels)"), std::string::npos)
      << conv.message;
  EXPECT_NEAR(conv.figures.at("measured_gain"), 1.6 / 1.58, 1e-9);
  EXPECT_EQ(conv.change.field, SuggestedChange::Field::layer_float32);
  EXPECT_EQ(conv.change.layer, 0);
  EXPECT_EQ(conv.severity, Severity::medium);  // over 15% of the mixed step
  const Finding& pool = found[1];
  EXPECT_EQ(pool.id, "slower-in-mixed");
  EXPECT_EQ(pool.layers, std::vector<int>{1});
  EXPECT_EQ(pool.change.field, SuggestedChange::Field::layer_float32);
  const double mixed_step = d.mixed.step_s();
  EXPECT_NEAR(pool.predicted_gain, mixed_step / (mixed_step - 0.65e-3 + 0.50e-3), 1e-9);
  // The change keeps that layer in float32.
  EXPECT_TRUE(apply_change(in, pool.change).spec.layers[1].force_float32);
  // The verdict rests on the timed layers.
  EXPECT_NEAR(d.predicted_speedup(), d.float32.step_s() / d.mixed.step_s(), 1e-12);
  EXPECT_FALSE(d.mixed.measured_source.empty());
  EXPECT_TRUE(rules::mixed_no_gain(diagnose(in)).empty());
  // A layer already kept in float32 gets no finding: the pooling in float32, the same times.
  DiagnosisInput kept = in;
  kept.spec.layers[1].force_float32 = true;
  const std::vector<Finding> kept_found = rules::mixed_no_gain(diagnose(kept, std::nullopt, times));
  ASSERT_EQ(kept_found.size(), 1U);
  EXPECT_EQ(kept_found[0].layers, std::vector<int>{0});
  // On a GPU the first convolution's fix is the padded input.
  const DiagnosisInput on_gpu =
      input(three_channels(), test::round_gpu(), 64, Policy::mixed_float16);
  const std::vector<Finding> gpu_found =
      rules::mixed_no_gain(diagnose(on_gpu, std::nullopt, times));
  ASSERT_FALSE(gpu_found.empty());
  EXPECT_EQ(gpu_found[0].change.field, SuggestedChange::Field::input_channels);
  EXPECT_EQ(gpu_found[0].change.value, 8);
}

}  // namespace
}  // namespace mixlab::doctor
