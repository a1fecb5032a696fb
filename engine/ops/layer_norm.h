// LayerNormalization's per-row math, written once for the CPU and CUDA (Keras 3's
// ops.layer_normalization): each row of the last axis (d features) in float32 whatever the
// tensors' dtype, the input upcast, the output cast back to the layer's dtype:
//   mean = sum(x) / d, variance = sum((x - mean)^2) / d (biased), inv = 1 / sqrt(variance + eps)
//   y = x * a + (beta - mean * a), a = inv * gamma   (Keras's order of operations)
// Backward, with xhat = (x - mean) * inv and g = dy * gamma:
//   dgamma += dy * xhat, dbeta += dy (summed over rows),
//   dx = inv * (g - mean(g) - xhat * mean(g * xhat)).
#pragma once

#include <cmath>

#include "engine/core/hd.h"

namespace mixlab {

struct LayerNormArgs {
  float epsilon = 1e-3f;
  bool has_gamma = true;  // Keras's scale
  bool has_beta = true;   // Keras's center
};

// A row's statistics: its mean and 1 / sqrt(variance + epsilon).
struct RowStats {
  float mean = 0.0f;
  float inv_std = 1.0f;
};

// Two passes over a row read by load(j) (the variance about the mean, as Keras's moments).
template <class Load>
MIXLAB_HD RowStats layer_norm_stats(Load load, int d, float epsilon) {
  float sum = 0.0f;
  for (int j = 0; j < d; ++j) sum += load(j);
  const float mean = sum / static_cast<float>(d);
  float sq = 0.0f;
  for (int j = 0; j < d; ++j) {
    const float c = load(j) - mean;
    sq += c * c;
  }
  RowStats s;
  s.mean = mean;
  s.inv_std = 1.0f / sqrtf(sq / static_cast<float>(d) + epsilon);
  return s;
}

MIXLAB_HD float layer_norm_value(float x, RowStats s, float gamma, float beta) {
  const float a = s.inv_std * gamma;
  return x * a + (beta - s.mean * a);
}

}  // namespace mixlab
