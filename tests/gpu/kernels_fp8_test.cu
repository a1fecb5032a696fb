// mixed_float8's cast kernel (kernels_fp8.cu) against the CPU emulation's rounding, bit for bit:
// the codes and their transpose (and the values they decode to, against the CPU's table), the amax
// (NaN when the tensor holds one), and the saturated and flushed counts, for E4M3 and E5M2 and
// every input dtype. Skipped without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/backend/cuda/kernels.h"
#include "engine/core/fp8.h"
#include "engine/core/fp8_table.h"
#include "engine/core/half.h"
#include "tests/gpu/kernels_test_support.h"

namespace mixlab::cuda {
namespace {

namespace k = kernels;
using namespace test;

TEST_F(Kernels, Fp8CastIsTheCpuEmulationsRoundingBitForBit) {
  // Not square, so that the transpose's index order shows; 18 tiles of 32 x 32, some partial, so
  // that a block takes several where grids are capped (tests/gpu/sim).
  const std::int64_t rows = 48, cols = 272;
  const std::size_t n = static_cast<std::size_t>(rows * cols);
  std::mt19937 rng(30);
  std::uniform_real_distribution<float> mag(-12.0f, 12.0f);
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) {
    host[i] = std::copysign(std::exp2(mag(rng)), (rng() & 1u) != 0 ? 1.0f : -1.0f);
  }
  host[3] = 0.0f;
  host[4] = -0.0f;
  host[5] = 1e6f;   // saturates at any scale below ~2000
  host[6] = 2e-7f;  // flushes (a float16 subnormal too)
  host[7] = std::numeric_limits<float>::infinity();
  for (const DType dtype : kDTypes) {
    for (const bool e5m2 : {false, true}) {
      for (const float scale : {1.0f, 0.0390625f, 3.0f}) {
        SCOPED_TRACE(std::string(to_string(dtype)) + (e5m2 ? " E5M2" : " E4M3") + " scale " +
                     std::to_string(scale));
        std::vector<float> values(n);
        for (std::size_t i = 0; i < n; ++i) values[i] = round_to(dtype, host[i]);
        const auto bytes = encode(values, dtype);
        DeviceBuffer d_src(bytes);
        const float s = round_to_bf16(scale);
        DeviceBuffer d_scale(std::vector<float>{s});
        DeviceBuffer d_out(n), d_out_t(n);
        DeviceBuffer d_stats(std::vector<k::Fp8CastStats>(1));
        const Fp8Format format = e5m2 ? Fp8Format::e5m2 : Fp8Format::e4m3;
        const float* table = fp8_rounding_table(format);
        k::fp8_cast(d_src.as(), dtype, rows, cols, e5m2, fp8_max(format), d_scale.as<float>(),
                    d_out.as<std::uint8_t>(), d_out_t.as<std::uint8_t>(),
                    d_stats.as<k::Fp8CastStats>(), nullptr);
        const auto out = d_out.download<std::uint8_t>();
        const auto out_t = d_out_t.download<std::uint8_t>();
        const auto stats = d_stats.download<k::Fp8CastStats>()[0];
        float amax = 0.0f;
        std::int64_t saturated = 0, flushed = 0;
        int mismatches = 0;
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t c = 0; c < cols; ++c) {
            const float v = values[static_cast<std::size_t>(r * cols + c)];
            amax = std::max(amax, std::fabs(v));
            const float scaled = round_to_bf16(v / s);
            saturated += std::fabs(scaled) > fp8_max(format);
            const std::uint8_t want =
                e5m2 ? float_to_e5m2_bits(scaled) : float_to_e4m3_bits(scaled);
            flushed += (want & 0x7fu) == 0 && v != 0.0f;
            const std::uint8_t got = out[static_cast<std::size_t>(r * cols + c)];
            const std::uint8_t got_t = out_t[static_cast<std::size_t>(c * rows + r)];
            if ((got != want || got_t != want) && ++mismatches <= 5) {
              ADD_FAILURE() << "(" << r << ", " << c << ") " << v << ": code " << int(got)
                            << ", transposed " << int(got_t) << ", want " << int(want);
            }
            // The value the CPU's products read (its rounding by table, weighted_node.cpp).
            const float got_value = e5m2 ? e5m2_bits_to_float(got) : e4m3_bits_to_float(got);
            const float cpu_value = round_bf16_to_fp8(table, scaled);
            if (std::memcmp(&got_value, &cpu_value, sizeof got_value) != 0 && ++mismatches <= 5) {
              ADD_FAILURE() << "(" << r << ", " << c << ") " << v << ": decodes to " << got_value
                            << ", the CPU's table rounds to " << cpu_value;
            }
          }
        }
        EXPECT_EQ(mismatches, 0);
        float got_amax;
        std::memcpy(&got_amax, &stats.amax_bits, sizeof got_amax);
        EXPECT_EQ(got_amax, amax);
        EXPECT_EQ(static_cast<std::int64_t>(stats.saturated), saturated);
        EXPECT_EQ(static_cast<std::int64_t>(stats.flushed), flushed);
        EXPECT_GT(saturated, 0);
        EXPECT_GT(flushed, 0);
      }
    }
  }
  // A NaN makes the amax NaN (jnp.max's), as on the CPU; no transpose asked.
  std::vector<float> with_nan = {1.0f, std::nanf(""), -3.0f, 2.0f};
  DeviceBuffer d_src(with_nan);
  DeviceBuffer d_scale(std::vector<float>{1.0f});
  DeviceBuffer d_out(4);
  DeviceBuffer d_stats(std::vector<k::Fp8CastStats>(1));
  k::fp8_cast(d_src.as(), DType::f32, 1, 4, false, fp8_max(Fp8Format::e4m3), d_scale.as<float>(),
              d_out.as<std::uint8_t>(), nullptr, d_stats.as<k::Fp8CastStats>(), nullptr);
  const auto stats = d_stats.download<k::Fp8CastStats>()[0];
  float amax;
  std::memcpy(&amax, &stats.amax_bits, sizeof amax);
  EXPECT_TRUE(std::isnan(amax));
  EXPECT_EQ(d_out.download<std::uint8_t>()[1] & 0x7fu, 0x7fu);  // E4M3's NaN
}

}  // namespace
}  // namespace mixlab::cuda
