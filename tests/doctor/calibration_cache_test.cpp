// The doctor's calibration caches (issue 25): a cache that is not a regular file is ignored and
// left alone, not read (a FIFO once blocked the doctor, a directory failed it), and an entry
// whose figures no real device has is not used (1e-300 roofs once gave infinite step times).
#include "engine/doctor/calibration_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/data/data_files.h"  // TempDir

namespace mixlab::doctor {
namespace {

namespace fs = std::filesystem;

class CalibrationCacheTest : public ::testing::Test {
 protected:
  const test::TempDir temp_;
  const fs::path& dir_ = temp_.path();
};

CpuCalibration sane_cpu() {
  CpuCalibration c;
  c.cpu = "Test CPU";
  c.threads = 4;
  c.isa = CpuIsa::avx2;
  c.onednn = "2.6.3 avx2";
  c.f32_matmul_flops = 300e9;
  c.f32_small_matmul_flops = 200e9;
  c.f32_conv_flops = 250e9;
  c.stream_bytes_per_s = 20e9;
  c.pooling_bytes_per_s = 10e9;
  c.call_overhead_s = 2e-6;
  return c;
}

TEST_F(CalibrationCacheTest, SaneEntriesAreReadAndAbsurdFiguresNamed) {
  CpuCalibration absurd = sane_cpu();
  absurd.threads = 2;
  absurd.stream_bytes_per_s = 1e-300;
  nlohmann::json odd = to_json(sane_cpu());
  odd["threads"] = 1e300;  // not a thread count: another format's entry
  const std::string text =
      nlohmann::json::array({to_json(sane_cpu()), to_json(absurd), odd, {{"gpu", "x"}}}).dump();
  const auto entries = parse_calibration_cache<CpuCalibration>(text, "c.json");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].problem, "");
  EXPECT_EQ(entries[0].calibration.threads, 4);
  EXPECT_EQ(entries[0].calibration.stream_bytes_per_s, 20e9);
  EXPECT_EQ(entries[1].problem,
            "field 'stream_bytes_per_s' is 1e-309 GB/s; a real device's lies between 0.1 and "
            "100000 GB/s");
  EXPECT_THROW(parse_calibration_cache<CpuCalibration>("{\"a\": 1}", "c.json"), ProfileError);
  EXPECT_THROW(parse_calibration_cache<GpuCalibration>("[1, 2", "c.json"), ProfileError);
}

// What calibrate_gpu measures on real GPUs lies within the bounds: a cached entry is used, not
// measured again at every diagnosis (H200 figures as measured on one, 2026-12).
TEST_F(CalibrationCacheTest, RealGpuCalibrationsPass) {
  GpuCalibration h200;
  h200.gpu = "NVIDIA H200";
  h200.compute_capability = "9.0";
  h200.libraries = "CUDA 12.4";
  h200.sm_count = 132;
  h200.clock_mhz = 1980;
  h200.memory_bytes = 150'110'011'392;
  h200.l2_bytes = 62'914'560;
  h200.memory_bus_bytes_per_s = 4.8e12;
  h200.f32_matmul_flops = 51e12;
  h200.tf32_matmul_flops = 378e12;
  h200.f16_matmul_flops = 690e12;
  h200.bf16_matmul_flops = 700e12;
  h200.copy_bytes_per_s = 3.9e12;
  h200.host_copy_bytes_per_s = 53e9;
  h200.call_overhead_s = 3.5e-6;
  GpuCalibration turing = h200;  // no TF32 or bfloat16 path: 0
  turing.tf32_matmul_flops = turing.bf16_matmul_flops = 0;
  const std::string text = nlohmann::json::array({to_json(h200), to_json(turing)}).dump();
  const auto entries = parse_calibration_cache<GpuCalibration>(text, "gpu.json");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].problem, "");
  EXPECT_EQ(entries[1].problem, "");
}

// The misaligned GEMMs' efficiency (issue 28, section 4): kept and read back; absent from a
// cache written before it was measured (not measured: 0, the estimate stands); bounded.
TEST_F(CalibrationCacheTest, MisalignedEfficiencyIsKeptAndOptional) {
  GpuCalibration gpu;
  gpu.gpu = "NVIDIA H200";
  gpu.compute_capability = "9.0";
  gpu.sm_count = 132;
  gpu.clock_mhz = 1980;
  gpu.memory_bytes = 150'110'011'392;
  gpu.f32_matmul_flops = 51e12;
  gpu.f16_matmul_flops = 690e12;
  gpu.copy_bytes_per_s = 3.9e12;
  gpu.host_copy_bytes_per_s = 53e9;
  gpu.call_overhead_s = 3.5e-6;
  gpu.misaligned_matmul_efficiency = 0.62;
  nlohmann::json older = to_json(gpu);
  older.erase("misaligned_matmul_efficiency");
  GpuCalibration absurd = gpu;
  absurd.misaligned_matmul_efficiency = 1e6;
  const std::string text = nlohmann::json::array({to_json(gpu), older, to_json(absurd)}).dump();
  const auto entries = parse_calibration_cache<GpuCalibration>(text, "gpu.json");
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].problem, "");
  EXPECT_EQ(entries[0].calibration.misaligned_matmul_efficiency, 0.62);
  EXPECT_EQ(entries[1].problem, "");
  EXPECT_EQ(entries[1].calibration.misaligned_matmul_efficiency, 0.0);
  EXPECT_NE(entries[2].problem.find("misaligned_matmul_efficiency"), std::string::npos)
      << entries[2].problem;
}

TEST_F(CalibrationCacheTest, WhatIsNotARegularFileIsIgnoredAndLeftAlone) {
  const fs::path fifo = dir_ / "fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  CacheFile<CpuCalibration> cache = read_calibration_cache<CpuCalibration>(fifo);  // no block
  EXPECT_NE(cache.problem.find("fifo.json: cannot read calibration cache: not a regular file (a "
                               "FIFO)"),
            std::string::npos)
      << cache.problem;
  EXPECT_FALSE(cache.writable);
  fs::create_directories(dir_ / "dir.json");
  cache = read_calibration_cache<CpuCalibration>(dir_ / "dir.json");
  EXPECT_NE(cache.problem.find("dir.json: cannot read calibration cache: it is a directory"),
            std::string::npos)
      << cache.problem;
  EXPECT_FALSE(cache.writable);
  // Missing: nothing to say, and written.
  cache = read_calibration_cache<CpuCalibration>(dir_ / "new" / "cache.json");
  EXPECT_EQ(cache.problem, "");
  EXPECT_TRUE(cache.writable);
  EXPECT_TRUE(cache.entries.empty());
  ASSERT_TRUE(write_calibration_cache(dir_ / "new" / "cache.json", {to_json(sane_cpu())}));
  cache = read_calibration_cache<CpuCalibration>(dir_ / "new" / "cache.json");
  ASSERT_EQ(cache.entries.size(), 1u);
  EXPECT_EQ(cache.entries[0].calibration.cpu, "Test CPU");
  // Broken JSON: said, and rewritten.
  std::ofstream(dir_ / "broken.json") << "{broken";
  cache = read_calibration_cache<CpuCalibration>(dir_ / "broken.json");
  EXPECT_NE(cache.problem.find("broken.json: not valid JSON"), std::string::npos) << cache.problem;
  EXPECT_TRUE(cache.writable);
}

}  // namespace
}  // namespace mixlab::doctor
