// Keras 3's Normalization layer (layers/preprocessing/normalization.py), written once for the
// CPU and CUDA: y = (x - mean) / max(sqrt(variance), epsilon) per channel (the last axis), with
// Keras's backend epsilon 1e-7, computed in the layer's compute dtype. Keras casts its mean and
// variance to that dtype and rounds each operation's result to it; here the constants are
// rounded as Keras rounds them (the mean, the variance, its square root, the floor) and each
// element rounds once, on store. Backward: dx = dy / max(sqrt(variance), epsilon).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/core/round_dtype.h"

namespace mixlab {

inline constexpr float kNormalizationEpsilon = 1e-7f;  // keras.backend.epsilon()

// Per channel: the mean subtracted and the divisor, as the layer's dtype holds them.
struct NormalizationConstants {
  std::vector<float> mean;
  std::vector<float> divisor;
};

// `mean` and `variance` hold one value (for every channel) or one per channel; both empty:
// Keras's state before adapt(), mean 0 and variance 1.
inline NormalizationConstants normalization_constants(const std::vector<double>& mean,
                                                      const std::vector<double>& variance,
                                                      std::int64_t channels, DType dtype) {
  NormalizationConstants k;
  const auto at = [](const std::vector<double>& v, std::int64_t c, double fallback) {
    if (v.empty()) return fallback;
    return v.size() == 1 ? v.front() : v[static_cast<std::size_t>(c)];
  };
  const float floor = round_to_dtype(dtype, kNormalizationEpsilon);
  for (std::int64_t c = 0; c < channels; ++c) {
    k.mean.push_back(round_to_dtype(dtype, static_cast<float>(at(mean, c, 0.0))));
    const float var = round_to_dtype(dtype, static_cast<float>(at(variance, c, 1.0)));
    const float root = round_to_dtype(dtype, std::sqrt(var));
    k.divisor.push_back(std::max(root, floor));
  }
  return k;
}

}  // namespace mixlab
