#include "engine/ops/initializers.h"

#include <cmath>
#include <random>

#include "engine/ops/dropout.h"

namespace mixlab {

std::vector<float> glorot_uniform(std::int64_t count, std::int64_t fan_in, std::int64_t fan_out,
                                  std::uint64_t seed) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-limit, limit);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (auto& v : values) v = static_cast<float>(dist(rng));
  return values;
}

std::vector<float> keras_uniform(std::int64_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-0.05, 0.05);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (auto& v : values) v = static_cast<float>(dist(rng));
  return values;
}

std::vector<float> initial_values(ParamKind kind, std::int64_t count, std::int64_t fan_in,
                                  std::int64_t fan_out, std::uint64_t seed) {
  if (kind == ParamKind::embeddings && fan_in + fan_out == 0) return keras_uniform(count, seed);
  return glorot_uniform(count, fan_in, fan_out, seed);
}

std::uint64_t kernel_init_seed(std::uint64_t seed, int layer, ParamKind kind) {
  const std::uint64_t s =
      mix64(seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(layer) + 1);
  return kind == ParamKind::kernel ? s : mix64(s + static_cast<std::uint64_t>(kind));
}

}  // namespace mixlab
