// Keras's default initialisers, shared by every backend so that the same seed gives the same
// starting weights on the CPU and the GPU: glorot_uniform kernels, zero biases.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/spec/shape_inference.h"

namespace mixlab {

// `count` draws from U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)), in Keras's layout.
std::vector<float> glorot_uniform(std::int64_t count, std::int64_t fan_in, std::int64_t fan_out,
                                  std::uint64_t seed);

// Keras's "uniform" initializer (Embedding's default): U(-0.05, 0.05).
std::vector<float> keras_uniform(std::int64_t count, std::uint64_t seed);

// Whether a group draws random starting values (kernels and embedding tables), and the values:
// glorot_uniform with the group's fans, or, for an embeddings group with no fans (an
// Embedding's; a PositionEmbedding's table has its fans, keras_hub's glorot_uniform),
// keras_uniform. Every backend initialises through this.
constexpr bool draws_initial_values(ParamKind kind) {
  return is_kernel(kind) || kind == ParamKind::embeddings;
}
std::vector<float> initial_values(ParamKind kind, std::int64_t count, std::int64_t fan_in,
                                  std::int64_t fan_out, std::uint64_t seed);

// The seed of layer `layer`'s kernel in a run seeded with `seed`.
// `kind`: a layer's second kernel (SeparableConv2D's pointwise one) draws other values than its
// first.
std::uint64_t kernel_init_seed(std::uint64_t seed, int layer, ParamKind kind = ParamKind::kernel);

}  // namespace mixlab
