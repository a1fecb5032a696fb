// The doctor's measured side: the local CPU's profile, calibrated once and then read from its
// cache, and an A/B measurement with per-layer times set beside the prediction.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "engine/doctor/local_profile.h"
#include "engine/doctor/measure.h"
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
  in.batch = 16;
  in.mixed = Policy::mixed_float16;
  in.optimizer = default_optimizer(OptimizerKind::adam);
  MeasureOptions options;
  options.steps = 8;
  options.warmup = 2;
  options.threads = 1;
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

}  // namespace
}  // namespace mixlab::doctor
