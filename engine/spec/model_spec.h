// The model spec: layers in Keras vocabulary, read from and written to JSON. It knows nothing
// about devices; shape_inference.h checks it and computes its tables.
//
// File format (a contract scripts outside the project rely on):
//   {"name": "fashion-cnn", "input": {"shape": [28, 28, 1]},
//    "loss": "sparse_categorical_crossentropy",
//    "layers": [{"type": "Conv2D", "filters": 16, "kernel_size": [3, 3], ...}, ...]}
// Omitted fields take Keras's defaults. Unknown fields, wrong JSON types and out-of-range values
// are errors (SpecError) that name the layer and the field.
//
// A model is a graph (Keras's functional API): a layer may name the layers it reads,
//   {"type": "Add", "name": "add_1", "inputs": ["conv_2", "pool_1"]},
// by their names ("input" is the model's input). Without "inputs" a layer reads the one before
// it (the model's input for the first), so a plain stack names none. The last layer is the
// model's output; model_graph.h resolves and checks the graph.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/text_file.h"

namespace mixlab {

enum class LayerType : std::uint8_t {
  Dense,
  Conv2D,
  MaxPooling2D,
  AveragePooling2D,
  Flatten,
  Dropout,
  Activation,
  Rescaling,
  // Merges (two or more inputs, Keras semantics): elementwise over inputs of one shape, and
  // Concatenate along an axis.
  Add,
  Subtract,  // exactly two: the first minus the second
  Multiply,
  Average,
  Maximum,
  Concatenate,
  // The mean or the maximum of each channel over height and width: HxWxC -> C (1x1xC with
  // keepdims).
  GlobalAveragePooling2D,
  GlobalMaxPooling2D,
  // Keras's ReLU layer: relu with max_value, negative_slope and threshold (ReLU6, leaky ReLU).
  ReLU,
  // Normalizes each channel (the last axis) by the batch's statistics while training and by
  // moving averages of them otherwise, then scales by gamma and shifts by beta.
  BatchNormalization,
  // Adds rows of zeros above and below, and columns left and right: HxWxC -> H'xW'xC.
  ZeroPadding2D,
  // A convolution of each channel on its own, depth_multiplier filters per channel:
  // HxWxC -> H'xW'x(C*depth_multiplier).
  DepthwiseConv2D,
  // The same values with another per-sample shape (Keras's Reshape: target_shape, one -1 taken
  // from the others).
  Reshape,
  // A DepthwiseConv2D (no bias) then a 1x1 Conv2D of `filters` (with the layer's bias and
  // activation), as one Keras layer: HxWxC -> H'xW'xfilters.
  SeparableConv2D,
  // Keras's Normalization with a fixed mean and variance per channel (the last axis) or one for
  // all: y = (x - mean) / max(sqrt(variance), 1e-7), in the layer's dtype (EfficientNet's first
  // layers). Without them, Keras's state before adapt(): mean 0, variance 1. Not trainable.
  Normalization,
  // The mean or the maximum of each feature over a sequence's steps: (steps, features) ->
  // features ((1, features) with keepdims).
  GlobalAveragePooling1D,
  GlobalMaxPooling1D,
  // A learned vector per token id: the model's (steps) input of ids (float32 values, whole
  // numbers in [0, input_dim)) -> (steps, output_dim). Keras's Embedding: the float32 table,
  // its rows cast to the layer's dtype.
  Embedding,
  // Normalizes each position's features (the last axis) by their own mean and variance, in
  // float32 whatever the tensors' dtype (as Keras 3 computes it), then scales by gamma and
  // shifts by beta.
  LayerNormalization,
  // keras_hub's PositionEmbedding: a learned vector per position, (steps, features) ->
  // (steps, features) holding the first `steps` rows of its (sequence_length, features) table
  // for every sample. It reads only its input's shape; an Add puts it on the tokens.
  PositionEmbedding,
  // Keras's MultiHeadAttention as self-attention (query, key and value the one input):
  // (steps, features) -> (steps, output_shape), num_heads heads of key_dim (queries and keys)
  // and value_dim (values), with use_causal_mask (each step attends to itself and the steps
  // before it).
  MultiHeadAttention,
};
// The merge layers: they read two or more layers (Subtract exactly two).
bool is_merge(LayerType type);

// Keras 3's activation functions by their serialized names ("swish" and "hard_swish" are read
// as their aliases silu and hard_silu; leaky_relu's slope is Keras 3's default 0.2).
enum class ActivationFn : std::uint8_t {
  linear,
  relu,
  sigmoid,
  tanh,
  gelu,
  softmax,
  silu,
  hard_sigmoid,
  hard_silu,
  elu,
  relu6,
  leaky_relu,
};
enum class Padding : std::uint8_t { valid, same };
enum class LossKind : std::uint8_t {
  sparse_categorical_crossentropy,
  categorical_crossentropy,
  binary_crossentropy,
};

// Height and width of a kernel, stride or pool window ("kernel_size": 3 or [3, 3]).
struct Size2 {
  int h = 1;
  int w = 1;
  friend bool operator==(const Size2&, const Size2&) = default;
};

// ZeroPadding2D's ((top, bottom), (left, right)).
struct Pad2D {
  int top = 1;
  int bottom = 1;
  int left = 1;
  int right = 1;
  friend bool operator==(const Pad2D&, const Pad2D&) = default;
};

// One layer. A flat record: each type reads the fields that Keras gives it and ignores none of
// the others silently (the parser rejects fields a type does not have).
struct LayerSpec {
  LayerType type = LayerType::Dense;
  std::string name;  // optional "name"; empty when the file gives none
  // The layers it reads, by name ("input": the model's input); empty: the layer before it.
  std::vector<std::string> inputs;

