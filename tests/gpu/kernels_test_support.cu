#include "tests/gpu/kernels_test_support.h"

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "engine/core/half.h"

namespace mixlab::cuda::test {

void cuda_ok(cudaError_t err, const char* expr) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(expr) + ": " + cudaGetErrorString(err));
}

float round_to(DType dtype, float v) {
  switch (dtype) {
    case DType::f16:
      return round_to_f16(v);
    case DType::bf16:
      return round_to_bf16(v);
    case DType::f32:
      break;
  }
  return v;
}

std::vector<std::uint8_t> encode(const std::vector<float>& v, DType dtype) {
  std::vector<std::uint8_t> bytes(v.size() * dtype_bytes(dtype));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::f32) {
      std::memcpy(bytes.data() + 4 * i, &v[i], 4);
    } else {
      const std::uint16_t h =
          dtype == DType::f16 ? float_to_f16_bits(v[i]) : float_to_bf16_bits(v[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

std::vector<float> decode(const std::vector<std::uint8_t>& bytes, DType dtype) {
  std::vector<float> v(bytes.size() / dtype_bytes(dtype));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::f32) {
      std::memcpy(&v[i], bytes.data() + 4 * i, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      v[i] = dtype == DType::f16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
    }
  }
  return v;
}

DeviceBuffer to_device(const std::vector<float>& v, DType dtype) {
  return DeviceBuffer(encode(v, dtype));
}
std::vector<float> from_device(const DeviceBuffer& b, DType dtype) {
  return decode(b.download<std::uint8_t>(), dtype);
}

std::vector<float> random_values(std::size_t n, DType dtype, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = round_to(dtype, dist(rng));
  return v;
}

float tolerance(DType dtype, float want, float rel32, float abs) {
  if (rel32 == 0.0f && abs == 0.0f) return 0.0f;
  const float rel = dtype == DType::f16 ? 1.0f / 1024 : dtype == DType::bf16 ? 1.0f / 128 : 0.0f;
  return abs + (rel + rel32) * std::fabs(want);
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, DType dtype,
                  float rel32, float abs, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float tol = tolerance(dtype, want[i], rel32, abs);
    // An infinite `want` makes the tolerance infinite: only itself matches it.
    const bool ok = (std::isnan(want[i]) && std::isnan(got[i])) || got[i] == want[i] ||
                    (std::isfinite(want[i]) && std::fabs(got[i] - want[i]) <= tol);
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << what << " [" << to_string(dtype) << "] element " << i << ": got " << got[i]
                    << ", want " << want[i] << " (tolerance " << tol << ")";
    }
  }
}

}  // namespace mixlab::cuda::test
