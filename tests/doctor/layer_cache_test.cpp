// The layer-times cache (issue 28, section 1): a second diagnosis of the same model on the same
// device reads each policy's layer times instead of timing them; the key changes with all the
// times depend on and not with what they do not (the name, the learning rate, the seed); the
// calibration caches' rules hold (a FIFO is left alone, an absurd entry is timed over).
#include "engine/doctor/layer_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "engine/train/run_fields.h"
#include "tests/data/data_files.h"  // TempDir
#include "tests/doctor/doctor_test_support.h"

namespace mixlab::doctor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

DiagnosisInput small_input() {
  DiagnosisInput in;
  in.spec = test::model(R"({"name": "small", "input": {"shape": [6, 6, 1]}, "layers": [
      {"type": "Conv2D", "filters": 4, "kernel_size": 3}, {"type": "Flatten"},
      {"type": "Dense", "units": 4}]})");
  in.device = test::round_cpu();
  in.run.batch_size = 8;
  in.run.threads = 1;
  in.mixed = Policy::mixed_bfloat16;
  in.run.optimizer = default_optimizer(OptimizerKind::adam);
  return in;
}

json read(const fs::path& file) {
  std::ifstream in(file);
  return json::parse(in);
}

TEST(LayerCache, TheKeyFollowsWhatTheTimesDependOn) {
  const DiagnosisInput in = small_input();
  DeviceInfo cpu;
  cpu.kind = "cpu";
  cpu.name = "Test CPU";
  cpu.threads = 2;
  const std::string key = layer_times_key(in, Policy::float32, cpu);
  EXPECT_EQ(key.size(), 16u);
  EXPECT_EQ(key, layer_times_key(in, Policy::float32, cpu));

  DiagnosisInput same = in;
  same.spec.name = "renamed";
  same.run.optimizer.learning_rate = 0.5;
  same.run.seed = 7;
  EXPECT_EQ(layer_times_key(same, Policy::float32, cpu), key);

  EXPECT_NE(layer_times_key(in, Policy::mixed_bfloat16, cpu), key);
  DiagnosisInput batch = in;
  batch.run.batch_size = 16;
  EXPECT_NE(layer_times_key(batch, Policy::float32, cpu), key);
  DiagnosisInput wider = in;
  wider.spec.layers[0].filters = 8;
  EXPECT_NE(layer_times_key(wider, Policy::float32, cpu), key);
  DiagnosisInput sgd = in;
  sgd.run.optimizer = default_optimizer(OptimizerKind::sgd);
  EXPECT_NE(layer_times_key(sgd, Policy::float32, cpu), key);
  DeviceInfo threads = cpu;
  threads.threads = 4;
  EXPECT_NE(layer_times_key(in, Policy::float32, threads), key);
  DeviceInfo library = cpu;
  library.libraries.onednn = "3.0.0";
  EXPECT_NE(layer_times_key(in, Policy::float32, library), key);
}

TEST(LayerCache, ASecondDiagnosisReadsTheTimesAndRetimeMeasuresAgain) {
  const mixlab::test::TempDir temp;
  const fs::path cache = temp / "sub" / "layer-times.json";
  const DiagnosisInput in = small_input();
  const auto backend = make_cpu_backend(1);
  const std::atomic<bool> cancel{false};

  LayerCacheUse first;
  const Measurement a = cached_bench_layers(in, *backend, cache, false, cancel, &first);
  EXPECT_EQ(first.timed, 2);
  EXPECT_EQ(first.cached, 0);
  EXPECT_EQ(first.note, "");
  EXPECT_TRUE(a.float32.cached.empty());
  ASSERT_EQ(a.float32.layer_forward_ms.size(), 3u);
  ASSERT_TRUE(fs::exists(cache));
  EXPECT_EQ(read(cache).size(), 2u);

  LayerCacheUse second;
  const Measurement b = cached_bench_layers(in, *backend, cache, false, cancel, &second);
  EXPECT_EQ(second.timed, 0);
  EXPECT_EQ(second.cached, 2);
  EXPECT_EQ(b.float32.layer_forward_ms, a.float32.layer_forward_ms);
  EXPECT_EQ(b.mixed.layer_backward_ms, a.mixed.layer_backward_ms);
  EXPECT_EQ(b.mixed.policy, Policy::mixed_bfloat16);
  EXPECT_EQ(b.mixed.optimizer_ms, a.mixed.optimizer_ms);
  EXPECT_NE(b.float32.cached.find("kept in " + cache.string()), std::string::npos)
      << b.float32.cached;
  // The diagnosis says the times were read from the cache.
  const Diagnosis d = diagnose(in, std::nullopt, b);
  EXPECT_NE(d.float32.measured_source.find("kept in"), std::string::npos)
      << d.float32.measured_source;

  // float32 is shared with another mixed policy's comparison: one timed, one read.
  DiagnosisInput f16 = in;
  f16.mixed = Policy::mixed_float16;
  LayerCacheUse third;
  cached_bench_layers(f16, *backend, cache, false, cancel, &third);
  EXPECT_EQ(third.cached, 1);
  EXPECT_EQ(third.timed, 1);
  EXPECT_EQ(read(cache).size(), 3u);

  LayerCacheUse retimed;
  cached_bench_layers(in, *backend, cache, true, cancel, &retimed);
  EXPECT_EQ(retimed.timed, 2);
  EXPECT_EQ(read(cache).size(), 3u);  // replaced, not added
}