  // Dense
  int units = 0;
  // Conv2D, SeparableConv2D
  int filters = 0;
  // Conv2D, DepthwiseConv2D, SeparableConv2D
  Size2 kernel_size;
  // Conv2D, DepthwiseConv2D, SeparableConv2D, MaxPooling2D, AveragePooling2D
  Size2 strides{1, 1};  // pooling: defaults to pool_size (Keras strides=None)
  Padding padding = Padding::valid;
  // MaxPooling2D, AveragePooling2D
  Size2 pool_size{2, 2};
  // Dense, Conv2D, DepthwiseConv2D (field "activation", default linear) and Activation
  // (required)
  ActivationFn activation = ActivationFn::linear;
  // Dense, Conv2D, DepthwiseConv2D
  bool use_bias = true;
  // DepthwiseConv2D, SeparableConv2D: filters per input channel
  int depth_multiplier = 1;
  // ReLU: x above threshold, clipped at max_value (infinity: none, Keras's None); at or below
  // it negative_slope * (x - threshold). Each >= 0, as Keras requires.
  double max_value = std::numeric_limits<double>::infinity();
  double negative_slope = 0.0;
  double threshold = 0.0;
  // LayerNormalization reads epsilon (Keras's default 1e-3 too), center and scale, over the last
  // axis. BatchNormalization over the last axis ("axis" -1): moving = moving * momentum + batch *
  // (1 - momentum); y = (x - mean) / sqrt(variance + epsilon) * gamma + beta. "center" gives it
  // beta and "scale" gamma (the field scale_gamma here: `scale` is Rescaling's).
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;
  bool scale_gamma = true;
  // ZeroPadding2D: "padding", 1, [h, w] or [[top, bottom], [left, right]]
  Pad2D zero_padding;
  // Reshape: the per-sample shape, 1 to 3 axes, at most one -1 (inferred)
  std::vector<std::int64_t> target_shape;
  // Normalization: one value for every channel, or one per channel; both or neither (then 0
  // and 1)
  std::vector<double> mean;
  std::vector<double> variance;
  // Embedding (both required): the vocabulary and the vector's size
  int input_dim = 0;
  int output_dim = 0;
  // PositionEmbedding (required): the positions it has vectors for, at least the input's steps
  int sequence_length = 0;
  // MultiHeadAttention: num_heads and key_dim required; value_dim 0 is key_dim; output_dim
  // (Keras's "output_shape") 0 is the input's features; dropout on the attention weights
  // (Keras's "dropout"); use_bias as Dense's.
  int num_heads = 0;
  int key_dim = 0;
  int value_dim = 0;
  double attention_dropout = 0.0;
  bool causal = false;  // "use_causal_mask"
  // Dropout (required; 0 <= rate < 1)
  double rate = 0.0;
  // Dropout: Keras's noise_shape, with the batch: -1 (None) for an axis the mask varies along,
  // 1 for one it is repeated along ([None, 1, 1, 1]: whole samples); empty: Keras's None.
  std::vector<std::int64_t> noise_shape;
  // Rescaling: y = x * scale + offset (scale required)
  double scale = 1.0;
  double offset = 0.0;
  // GlobalAveragePooling2D, GlobalMaxPooling2D: keep the 1x1 spatial axes (the 1D ones: the
  // one step)
  bool keepdims = false;
  // Concatenate, BatchNormalization, LayerNormalization and Normalization: the axis, as Keras
  // counts it with the batch (-1 the last; 0, the batch, is not allowed; the normalizations take
  // the last only)
  int axis = -1;
  // "dtype": "float32" keeps this layer in float32 under a mixed policy (Keras's idiom for the
  // final softmax).
  bool force_float32 = false;
  // "dtype": "bfloat16" keeps this layer out of FP8 under mixed_float8: its matmuls compute in
  // bfloat16 as under mixed_bfloat16 (Keras's idiom: a layer left unquantized). Under the other
  // policies the layer follows the model's policy.
  bool force_bfloat16 = false;

