// The doctor on mixed_float8 (issue 30): the cost model's FP8 GEMMs, casts and scale updates,
// the gain over mixed_bfloat16 on FP8 tensor cores, and the rules that name the layers to keep
// out of FP8 (misaligned, too small, saturating in a measured run).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "engine/doctor/diagnosis.h"
#include "engine/doctor/report_json.h"
#include "tests/doctor/doctor_test_support.h"

namespace mixlab::doctor {
namespace {

using Field = SuggestedChange::Field;
using test::model;

const DeviceProfile& gpu(const char* name) {
  return find_profile(builtin_gpu_profiles(), name);
}

DiagnosisInput input(const ModelSpec& spec, const DeviceProfile& device, int batch,
                     Policy mixed = Policy::mixed_float8) {
  DiagnosisInput in;
  in.spec = spec;
  in.device = device;
  in.run.batch_size = batch;
  in.mixed = mixed;
  in.run.optimizer = default_optimizer(OptimizerKind::sgd);
  return in;
}

// The issue's bench model: 4 x Dense(4096), a 16-unit head.
ModelSpec mlp4096() {
  return model(R"({"name": "mlp4096", "input": {"shape": [4096]}, "layers": [
      {"type": "Dense", "units": 4096, "activation": "relu"},
      {"type": "Dense", "units": 4096, "activation": "relu"},
      {"type": "Dense", "units": 4096, "activation": "relu"},
      {"type": "Dense", "units": 4096, "activation": "relu"},
      {"type": "Dense", "units": 16},
      {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})");
}

const Finding* find(const Diagnosis& d, const std::string& id) {
  const auto it = std::find_if(d.findings.begin(), d.findings.end(),
                               [&](const Finding& f) { return f.id == id; });
  return it == d.findings.end() ? nullptr : &*it;
}

int fp8_gemms(const StepCost& cost, int layer) {
  return static_cast<int>(
      std::count_if(cost.items.begin(), cost.items.end(),
                    [&](const CostItem& i) { return i.layer == layer && i.fp8; }));
}

TEST(Fp8Doctor, LargeGemmsOnAnH100RunAtTheFp8RateAndBeatBfloat16) {
  const Diagnosis d = diagnose(input(mlp4096(), gpu("H100 SXM"), 4096));
  ASSERT_TRUE(d.baseline.has_value());
  EXPECT_EQ(d.baseline->policy, Policy::mixed_bfloat16);
  EXPECT_EQ(d.mixed.support.level, Support::native);
  EXPECT_TRUE(d.mixed.support.reason.empty());
  // Forward, weight gradient and data gradient (the first layer's input needs none).
  EXPECT_EQ(fp8_gemms(d.mixed, 0), 2);
  for (int layer = 1; layer < 5; ++layer) EXPECT_EQ(fp8_gemms(d.mixed, layer), 3) << layer;
  for (const CostItem& item : d.mixed.items) {
    if (!item.fp8) continue;
    EXPECT_DOUBLE_EQ(item.peak_flops, gpu("H100 SXM").peak.fp8 * item.quantization.efficiency());
    EXPECT_GT(item.bytes_8, 0.0);
  }
  // The casts and the scale updates are paid for.
  EXPECT_GT(d.mixed.seconds(TimeKind::casts), d.baseline->seconds(TimeKind::casts));
  EXPECT_TRUE(std::any_of(d.mixed.items.begin(), d.mixed.items.end(), [](const CostItem& i) {
    return i.label == "FP8 amax histories and scales";
  }));
  // Twice the matmul rate, less the casts: faster than bfloat16, by less than 2x.
  EXPECT_GT(d.predicted_fp8_speedup(), 1.15);
  EXPECT_LT(d.predicted_fp8_speedup(), 2.0);
  EXPECT_NE(d.verdict.find("faster than mixed_bfloat16"), std::string::npos) << d.verdict;
  const Finding* f = find(d, "fp8");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->figures.at("on_fp8_tensor_cores"), 5.0);
  const auto json = to_json(d);
  EXPECT_EQ(json.at("baseline").at("policy"), "mixed_bfloat16");
  EXPECT_GT(json.at("baseline").at("predicted_speedup").get<double>(), 1.15);
}

TEST(Fp8Doctor, BelowComputeCapability89ItCannotRunAndSaysWhy) {
  const Diagnosis d = diagnose(input(mlp4096(), gpu("A100 80GB"), 4096));
  EXPECT_EQ(d.mixed.support.level, Support::unsupported);
  EXPECT_EQ(std::count_if(d.mixed.items.begin(), d.mixed.items.end(),
                          [](const CostItem& i) { return i.fp8; }),
            0);
  const Finding* f = find(d, "capability");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::high);
  EXPECT_NE(f->message.find("8.9"), std::string::npos) << f->message;
  EXPECT_EQ(d.verdict.rfind("mixed_float8 cannot run on an A100 80GB", 0), 0u) << d.verdict;
}

