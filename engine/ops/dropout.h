// Dropout's keep mask from a counter-based hash: the same (seed, layer, step, element) gives the
// same decision on any device and thread count, and backward recomputes it instead of storing
// a mask.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/hd.h"
#include "engine/ops/broadcast.h"

namespace mixlab {

MIXLAB_HD std::uint64_t mix64(std::uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

MIXLAB_HD std::uint32_t mix32(std::uint32_t h) {  // murmur3's finaliser
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  return h ^ (h >> 16);
}

struct DropoutMask {
  std::uint32_t key0 = 0, key1 = 0;  // from seed, layer and step: make_dropout_mask
  std::uint32_t threshold = 0;       // keep when hash < threshold: (1 - rate) * 2^32
  float keep_scale = 1.0f;           // 1 / (1 - rate)

  // The factor element i is multiplied by: 0 or 1 / (1 - rate). 32-bit arithmetic, so that a
  // loop over it vectorises; tensors of up to 2^32 elements get distinct hashes.
  MIXLAB_HD float factor(std::uint64_t i) const {
    const std::uint32_t h = mix32(mix32(static_cast<std::uint32_t>(i) ^ key0) + key1);
    return h < threshold ? keep_scale : 0.0f;
  }
};

MIXLAB_HD DropoutMask make_dropout_mask(double rate, std::uint64_t seed, int layer,
                                        std::uint64_t step) {
  const std::uint64_t key =
      mix64(mix64(seed ^ 0x5bd1e995u) + static_cast<std::uint64_t>(layer) * 0x100000001b3ull +
            mix64(step));
  DropoutMask m;
  m.key0 = static_cast<std::uint32_t>(key);
  m.key1 = static_cast<std::uint32_t>(key >> 32);
  const double keep = 1.0 - rate;
  m.threshold = keep >= 1.0 ? 0xffffffffu : static_cast<std::uint32_t>(keep * 4294967296.0);
  m.keep_scale = static_cast<float>(1.0 / keep);
  return m;
}

// Keras's noise_shape (with the batch; -1 for None, empty for none) over a tensor of `dims`
// (with the batch): the mask is drawn per element of the noise shape and repeated along its
// axes of 1, so that mask element noise.input_index(i) decides element i ([None, 1, 1, 1]:
// whole samples, EfficientNet's stochastic depth). Shape inference has checked it.
inline Broadcast dropout_noise(const std::vector<std::int64_t>& noise_shape,
                               const std::vector<std::int64_t>& dims) {
  if (noise_shape.empty()) return {};
  std::vector<std::int64_t> noise = dims;
  for (std::size_t d = 0; d < noise.size() && d < noise_shape.size(); ++d) {
    if (noise_shape[d] == 1) noise[d] = 1;
  }
  return broadcast_of(noise, dims);
}

}  // namespace mixlab
