// The host arithmetic of cudasim's cuBLASLt and cuDNN: float32 dot products summed in 16 lanes
// (as a GPU's tensor cores sum in float32, in an order of their own), and TF32's rounding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cudasim {

inline float dot(const float* a, const float* b, std::size_t n) {
  using v4 = float __attribute__((vector_size(16)));
  v4 s0 = {}, s1 = {}, s2 = {}, s3 = {};
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    v4 a0, a1, a2, a3, b0, b1, b2, b3;
    std::memcpy(&a0, a + i, 16);
    std::memcpy(&a1, a + i + 4, 16);
    std::memcpy(&a2, a + i + 8, 16);
    std::memcpy(&a3, a + i + 12, 16);
    std::memcpy(&b0, b + i, 16);
    std::memcpy(&b1, b + i + 4, 16);
    std::memcpy(&b2, b + i + 8, 16);
    std::memcpy(&b3, b + i + 12, 16);
    s0 += a0 * b0;
    s1 += a1 * b1;
    s2 += a2 * b2;
    s3 += a3 * b3;
  }
  const v4 s = (s0 + s1) + (s2 + s3);
  float sum = (s[0] + s[1]) + (s[2] + s[3]);
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y[i] += a * x[i]
inline void axpy(float a, const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// float32 rounded to TF32 (10 mantissa bits), to nearest even; infinities and NaN kept.
inline float tf32(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7F800000u) != 0x7F800000u) u = (u + 0xFFFu + ((u >> 13) & 1u)) & ~0x1FFFu;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace cudasim
