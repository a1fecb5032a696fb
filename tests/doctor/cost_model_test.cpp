// The doctor's cost model: FLOPs, bytes and launches of each phase against hand-computed values,
// tile and wave quantization against worked examples, and the step as a sum.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/doctor/cost_model.h"
#include "engine/doctor/library_rules.h"
#include "tests/doctor/doctor_test_support.h"

namespace mixlab::doctor {
namespace {

using test::model;
using test::round_cpu;
using test::round_gpu;

const CostItem& item(const StepCost& c, const std::string& label) {
  for (const CostItem& i : c.items) {
    if (i.label == label) return i;
  }
  ADD_FAILURE() << "no item '" << label << "'";
  static CostItem none;
  return none;
}

// A run at `batch` with SGD, the GPU options off.
RunConfig at(int batch) {
  RunConfig run;
  run.batch_size = batch;
  run.optimizer = default_optimizer(OptimizerKind::sgd);
  return run;
}

constexpr const char* kDense = R"({"name": "d", "input": {"shape": [8]},
  "layers": [{"type": "Dense", "units": 4}]})";

TEST(CostModel, DenseFloat32PhasesAsComputedByHand) {
  // Batch 2, 8 -> 4 with a bias: the GEMMs are (2 x 8) x (8 x 4).
  const StepCost c = predict_step(model(kDense), Policy::float32, at(2), round_gpu());
  const CostItem& f = item(c, "layer 0 (Dense) forward");
  EXPECT_EQ(f.phase, CostPhase::forward);
  EXPECT_EQ(f.kind, TimeKind::matmul);
  EXPECT_DOUBLE_EQ(f.flops, 2.0 * 2 * 8 * 4 + 2 * 4);          // multiply-adds, the bias
  EXPECT_DOUBLE_EQ(f.bytes_f32, 4.0 * (2 * 8 + 8 * 4 + 2 * 4 + 4));  // x, kernel, y, bias
  EXPECT_EQ(f.shape.m, 2);
  EXPECT_EQ(f.shape.n, 4);
  EXPECT_EQ(f.shape.k, 8);
  EXPECT_DOUBLE_EQ(f.compute_s, f.flops / 1e12);
  EXPECT_DOUBLE_EQ(f.memory_s, f.bytes() / 100e9);
  const CostItem& w = item(c, "layer 0 (Dense) backward weights");
  EXPECT_DOUBLE_EQ(w.flops, 2.0 * 2 * 8 * 4 + 2 * 4);
  EXPECT_DOUBLE_EQ(w.bytes_f32, 4.0 * (2 * 8 + 2 * 4 + 8 * 4 + 4));  // x, dy, dkernel, dbias
  // The first layer with parameters computes no gradient to the input.
  for (const CostItem& i : c.items) EXPECT_NE(i.phase, CostPhase::backward_data) << i.label;
  // The optimizer: SGD reads the master and the gradient and writes the master, 36 parameters.
  const CostItem& o = item(c, "sgd update");
  EXPECT_DOUBLE_EQ(o.bytes_f32, 12.0 * 36);
  EXPECT_EQ(o.launches, 1);
  // The batch copy: 2 x 8 floats and 2 labels over the host link.
  const CostItem& data = item(c, "input batch copy to the GPU");
  EXPECT_DOUBLE_EQ(data.bytes_f32, 4.0 * 16 + 4.0 * 2);
  EXPECT_DOUBLE_EQ(data.memory_s, data.bytes() / 10e9);
}

