// The doctor's measured side: the local CPU's profile, calibrated once and then read from its
// cache, and an A/B measurement with per-layer times set beside the prediction.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/doctor/local_profile.h"
#include "engine/doctor/measure.h"
#include "engine/train/run_fields.h"
#include "tests/doctor/doctor_test_support.h"

namespace mixlab::doctor {
namespace {

namespace fs = std::filesystem;

TEST(LocalProfile, IsMeasuredOnceAndThenReadFromTheCache) {
  std::string dir = (fs::temp_directory_path() / "mixlab-doctor-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const fs::path cache = fs::path(dir) / "sub" / "cpu-profiles.json";
  bool measured = false;
  const DeviceProfile first = local_cpu_profile(2, cache, false, &measured);
  EXPECT_TRUE(measured);
  EXPECT_TRUE(first.measured);
  EXPECT_FALSE(first.is_gpu());
  EXPECT_EQ(first.threads, 2);
  EXPECT_GT(first.peak.float32, 1e9);
  EXPECT_GT(first.bandwidth_bytes_per_s, 1e9);
  EXPECT_GT(first.small_gemm_efficiency, 0.0);
  EXPECT_LE(first.small_gemm_efficiency, 1.0);
  ASSERT_TRUE(fs::exists(cache));
  const DeviceProfile second = local_cpu_profile(2, cache, false, &measured);
  EXPECT_FALSE(measured);
  EXPECT_DOUBLE_EQ(second.peak.float32, first.peak.float32);
  // A broken cache is measured over, not an error.
  std::ofstream(cache) << "{broken";
  local_cpu_profile(2, cache, false, &measured);
  EXPECT_TRUE(measured);
  fs::remove_all(dir);
}

TEST(Measure, RunsBothPoliciesWithLayerTimesBesideThePrediction) {
  DiagnosisInput in;
  in.spec = test::model(R"({"name": "small", "input": {"shape": [8, 8, 1]}, "layers": [
      {"type": "Flatten"}, {"type": "Dense", "units": 32, "activation": "relu"},
      {"type": "Dense", "units": 4}, {"type": "Activation", "activation": "softmax",
      "dtype": "float32"}]})");
  in.device = test::round_cpu();
  in.run.batch_size = 16;
  in.run.threads = 1;
  in.mixed = Policy::mixed_float16;
  in.run.optimizer = default_optimizer(OptimizerKind::adam);
  MeasureOptions options;
  options.steps = 8;
  options.warmup = 2;
  // Every figure of each run also reaches the sink asked for (the CLI's run-store recorder).
  struct Counting : RunSink {
    int starts = 0, steps = 0, finishes = 0;
    RunStatus status = RunStatus::running;
    void on_start(const RunInfo&) override { ++starts; }
    void on_step(const StepMetrics&) override { ++steps; }
    void on_finish(const RunSummary& s) override {
      ++finishes;
      status = s.status;
    }
  } counting;
  std::vector<int> batches;
  options.also_to = [&](const RunConfig& config) -> RunSink* {
    batches.push_back(config.batch_size);
    return &counting;
  };
  const auto backend = make_cpu_backend(1);
  const std::atomic<bool> cancel{false};
  const Measurement m = measure(in, *backend, options, cancel);
  EXPECT_EQ(batches, (std::vector<int>{16, 16}));
  EXPECT_EQ(counting.starts, 2);
  EXPECT_EQ(counting.steps, 16);
  EXPECT_EQ(counting.finishes, 2);
  EXPECT_EQ(counting.status, RunStatus::finished);
  EXPECT_EQ(m.float32.policy, Policy::float32);
  EXPECT_EQ(m.mixed.policy, Policy::mixed_float16);
  for (const MeasuredRun* r : {&m.float32, &m.mixed}) {
    EXPECT_EQ(r->steps, 8);
    EXPECT_GT(r->step_ms, 0.0);
    ASSERT_EQ(r->layer_forward_ms.size(), 4u);
    EXPECT_GT(r->layer_forward_ms[1], 0.0);
    EXPECT_GT(r->layer_backward_ms[1], 0.0);
  }
  // mixed_float16 runs with Keras's dynamic loss scaling from 2^15.
  EXPECT_EQ(m.mixed.initial_loss_scale, 32768.0);
  const Diagnosis d = diagnose(in, m);
  EXPECT_NE(d.verdict.find("Measured: "), std::string::npos) << d.verdict;
}

// Each item's figures, to tell two predictions apart.
std::vector<double> figures(const StepCost& cost) {
  std::vector<double> out;
  for (const CostItem& item : cost.items) {
    out.insert(out.end(), {item.flops, item.bytes(), item.peak_flops, item.compute_s,
                           item.memory_s, item.overhead_s});
  }
  return out;
}

// Every GPU option of the run-settings table reaches the doctor from the run it is given, with
// no copy on the way: the measured runs carry it, and the prediction changes with it. A GPU
// option the table gains is checked here with no edit; one the doctor drops fails.
TEST(DiagnosisRun, EveryGpuOptionReachesTheMeasurementAndThePrediction) {
  DiagnosisInput off;
  off.spec = test::model(R"({"name": "small", "input": {"shape": [16, 16, 1]}, "layers": [
      {"type": "Conv2D", "filters": 8, "kernel_size": 3, "activation": "relu"},
      {"type": "Flatten"}, {"type": "Dense", "units": 10, "activation": "softmax"}]})");
  off.device = test::round_gpu();
  off.device.peak.tf32 = 2 * off.device.peak.float32;  // what TF32 changes
  off.device.launch_overhead_s = 5e-6;                 // what CUDA graphs change
  off.run.batch_size = 64;
  // The attention kernels change attention only (the example, unfused, against auto's fused
  // kernels), and cuDNN fuses 16-bit attention only: a model with a MultiHeadAttention, its
  // mixed step.
  DiagnosisInput attention_off = off;
  attention_off.spec = test::model(R"({"name": "attention", "input": {"shape": [64]},
      "layers": [{"type": "Embedding", "input_dim": 16, "output_dim": 32},
      {"type": "MultiHeadAttention", "num_heads": 2, "key_dim": 16},
      {"type": "Dense", "units": 16, "activation": "softmax", "dtype": "float32"}]})");
  attention_off.device.compute_capability = "9.0";
  int options = 0;
  for (const RunField& field : run_fields()) {
    if (!field.gpu_only) continue;
    SCOPED_TRACE(std::string(field.name));
    ++options;
    const bool attention = field.name == "attention";
    const DiagnosisInput& base = attention ? attention_off : off;
    DiagnosisInput on = base;
    set_field_text(field, on.run, field.example);
    ASSERT_NE(field.get(on.run), field.get(base.run));
    for (const Policy policy : {Policy::float32, on.mixed}) {
      EXPECT_EQ(field.get(measure_config(on, policy, {})), field.get(on.run));
      EXPECT_EQ(field.get(measure_config(base, policy, {})), field.get(base.run));
    }
    const Diagnosis with = diagnose(on), without = diagnose(base);
    EXPECT_EQ(field.get(with.input.run), field.get(on.run));
    EXPECT_NE(figures(attention ? with.mixed : with.float32),
              figures(attention ? without.mixed : without.float32))
        << "the cost model does not see " << field.name;
  }
  EXPECT_EQ(options, 4);  // TF32, CUDA graphs, the attention kernels, the dataset on the device
}

