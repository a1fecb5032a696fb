// Float32 exp and erf written so that the CPU's elementwise loops vectorise (glibc's expf and
// erff are a call per element): the CPU backend's GELU and its attention's softmax. Host only;
// CUDA keeps its own expf and erff.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace mixlab {

// e^x for x <= 0 (a softmax's shifted scores, GELU's density), within 2 ulp of expf: Cephes's
// expf (range reduction by ln 2, a degree-5 polynomial). Below -87.3 it returns about 2^-126,
// which a softmax's sum or a density times x cannot tell from 0. NaN stays NaN (an overflowed
// float16 score must reach the overflow check), without converting it to an integer.
inline float exp_nonpositive(float x0) {
  const float x = x0 > -87.3f ? x0 : -87.3f;  // NaN -> -87.3 here, given back below
  const float n = std::nearbyint(x * 1.44269504088896341f);
  float r = x - n * 0.693359375f;
  r -= n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  const float e = y * std::bit_cast<float>(bits);
  return x0 == x0 ? e : x0;
}

// erf(x) in float32: the rational approximation (odd degree-13 over even degree-8 polynomial on
// x clamped to [-4, 4], beyond which erf is +-1 in float32) that Eigen's perf and XLA's erf
// use, and so TensorFlow's and JAX's CPU kernels: within a few ulp of erff.
inline float erf_rational(float x) {
  x = std::clamp(x, -4.0f, 4.0f);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  p = p * x;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return p / q;
}

}  // namespace mixlab