TEST(CostModel, MixedFloat16MovesHalfTheBytesAndCastsAndScales) {
  const StepCost c = predict_step(model(kDense), Policy::mixed_float16, at(2), round_gpu());
  const CostItem& cast = item(c, "layer 0 (Dense) cast");
  EXPECT_DOUBLE_EQ(cast.bytes_f32, 4.0 * 16);
  EXPECT_DOUBLE_EQ(cast.bytes_16, 2.0 * 16);
  const CostItem& f = item(c, "layer 0 (Dense) forward");
  EXPECT_EQ(f.dtype, DType::f16);
  EXPECT_DOUBLE_EQ(f.bytes_16, 2.0 * (2 * 8 + 8 * 4 + 2 * 4));
  EXPECT_DOUBLE_EQ(f.bytes_f32, 4.0 * 4);  // the bias stays float32
  // Batch 2 is not a multiple of 8: the tensor cores run it at the estimated half rate (the
  // profile names no libraries: MixLab's own, cuBLAS 11.0 and later).
  EXPECT_EQ(f.misaligned, "batch");
  EXPECT_FALSE(f.misaligned_without_tensor_cores);
  EXPECT_DOUBLE_EQ(f.peak_flops, 4e12 * kMisalignedEfficiencyEstimate);
  // The optimizer also writes the float16 copies; loss scaling reads and writes the gradients.
  const CostItem& o = item(c, "sgd update and float16 weight copies");
  EXPECT_DOUBLE_EQ(o.bytes_16, 2.0 * 36);
  const CostItem& s = item(c, "unscale and finite check of the gradients");
  EXPECT_DOUBLE_EQ(s.bytes_f32, 8.0 * 36);
  EXPECT_EQ(s.launches, 2);
}

// NVIDIA's guide, Table 1: before cuBLAS 11.0 (Dense) and cuDNN 7.6.3 (convolutions) a
// misaligned 16-bit GEMM ran without tensor cores; from them on, on them at a lower rate: the
// GPU calibration's measured figure where there is one.
TEST(CostModel, MisalignedGemmsFollowTheProfilesLibraries) {
  DeviceProfile old = round_gpu();
  old.libraries.cublas = "10.1";
  old.libraries.cudnn = "7.6.3";
  const ModelSpec spec = model(R"({"name": "c", "input": {"shape": [6, 6, 3]}, "layers": [
      {"type": "Conv2D", "filters": 8, "kernel_size": 3}, {"type": "Flatten"},
      {"type": "Dense", "units": 8}]})");
  const StepCost c = predict_step(spec, Policy::mixed_float16, at(2), old);
  const CostItem& dense = item(c, "layer 2 (Dense) forward");
  EXPECT_EQ(dense.misaligned, "batch");
  EXPECT_TRUE(dense.misaligned_without_tensor_cores);
  EXPECT_DOUBLE_EQ(dense.peak_flops, 1e12);  // the CUDA cores: float32's rate
  // The convolution's 3 input channels: cuDNN 7.6.3 already runs them on tensor cores.
  const CostItem& conv = item(c, "layer 0 (Conv2D) forward");
  EXPECT_EQ(conv.misaligned, "input channels");
  EXPECT_FALSE(conv.misaligned_without_tensor_cores);
  EXPECT_DOUBLE_EQ(conv.peak_flops, 4e12 * kMisalignedEfficiencyEstimate);
  old.libraries.cudnn = "7.6.2";
  EXPECT_DOUBLE_EQ(
      item(predict_step(spec, Policy::mixed_float16, at(2), old), "layer 0 (Conv2D) forward")
          .peak_flops,
      1e12);

  DeviceProfile measured = round_gpu();
  measured.libraries.cublas = "13.0";
  measured.misaligned_matmul_efficiency = 0.3;
  const StepCost m = predict_step(spec, Policy::mixed_float16, at(2), measured);
  EXPECT_DOUBLE_EQ(item(m, "layer 2 (Dense) forward").peak_flops, 4e12 * 0.3);
}

TEST(CostModel, AnAlignedBatchRunsAtTheTensorCoreRate) {
  const ModelSpec aligned = model(R"({"name": "d8", "input": {"shape": [8]},
      "layers": [{"type": "Dense", "units": 8}]})");
  const StepCost c = predict_step(aligned, Policy::mixed_float16, at(8), round_gpu());
  const CostItem& f = item(c, "layer 0 (Dense) forward");
  EXPECT_TRUE(f.misaligned.empty());
  EXPECT_DOUBLE_EQ(f.peak_flops, 4e12);
}