// mixed_float8 also times its baseline, mixed_bfloat16 (one more entry), and its entry keeps
// the run's saturation: a rescaled input past E4M3's 448 saturates at the first step's scale.
TEST(LayerCache, MixedFloat8KeepsItsBaselineAndItsSaturation) {
  const mixlab::test::TempDir temp;
  const fs::path cache = temp / "layer-times.json";
  DiagnosisInput in;
  in.spec = test::model(R"({"name": "hot", "input": {"shape": [8]}, "layers": [
      {"type": "Rescaling", "scale": 8}, {"type": "Dense", "units": 8},
      {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})");
  in.device = test::round_cpu();
  in.run.batch_size = 8;
  in.run.threads = 1;
  in.mixed = Policy::mixed_float8;
  in.run.optimizer = default_optimizer(OptimizerKind::sgd);
  const auto backend = make_cpu_backend(1);
  const std::atomic<bool> cancel{false};
  LayerCacheUse first;
  const Measurement a = cached_bench_layers(in, *backend, cache, false, cancel, &first);
  EXPECT_EQ(first.timed, 3);
  ASSERT_TRUE(a.baseline.has_value());
  EXPECT_EQ(a.baseline->policy, Policy::mixed_bfloat16);
  ASSERT_EQ(a.mixed.fp8_saturation.size(), 1u);
  EXPECT_EQ(a.mixed.fp8_saturation[0].layer, 1);
  EXPECT_EQ(a.mixed.fp8_saturation[0].tensor, "input");
  EXPECT_GT(a.mixed.fp8_saturation[0].share, rules::kFp8SaturationThreshold);
  EXPECT_TRUE(a.baseline->fp8_saturation.empty());
  LayerCacheUse second;
  const Measurement b = cached_bench_layers(in, *backend, cache, false, cancel, &second);
  EXPECT_EQ(second.cached, 3);
  EXPECT_EQ(b.mixed.policy, Policy::mixed_float8);
  ASSERT_EQ(b.mixed.fp8_saturation.size(), 1u);
  EXPECT_EQ(b.mixed.fp8_saturation[0].share, a.mixed.fp8_saturation[0].share);
  EXPECT_EQ(b.mixed.fp8_saturation[0].step, a.mixed.fp8_saturation[0].step);
  ASSERT_TRUE(b.baseline.has_value());
  EXPECT_EQ(b.baseline->layer_forward_ms, a.baseline->layer_forward_ms);
  // The diagnosis names the layer from the cached timing.
  const Diagnosis d = diagnose(in, std::nullopt, b);
  EXPECT_TRUE(std::any_of(d.findings.begin(), d.findings.end(), [](const Finding& f) {
    return f.id == "fp8-saturation" && f.layers == std::vector<int>{1};
  }));
}

TEST(LayerCache, AbsurdEntriesAreTimedOverAndAFifoIsLeftAlone) {
  const mixlab::test::TempDir temp;
  const fs::path cache = temp / "layer-times.json";
  const DiagnosisInput in = small_input();
  const auto backend = make_cpu_backend(1);
  const std::atomic<bool> cancel{false};
  cached_bench_layers(in, *backend, cache, false, cancel);
  json entries = read(cache);
  entries[0]["layer_forward_ms"][1] = -1.0;
  entries[1]["layer_backward_ms"] = json::array({1.0});
  std::ofstream(cache) << entries.dump();
  LayerCacheUse use;
  cached_bench_layers(in, *backend, cache, false, cancel, &use);
  EXPECT_EQ(use.timed, 2);
  EXPECT_NE(use.note.find("is not used (layer 1's layer_forward_ms is -1"), std::string::npos)
      << use.note;
  EXPECT_NE(use.note.find("is not used (layer_backward_ms has 1 times for 3 layers)"),
            std::string::npos)
      << use.note;
  for (const json& e : read(cache)) EXPECT_EQ(e["layer_forward_ms"].size(), 3u);

  std::ofstream(cache) << "[{\"format\": 3}, 17, {broken";
  LayerCacheUse broken;
  cached_bench_layers(in, *backend, cache, false, cancel, &broken);
  EXPECT_NE(broken.note.find("not a layer-times cache"), std::string::npos) << broken.note;
  EXPECT_EQ(read(cache).size(), 2u);

  const fs::path fifo = temp / "fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  LayerCacheUse ignored;
  cached_bench_layers(in, *backend, fifo, false, cancel, &ignored);
  EXPECT_EQ(ignored.timed, 2);
  EXPECT_NE(ignored.note.find("not a regular file"), std::string::npos) << ignored.note;
  EXPECT_NE(ignored.note.find("left as it is"), std::string::npos) << ignored.note;
  EXPECT_TRUE(fs::is_fifo(fifo));
}

}  // namespace
}  // namespace mixlab::doctor