TEST(Fp8Doctor, AMatmulOffAMultipleOf16StaysInBfloat16AndIsNamed) {
  // 4088 is a multiple of 8 (the 16-bit rule is content) but not of 16.
  const ModelSpec spec = model(R"({"name": "m", "input": {"shape": [4096]}, "layers": [
      {"type": "Dense", "units": 4088, "activation": "relu"},
      {"type": "Dense", "units": 4096, "activation": "relu"},
      {"type": "Dense", "units": 16},
      {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})");
  DiagnosisInput in = input(spec, gpu("H100 SXM"), 4096);
  in.run.data_on_device = true;  // else the batch's copy bounds the step
  const Diagnosis d = diagnose(in);
  EXPECT_EQ(fp8_gemms(d.mixed, 0), 0);  // its forward and both gradients
  EXPECT_EQ(fp8_gemms(d.mixed, 1), 0);  // reads 4088 input features
  EXPECT_EQ(fp8_gemms(d.mixed, 2), 3);
  const Finding* f = find(d, "fp8-alignment");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->layers, std::vector<int>{0});  // layer 1's input features: layer 0's finding
  EXPECT_EQ(std::count_if(d.findings.begin(), d.findings.end(),
                          [](const Finding& x) { return x.id == "fp8-alignment"; }),
            1);
  EXPECT_NE(f->message.find("units 4088 is not a multiple of 16"), std::string::npos) << f->message;
  EXPECT_EQ(f->change.field, Field::units);
  EXPECT_EQ(f->change.value, 4096);
  EXPECT_GT(f->predicted_gain, 1.0);
  // The batch is every layer's.
  const Diagnosis odd = diagnose(input(mlp4096(), gpu("H100 SXM"), 4104));
  const Finding* b = find(odd, "fp8-alignment");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->change.field, Field::batch_size);
  EXPECT_EQ(b->change.value % 16, 0);
}

TEST(Fp8Doctor, SmallLayersThatDoNotRepayTheirCastsAreToldToStayInBfloat16) {
  const ModelSpec spec = model(R"({"name": "small", "input": {"shape": [64]}, "layers": [
      {"type": "Dense", "units": 64, "activation": "relu"},
      {"type": "Dense", "units": 64, "activation": "relu"},
      {"type": "Dense", "units": 16},
      {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})");
  const DiagnosisInput in = input(spec, gpu("RTX 4090"), 64);
  const Diagnosis d = diagnose(in);
  const Finding* f = find(d, "fp8-too-small");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->layers.empty());
  EXPECT_EQ(f->change.field, Field::layer_bfloat16);
  EXPECT_GT(f->predicted_gain, 1.0);
  EXPECT_NE(f->suggestion.find("\"dtype\": \"bfloat16\""), std::string::npos);
  // The change keeps that layer out of FP8: no FP8 GEMM, no FP8 cast.
  const DiagnosisInput kept = apply_change(in, f->change);
  EXPECT_TRUE(kept.spec.layers[static_cast<std::size_t>(f->change.layer)].force_bfloat16);
  const StepCost after = predict_step(kept.spec, kept.mixed, kept.run, kept.device);
  EXPECT_EQ(fp8_gemms(after, f->change.layer), 0);
  EXPECT_LT(after.step_s(), d.mixed.step_s());
  // The large layers of the MLP repay them; its 16-unit head does not.
  const Diagnosis large = diagnose(input(mlp4096(), gpu("H100 SXM"), 4096));
  const Finding* mlp = find(large, "fp8-too-small");
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->layers, std::vector<int>{4});
}