// The measured runs are the input's run but for what the measurement sets itself.
TEST(DiagnosisRun, MeasuredRunsAreTheInputsRunButForTheMeasurementsOwnSettings) {
  DiagnosisInput in;
  in.spec = test::model(R"({"name": "small", "input": {"shape": [8, 8, 1]}, "layers": [
      {"type": "Flatten"}, {"type": "Dense", "units": 4}]})");
  in.device = test::round_cpu();
  in.run.batch_size = 24;
  in.run.seed = 7;
  in.run.threads = 3;
  in.run.optimizer = default_optimizer(OptimizerKind::sgd);
  in.run.optimizer.momentum = 0.5;
  in.run.precision = Policy::mixed_bfloat16;  // the Run panel's: the doctor's own win
  MeasureOptions options;
  options.steps = 20;
  options.warmup = 3;
  const RunConfig c = measure_config(in, Policy::mixed_float16, options);
  EXPECT_EQ(c.batch_size, 24);
  EXPECT_EQ(c.seed, 7u);
  EXPECT_EQ(c.threads, 3);
  EXPECT_EQ(c.optimizer.kind, OptimizerKind::sgd);
  EXPECT_EQ(c.optimizer.momentum, 0.5);
  EXPECT_EQ(c.precision, Policy::mixed_float16);
  EXPECT_EQ(c.loss_scale.to_string(), LossScaleConfig::keras_default(c.precision).to_string());
  EXPECT_EQ(c.steps, 20);
  EXPECT_EQ(c.warmup_steps, 3);
  EXPECT_FALSE(c.evaluate);
  EXPECT_EQ(c.dataset.kind, DatasetSpec::Kind::synthetic);
  EXPECT_EQ(c.dataset.train_size, 8 * 24);
  // A CPU measurement runs (and records) them as a CPU run does: without the GPU options.
  in.run.tf32 = true;
  const RunConfig on_cpu =
      applicable_config(measure_config(in, Policy::float32, options), make_cpu_backend(1)->device());
  EXPECT_FALSE(on_cpu.tf32);
}

}  // namespace
}  // namespace mixlab::doctor
