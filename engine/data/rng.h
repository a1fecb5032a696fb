// A small, fast, seedable random generator (SplitMix64) whose output is the same on every
// platform and standard library, unlike std::shuffle or the std distributions. Engine-internal.
#pragma once

#include <cstdint>

namespace mixlab {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  // Seeds a generator for one stream (a split, an epoch, a sample) of a seeded process.
  SplitMix64(std::uint64_t seed, std::uint64_t stream)
      : state_(SplitMix64(seed ^ (stream * 0xD1B54A32D192ED03ull)).next()) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) for n >= 1 (Lemire's multiply-shift; the bias is below 2^-32 for any n
  // a dataset can have).
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  std::uint64_t state_;
};

}  // namespace mixlab