// A GPU keeps convolutions with windows larger than 1x1 in bfloat16 and says so; a pointwise
// one is a Dense over the pixels, on the FP8 GEMMs when its dimensions are multiples of 16 (the
// CUDA backend's choice), else named by fp8-alignment.
TEST(Fp8Doctor, GpusRunPointwiseConvolutionsOnFp8GemmsAndKeepTheRestInBfloat16) {
  const ModelSpec spec = model(R"({"name": "cnn", "input": {"shape": [14, 14, 256]}, "layers": [
      {"type": "Conv2D", "filters": 256, "kernel_size": 3, "padding": "same", "activation": "relu"},
      {"type": "Conv2D", "filters": 1024, "kernel_size": 1, "activation": "relu"},
      {"type": "Conv2D", "filters": 24, "kernel_size": 1},
      {"type": "GlobalAveragePooling2D"}, {"type": "Dense", "units": 16},
      {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})");
  const Diagnosis d = diagnose(input(spec, gpu("H100 SXM"), 256));
  EXPECT_EQ(fp8_gemms(d.mixed, 0), 0);
  EXPECT_EQ(fp8_gemms(d.mixed, 1), 3);  // forward, weights, data: Dense's
  EXPECT_EQ(fp8_gemms(d.mixed, 2), 0);
  const Finding* f = find(d, "fp8-convolutions");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->layers, std::vector<int>{0});
  EXPECT_EQ(f->message.rfind("1 Conv2D layer with a window larger than 1x1 is predicted", 0), 0u)
      << f->message;
  const Finding* a = find(d, "fp8-alignment");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->layers, std::vector<int>{2});
  EXPECT_EQ(a->figures.at("value"), 24);
  EXPECT_NE(a->message.find("filters 24"), std::string::npos) << a->message;
  ASSERT_TRUE(d.baseline.has_value());
  const auto layer_s = [](const StepCost& c, int li) {
    return c.layer_seconds(li, false) + c.layer_seconds(li, true);
  };
  std::printf(
      "[ figures  ] 1x1 conv 256 -> 1024 at 14x14, batch 256, H100 SXM: FP8 %.3f ms, "
      "bfloat16 %.3f ms\n",
      layer_s(d.mixed, 1) * 1e3, layer_s(*d.baseline, 1) * 1e3);
  EXPECT_EQ(layer_s(d.mixed, 0), layer_s(*d.baseline, 0)) << "the 3x3 runs as in bfloat16";
}

// On the CPU FP8 is emulated: a scalar pass per rounded tensor on top of bfloat16's emulation.
TEST(Fp8Doctor, TheCpusEmulationIsPredictedSlowerThanBfloat16) {
  const Diagnosis d = diagnose(input(mlp4096(), test::round_cpu(), 256));
  ASSERT_TRUE(d.baseline.has_value());
  EXPECT_EQ(d.mixed.support.level, Support::emulated);
  EXPECT_LT(d.predicted_fp8_speedup(), 1.0);
  const auto rounding =
      std::count_if(d.mixed.items.begin(), d.mixed.items.end(), [](const CostItem& i) {
        return i.label.find("FP8 rounding (emulated)") != std::string::npos;
      });
  EXPECT_EQ(rounding, 2 * 5);          // input and kernel, gradient: each of the five Dense
  EXPECT_EQ(find(d, "fp8"), nullptr);  // no FP8 tensor cores to report
}

TEST(Fp8Doctor, AMeasuredLayerThatSaturatesIsNamedWithItsShare) {
  const DiagnosisInput in = input(mlp4096(), test::round_cpu(), 256);
  Measurement m;
  m.float32.policy = Policy::float32;
  m.float32.step_ms = 10.0;
  m.mixed.policy = Policy::mixed_float8;
  m.mixed.step_ms = 30.0;
  m.mixed.fp8_saturation = {{1, "gradient", 0.034, 7}, {2, "input", 0.002, 3}};
  const Diagnosis d = diagnose(in, m);
  std::vector<const Finding*> saturating;
  for (const Finding& f : d.findings)
    if (f.id == "fp8-saturation") saturating.push_back(&f);
  ASSERT_EQ(saturating.size(), 1u);  // 0.2% is under the threshold
  const Finding& f = *saturating[0];
  EXPECT_EQ(f.layers, std::vector<int>{1});
  EXPECT_EQ(f.severity, Severity::medium);
  EXPECT_NE(f.message.find("3.4% of its gradient's values saturated at E5M2's largest in step 7"),
            std::string::npos)
      << f.message;
  EXPECT_EQ(f.change.field, Field::layer_bfloat16);
  EXPECT_EQ(f.change.layer, 1);
  EXPECT_DOUBLE_EQ(f.figures.at("saturated_share"), 0.034);
}

TEST(Fp8Doctor, ALayerKeptInBfloat16OrFloat32HasNoFp8Gemm) {
  ModelSpec spec = mlp4096();
  spec.layers[1].force_bfloat16 = true;
  spec.layers[2].force_float32 = true;
  const Diagnosis d = diagnose(input(spec, gpu("H100 SXM"), 4096));
  EXPECT_EQ(fp8_gemms(d.mixed, 0), 2);
  EXPECT_EQ(fp8_gemms(d.mixed, 1), 0);
  EXPECT_EQ(fp8_gemms(d.mixed, 2), 0);
  EXPECT_EQ(fp8_gemms(d.mixed, 3), 3);
  EXPECT_EQ(describe({Field::layer_bfloat16, 1, 1}), "layer 1 in bfloat16 (out of FP8)");
}

}  // namespace
}  // namespace mixlab::doctor