TEST(CostModel, Conv2DImplicitGemmsAsComputedByHand) {
  // 6x6x2 -> 4x4x3 with a 3x3 kernel, batch 1.
  const ModelSpec spec = model(R"({"name": "c", "input": {"shape": [6, 6, 2]}, "layers": [
      {"type": "Conv2D", "filters": 3, "kernel_size": 3}, {"type": "Flatten"},
      {"type": "Dense", "units": 2}]})");
  const StepCost c = predict_step(spec, Policy::float32, at(1), round_gpu());
  const CostItem& f = item(c, "layer 0 (Conv2D) forward");
  EXPECT_EQ(f.kind, TimeKind::convolution);
  EXPECT_EQ(f.shape.m, 16);  // batch x 4 x 4
  EXPECT_EQ(f.shape.n, 3);   // filters
  EXPECT_EQ(f.shape.k, 18);  // 2 channels x 3 x 3
  EXPECT_DOUBLE_EQ(f.flops, 2.0 * 16 * 18 * 3 + 48);
  EXPECT_DOUBLE_EQ(f.bytes_f32, 4.0 * (72 + 54 + 48));  // input, kernel, output
  const CostItem& w = item(c, "layer 0 (Conv2D) backward weights");
  EXPECT_EQ(w.shape.m, 3);
  EXPECT_EQ(w.shape.n, 18);
  EXPECT_EQ(w.shape.k, 16);
  EXPECT_DOUBLE_EQ(w.bytes_f32, 4.0 * (72 + 48 + 54 + 3));  // input, dy, dkernel, dbias
  // The Dense after it computes the gradient to its input (the Conv2D's output).
  const CostItem& d = item(c, "layer 2 (Dense) backward data");
  EXPECT_DOUBLE_EQ(d.flops, 2.0 * 1 * 48 * 2);
}

// A float32 node's float32 bytes are the sum of everything it moves: BatchNormalization's
// backward reads the input twice besides the gradients, and the CPU's attention moves the
// projections and its output besides the scores (both once overwrote what they had added).
TEST(CostModel, Float32BytesAddUpForBatchNormAndAttention) {
  const ModelSpec bn = model(R"({"name": "bn", "input": {"shape": [4, 4, 2]}, "layers": [
      {"type": "Conv2D", "filters": 2, "kernel_size": 1}, {"type": "BatchNormalization"},
      {"type": "Flatten"}, {"type": "Dense", "units": 2}]})");
  const StepCost c = predict_step(bn, Policy::float32, at(1), round_gpu());
  // 32 values: the input twice, the gradient in and the gradient out, the input's gradient.
  EXPECT_DOUBLE_EQ(item(c, "layer 1 (BatchNormalization) batch_norm backward").bytes_f32,
                   4.0 * (2 * 32 + 2 * 32 + 32));
  const ModelSpec mha = model(R"({"name": "mha", "input": {"shape": [4, 8]}, "layers": [
      {"type": "MultiHeadAttention", "num_heads": 2, "key_dim": 4},
      {"type": "GlobalAveragePooling1D"}, {"type": "Dense", "units": 2}]})");
  const StepCost a = predict_step(mha, Policy::float32, at(1), round_cpu());
  const CostItem* core = nullptr;
  for (const CostItem& i : a.items) {
    if (i.label.find("(scores, float32 softmax, weighted values)") != std::string::npos) core = &i;
  }
  ASSERT_NE(core, nullptr);
  // 4 steps, 2 heads of 4: the queries, keys and values (96), the heads' output (32), the
  // 2 x 4 x 4 weights (32).
  EXPECT_DOUBLE_EQ(core->bytes_f32, 4.0 * (96 + 32 + 32));
}

TEST(CostModel, PoolingForwardAndBackwardAsComputedByHand) {
  const ModelSpec spec = model(R"({"name": "p", "input": {"shape": [4, 4, 3]}, "layers": [
      {"type": "Conv2D", "filters": 3, "kernel_size": 1}, {"type": "MaxPooling2D"},
      {"type": "Flatten"}, {"type": "Dense", "units": 2}]})");
  const StepCost c = predict_step(spec, Policy::float32, at(1), round_gpu());
  const CostItem& f = item(c, "layer 1 (MaxPooling2D) forward");
  EXPECT_DOUBLE_EQ(f.flops, 48);                   // every input element compared once
  EXPECT_DOUBLE_EQ(f.bytes_f32, 4.0 * (48 + 12));  // 4x4x3 in, 2x2x3 out
  const CostItem& b = item(c, "layer 1 (MaxPooling2D) backward");
  EXPECT_DOUBLE_EQ(b.bytes_f32, 4.0 * (12 + 48 + 48));  // dy, dx, x
}

