// The present GPU's calibration (mixlab::calibrate_gpu, the doctor's profile of a GPU of this
// machine) against physics and the GPU's published profile: every figure there, the tensor-core
// rates above float32's, no rate above its datasheet peak (+15% for clocks above the datasheet's)
// or far below it (a wrong path: the wrong compute type, a reference kernel), the copy under
// the memory bus's theoretical bandwidth. Prints the figures beside the published ones.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "engine/backend/backend.h"
#include "engine/doctor/device_profile.h"
#include "engine/doctor/local_profile.h"
#include "tests/gpu/executor/gpu_test_support.h"

namespace mixlab {
namespace {

void print_rate(const char* what, double measured, double published) {
  std::printf("  %-22s measured %9.2f  published %9.2f  (%.0f%%)\n", what, measured / 1e12,
              published / 1e12, published > 0 ? 100.0 * measured / published : 0.0);
}

TEST(GpuCalibration, MeasuresThisGpuWithinItsPublishedLimits) {
  MIXLAB_SKIP_WITHOUT_CUDA();
  const GpuCalibration c = calibrate_gpu(0);
  const doctor::DeviceProfile measured = doctor::gpu_profile(c);
  std::printf("%s (compute capability %s, %d SMs at %.0f MHz, %s)\n", c.gpu.c_str(),
              c.compute_capability.c_str(), c.sm_count, c.clock_mhz, c.libraries.c_str());
  EXPECT_GT(c.sm_count, 0);
  EXPECT_GT(c.clock_mhz, 0.0);
  EXPECT_GT(c.memory_bytes, 0);
  EXPECT_GT(c.l2_bytes, 0);
  EXPECT_GT(c.f32_matmul_flops, 0.0);
  EXPECT_GT(c.f16_matmul_flops, 0.0);
  if (measured.tensor_cores) {
    EXPECT_GT(c.f16_matmul_flops, 2.0 * c.f32_matmul_flops);
  }
  const bool ampere = std::stod(c.compute_capability) >= 8.0;
  EXPECT_EQ(c.tf32_matmul_flops > 0, ampere);
  EXPECT_EQ(c.bf16_matmul_flops > 0, ampere);
  if (ampere) {
    EXPECT_GT(c.tf32_matmul_flops, c.f32_matmul_flops);
  }

  std::printf("  memory: copy %.0f GB/s of the bus's %.0f GB/s; host link %.1f GB/s; a call "
              "%.1f us\n",
              c.copy_bytes_per_s / 1e9, c.memory_bus_bytes_per_s / 1e9,
              c.host_copy_bytes_per_s / 1e9, c.call_overhead_s * 1e6);
  EXPECT_GT(c.copy_bytes_per_s, 0.0);
  if (c.memory_bus_bytes_per_s > 0) {
    EXPECT_LE(c.copy_bytes_per_s, 1.05 * c.memory_bus_bytes_per_s);
    EXPECT_GE(c.copy_bytes_per_s, 0.3 * c.memory_bus_bytes_per_s);
  }
  EXPECT_GT(c.host_copy_bytes_per_s, 1e9);
  EXPECT_GT(c.call_overhead_s, 0.3e-6);
  EXPECT_LT(c.call_overhead_s, 100e-6);
  // A 16-bit matmul with K = 4095: on tensor cores (cuBLAS 11.0 on), so well above the CUDA
  // cores' float32 rate, and not faster than the aligned one. The doctor's estimate is 50%.
  std::printf(
      "  misaligned 16-bit matmul (K = 4095): %.0f%% of the aligned rate (the doctor's "
      "estimate without it: 50%%)\n",
      100.0 * c.misaligned_matmul_efficiency);
  if (std::stoi(c.compute_capability) >= 7 && c.f16_matmul_flops > 2.0 * c.f32_matmul_flops) {
    EXPECT_GT(c.misaligned_matmul_efficiency, 0.0) << "no cuBLASLt algorithm for K = 4095";
    EXPECT_LE(c.misaligned_matmul_efficiency, 1.1);
    const double aligned = c.bf16_matmul_flops > 0 ? c.bf16_matmul_flops : c.f16_matmul_flops;
    EXPECT_GT(c.misaligned_matmul_efficiency * aligned, c.f32_matmul_flops);
  }

  // Against the published profile of its name, when there is one.
  const DeviceInfo info = gpu_device_info(c.gpu, std::stoi(c.compute_capability),
                                          std::stoi(c.compute_capability.substr(
                                              c.compute_capability.find('.') + 1)),
                                          c.memory_bytes);
  const doctor::DeviceProfile published = doctor::gpu_profile_from_device(info, 0, 0.0, 0.0);
  if (!(published.peak.float32 > 0)) {
    std::printf("  no published profile of %s: the rates are checked against physics only\n",
                c.gpu.c_str());
    return;
  }
  std::printf("  TFLOP/s (dense)\n");
  print_rate("float32", c.f32_matmul_flops, published.peak.float32);
  print_rate("tf32", c.tf32_matmul_flops, published.peak.tf32);
  print_rate("float16, fp32 acc.", c.f16_matmul_flops, published.peak.float16_acc32);
  print_rate("bfloat16", c.bf16_matmul_flops, published.peak.bfloat16);
  std::printf("  memory bandwidth: measured %.0f GB/s, published %.0f GB/s\n",
              c.copy_bytes_per_s / 1e9, published.bandwidth_bytes_per_s / 1e9);
  const struct {
    const char* what;
    double measured, peak;
  } rates[] = {{"float32", c.f32_matmul_flops, published.peak.float32},
               {"tf32", c.tf32_matmul_flops, published.peak.tf32},
               {"float16", c.f16_matmul_flops, published.peak.float16_acc32},
               {"bfloat16", c.bf16_matmul_flops, published.peak.bfloat16}};
  for (const auto& r : rates) {
    if (!(r.peak > 0) || !(r.measured > 0)) continue;
    EXPECT_LE(r.measured, 1.15 * r.peak) << r.what;
    EXPECT_GE(r.measured, 0.25 * r.peak) << r.what;
  }
  EXPECT_LE(c.copy_bytes_per_s, 1.05 * published.bandwidth_bytes_per_s);
}

}  // namespace
}  // namespace mixlab
