// A model's starting weights from outside MixLab (a Keras .keras archive), per layer and in
// Keras's layouts: Dense kernel (in, units), Conv2D kernel (kh, kw, in, filters), bias (n),
// BatchNormalization's gamma, beta and moving statistics (n), an embedding table (rows, features).
// A backend writes them over its glorot_uniform initialisation; a layer without an entry keeps
// that. Checked against the shape table when imported (interop/keras_archive) and again by the
// executor (value counts).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/spec/shape_inference.h"

namespace mixlab {

struct LayerWeights {
  int layer = 0;              // index in ModelSpec::layers
  std::vector<float> kernel;  // Keras layout; empty: the initialiser's
  std::vector<float> bias;    // empty: zeros (or the layer has no bias)
  // BatchNormalization's; empty: Keras's initial ones, zeros and ones
  std::vector<float> gamma, beta, moving_mean, moving_variance;
  std::vector<float> pointwise_kernel;  // SeparableConv2D's second kernel
  std::vector<float> embeddings;        // Embedding's and PositionEmbedding's table
  // MultiHeadAttention's query, key and value projections (its output's: kernel and bias)
  std::vector<float> query_kernel, query_bias, key_kernel, key_bias, value_kernel, value_bias;

  std::vector<float>& values(ParamKind kind);
  const std::vector<float>& values(ParamKind kind) const;
};

struct ModelWeights {
  std::string origin;  // where they came from, for notes and errors: "model.keras"
  std::vector<LayerWeights> layers;
};

// Hands each given kernel and bias to `write` (an executor's write_parameter), prefixing what it
// throws with the weights' origin: "model.keras: starting weights: layer 2 kernel has 100
// values, got 90".
void write_model_weights(
    const ModelWeights& weights,
    const std::function<void(int layer, ParamKind kind, std::span<const float> values)>& write);

}  // namespace mixlab