TEST(CostModel, TheCpuEmulatesBfloat16WithRoundingPasses) {
  const StepCost f32 = predict_step(model(kDense), Policy::float32, at(8), round_cpu());
  const StepCost bf16 = predict_step(model(kDense), Policy::mixed_bfloat16, at(8), round_cpu());
  const CostItem& f = item(bf16, "layer 0 (Dense) forward");
  EXPECT_TRUE(f.emulated);
  EXPECT_DOUBLE_EQ(f.bytes_16, 0.0);  // stored as float32 on an AVX2 CPU
  EXPECT_DOUBLE_EQ(item(bf16, "layer 0 (Dense) bfloat16 rounding (emulated)").bytes_f32,
                   8.0 * 8 * 4);
  EXPECT_GT(bf16.step_s(), f32.step_s());
  EXPECT_EQ(bf16.support.level, Support::emulated);
}

TEST(CostModel, TheStepIsTheSumAndAGpuCopyOverlaps) {
  const StepCost c = predict_step(model(kDense), Policy::float32, at(2), round_gpu());
  double rest = 0, data = 0;
  for (const CostItem& i : c.items) (i.phase == CostPhase::data ? data : rest) += i.time_s();
  EXPECT_DOUBLE_EQ(c.step_s(), rest + std::max(0.0, data - rest));
  const StepCost cpu = predict_step(model(kDense), Policy::float32, at(2), round_cpu());
  double all = 0;
  for (const CostItem& i : cpu.items) all += i.time_s();
  EXPECT_DOUBLE_EQ(cpu.step_s(), all);
}

TEST(CostModel, TileQuantizationWorkedExample) {
  // NVIDIA's guide: 257 columns in 128-wide tiles need 3 tiles, a third of the last one used.
  const GemmQuantization q = quantize_gemm({128, 257, 1024}, 128, 128, 1000);
  EXPECT_EQ(q.tiles, 3);
  EXPECT_NEAR(q.tile_efficiency, 257.0 / 384.0, 1e-12);
}

TEST(CostModel, WaveQuantizationWorkedExample) {
  // 108 SMs (A100), 256x128 tiles: 9 x 12 = 108 tiles fill one wave; one more row of tiles
  // (10 x 12 = 120) needs a second wave that is almost empty.
  const GemmQuantization full = quantize_gemm({9 * 256, 12 * 128, 4096}, 256, 128, 108);
  EXPECT_EQ(full.waves, 1);
  EXPECT_DOUBLE_EQ(full.wave_efficiency, 1.0);
  const GemmQuantization more = quantize_gemm({10 * 256, 12 * 128, 4096}, 256, 128, 108);
  EXPECT_EQ(more.tiles, 120);
  EXPECT_EQ(more.waves, 2);
  EXPECT_NEAR(more.wave_efficiency, 120.0 / 216.0, 1e-12);
}

TEST(CostModel, ALongReductionWithFewTilesIsSplit) {
  // A weight gradient: 64 x 48 outputs over 857,820 rows on 34 SMs: one 64x64 tile, split 34 ways.
  const GemmQuantization q = quantize_gemm({64, 48, 857820}, 34);
  EXPECT_EQ(q.tile_m, 64);
  EXPECT_EQ(q.split_k, 34);
  EXPECT_DOUBLE_EQ(q.wave_efficiency, 1.0);
  EXPECT_DOUBLE_EQ(q.tile_efficiency, 0.75);
}

TEST(CostModel, Batch1020AndBatch1024Differ) {
  const ModelSpec spec = model(R"({"name": "m", "input": {"shape": [4096]}, "layers": [
      {"type": "Dense", "units": 4096, "activation": "relu"},
      {"type": "Dense", "units": 4096, "activation": "relu"}, {"type": "Dense", "units": 128}]})");
  const DeviceProfile& gpu = find_profile(builtin_gpu_profiles(), "RTX 2060 SUPER");
  const StepCost b1020 = predict_step(spec, Policy::mixed_float16, at(1020), gpu);
  const StepCost b1024 = predict_step(spec, Policy::mixed_float16, at(1024), gpu);
  EXPECT_GT(b1020.step_s() / 1020, 1.5 * b1024.step_s() / 1024);
}

