#include "engine/backend/cpu/cpu_node.h"

#include "engine/core/error.h"

#include <cmath>
#include <random>

namespace mixlab::cpu {

void execute(CpuContext& ctx, const dnnl::primitive& p, const ArgMap& args, const std::string& node,
             const char* part) {
  try {
    p.execute(ctx.stream, args);
  } catch (const dnnl::error& e) {
    throw BackendError("oneDNN error in " + node + " " + part + ": " + e.what());
  }
}

dnnl::primitive_attr scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

std::vector<float> glorot_uniform(std::int64_t count, std::int64_t fan_in, std::int64_t fan_out,
                                  std::uint64_t seed) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-limit, limit);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (auto& v : values) v = static_cast<float>(dist(rng));
  return values;
}

}  // namespace mixlab::cpu