  friend bool operator==(const LayerSpec&, const LayerSpec&) = default;
};

struct ModelSpec {
  std::string name;
  std::vector<std::int64_t> input_shape;  // without the batch: [H, W, C] or [features]
  LossKind loss = LossKind::sparse_categorical_crossentropy;
  std::vector<LayerSpec> layers;

  friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

// Parses a model file's text. `origin` (a file name) prefixes error messages. Checks the JSON's
// structure, types and value ranges; shape checks are infer_shapes()'s.
ModelSpec parse_model_json(std::string_view text, std::string_view origin = {});
// Bounds on what a model file may be: its size, and how deeply its JSON may nest.
inline constexpr std::uintmax_t kMaxModelFileBytes = std::uintmax_t{16} << 20;
inline constexpr int kMaxJsonDepth = 64;
// A model file for read_text_file (engine/core/text_file.h).
inline constexpr TextFileKind kModelFileKind{"model file", kMaxModelFileBytes,
                                             " (it describes layers, it holds no weights)"};
// Reads and parses a model file; errors name the file. Only a regular file of at most
// kMaxModelFileBytes is read (a FIFO, a device or /dev/zero is refused by name).
ModelSpec load_model_file(const std::filesystem::path& path);
// The text of a model file, with load_model_file's checks and errors (parsed by the caller:
// interop/model_source reads Keras JSON too).
std::string read_model_text(const std::filesystem::path& path);
// Writes a spec as JSON in the file format above (fields at their defaults are left out), so
// that parse_model_json(to_json(s)) == s.
std::string to_json(const ModelSpec& spec, int indent = 2);

std::string_view to_string(LayerType type);
std::string_view to_string(ActivationFn fn);
std::string_view to_string(Padding padding);
std::string_view to_string(LossKind loss);
// Every value of each enum, in the order error messages list them (the editor's pickers).
std::span<const LayerType> all_layer_types();
std::span<const ActivationFn> all_activations();
std::span<const Padding> all_paddings();
std::span<const LossKind> all_losses();

std::optional<LayerType> parse_layer_type(std::string_view name);
std::optional<ActivationFn> parse_activation(std::string_view name);
std::optional<LossKind> parse_loss(std::string_view name);

}  // namespace mixlab
