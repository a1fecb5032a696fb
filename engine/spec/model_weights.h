// A model's starting weights from outside MixLab (a Keras .keras archive), per layer and in
// Keras's layouts: Dense kernel (in, units), Conv2D kernel (kh, kw, in, filters), bias (n),
// BatchNormalization's gamma, beta and moving statistics (n), an embedding table (rows, features).
// A backend writes them over its glorot_uniform initialisation; a layer without an entry keeps
// that. Checked against the shape table when imported (interop/keras_archive) and again by the
// executor (value counts).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "engine/ops/fp8_scaling.h"
#include "engine/spec/shape_inference.h"

namespace mixlab {

// An FP8 tensor's delayed-scaling state as a Keras float8-quantized Dense saves it: its scale
// (the dequantising factor) and amax history (front the newest; engine/ops/fp8_scaling.h).
struct Fp8TensorState {
  float scale = 1.0f;
  std::vector<float> amax_history;
};

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

  // A float8-quantized layer's input, kernel and output-gradient states (Keras's inputs_*,
  // kernel_* and outputs_grad_* variables) per FP8 matmul: a Dense's three; a
  // MultiHeadAttention's twelve, its query, key, value and output projections' in turn (Keras's
  // EinsumDense sub-layers'). Empty: a run starts them afresh.
  std::vector<Fp8TensorState> fp8;

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

// Carries the layers' saved FP8 states into an executor's FP8 matmuls and says so in the run's
// notes: restore() per FP8 node, note() once all are done.
class Fp8StateRestorer {
 public:
  explicit Fp8StateRestorer(const ModelWeights* weights) : weights_(weights) {}
  // The saved states of layer `layer`'s next FP8 matmul (a Dense has one, a MultiHeadAttention
  // four, called in the plan's order) into its three scalings (input, kernel, gradient), when it
  // has them and their histories are as long as the run's; otherwise they stay afresh.
  void restore(int layer, Fp8TensorScaling& input, Fp8TensorScaling& kernel,
               Fp8TensorScaling& gradient);
  // Layer `layer`'s next FP8 matmul runs outside FP8 here (a GPU's Dense off multiples of 16):
  // its saved states pass it by.
  void skip(int layer) { ++next_part_[layer]; }
  // "FP8 scales and amax histories from model.keras (2 layers)", naming the layers whose history
  // length is not the run's; empty when the weights hold none.
  std::string note() const;

 private:
  const ModelWeights* weights_;
  std::map<int, int> next_part_;        // per layer, its next FP8 matmul
  std::set<int> carried_, mismatched_;  // layers
  std::size_t saved_length_ = 0, run_length_ = 0;
};

}  // namespace mixlab