TEST(CostModel, BadInputIsNamed) {
  EXPECT_THROW(predict_step(model(kDense), Policy::float32, at(0), round_gpu()), ConfigError);
  DeviceProfile broken = round_gpu();
  broken.bandwidth_bytes_per_s = 0;
  EXPECT_THROW(predict_step(model(kDense), Policy::float32, at(2), broken), ConfigError);
}

// A CPU whose bf16 convolutions reach the bf16 roof's 40% at 64 channels but 5% at 16 (oneDNN's
// kernels on narrow layers): the narrow layer's bf16 time follows the narrow figure, the wide
// one's the wide figure, and float32 its own; without the narrow figures, the wide stand in.
TEST(CostModel, ConvolutionsRunAtTheirMeasuredWidthsEfficiency) {
  DeviceProfile cpu = round_cpu();
  cpu.isa = CpuIsa::avx512_core_amx;
  cpu.peak.bfloat16 = 800e9;
  cpu.bandwidth_bytes_per_s = 1e15;  // compute-bound, so the ratios show the efficiencies
  cpu.convolution_efficiency = 0.8;
  const auto conv_seconds = [&](const DeviceProfile& device, int channels, Policy policy) {
    const ModelSpec spec = model(
        (std::string(R"({"name": "c", "input": {"shape": [32, 32, )") + std::to_string(channels) +
         R"(]}, "layers": [{"type": "Conv2D", "filters": )" + std::to_string(channels) +
         R"(, "kernel_size": 3, "padding": "same", "use_bias": false},
                                  {"type": "Flatten"}, {"type": "Dense", "units": 2}]})")
            .c_str());
    double s = 0;
    for (const CostItem& item : predict_step(spec, policy, at(32), device).items) {
      if (item.kind == TimeKind::convolution && item.phase == CostPhase::forward)
        s += item.time_s();
    }
    return s;
  };
  const double f32_wide = conv_seconds(cpu, 64, Policy::float32);
  const double bf16_wide_unmeasured = conv_seconds(cpu, 64, Policy::mixed_bfloat16);
  const double bf16_narrow_unmeasured = conv_seconds(cpu, 16, Policy::mixed_bfloat16);
  DeviceProfile measured = cpu;
  measured.narrow_convolution_efficiency = 0.4;
  measured.bf16_convolution_efficiency = 0.4;
  measured.bf16_narrow_convolution_efficiency = 0.05;
  // 16x the FLOPs at 64 channels; the bf16 roof is 8x float32's.
  EXPECT_NEAR(conv_seconds(measured, 64, Policy::float32), f32_wide, 1e-12);
  EXPECT_NEAR(conv_seconds(measured, 16, Policy::float32) * 16 * 0.4 / 0.8, f32_wide,
              f32_wide * 1e-6);
  EXPECT_NEAR(conv_seconds(measured, 64, Policy::mixed_bfloat16), bf16_wide_unmeasured * 0.8 / 0.4,
              bf16_wide_unmeasured * 1e-6);
  EXPECT_NEAR(conv_seconds(measured, 16, Policy::mixed_bfloat16),
              bf16_narrow_unmeasured * 0.8 / 0.05, bf16_narrow_unmeasured * 1e-6);
  // 32 channels: halfway, geometrically.
  EXPECT_NEAR(conv_seconds(measured, 32, Policy::mixed_bfloat16) /
                  conv_seconds(cpu, 32, Policy::mixed_bfloat16),
              0.8 / std::sqrt(0.05 * 0.4), 1e-6);
}

TEST(CostModel, TheRooflineBoundIsBelowThePrediction) {
  DeviceProfile cpu = round_cpu();
  cpu.small_gemm_efficiency = 0.5;
  cpu.launch_overhead_s = 1e-6;
  const ModelSpec spec = model(kDense);
  const double predicted = predict_step(spec, Policy::float32, at(32), cpu).step_s();
  const double bound = roofline_bound_s(spec, Policy::float32, at(32), cpu);
  EXPECT_LT(bound, predicted);
  EXPECT_GT(bound, 0.0);
}

}  // namespace
}  // namespace mixlab::doctor
