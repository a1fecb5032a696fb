// Layer specs in one line each, for the op tests (CPU against float64, CUDA against the CPU).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/spec/model_spec.h"

namespace mixlab::test_layers {

inline LayerSpec simple(LayerType type) {
  LayerSpec l;
  l.type = type;
  return l;
}

inline LayerSpec dense(int units, ActivationFn fn = ActivationFn::linear, bool bias = true) {
  LayerSpec l = simple(LayerType::Dense);
  l.units = units;
  l.activation = fn;
  l.use_bias = bias;
  return l;
}

inline LayerSpec conv(int filters, Size2 k, Size2 s, Padding p,
                      ActivationFn fn = ActivationFn::linear, bool bias = true) {
  LayerSpec l = simple(LayerType::Conv2D);
  l.filters = filters;
  l.kernel_size = k;
  l.strides = s;
  l.padding = p;
  l.activation = fn;
  l.use_bias = bias;
  return l;
}

inline LayerSpec pool(LayerType type, Size2 size, Size2 strides, Padding p) {
  LayerSpec l = simple(type);
  l.pool_size = size;
  l.strides = strides;
  l.padding = p;
  return l;
}

inline LayerSpec global_pool(LayerType type, bool keepdims = false) {
  LayerSpec l = simple(type);
  l.keepdims = keepdims;
  return l;
}

inline LayerSpec activation(ActivationFn fn, bool force_float32 = false) {
  LayerSpec l = simple(LayerType::Activation);
  l.activation = fn;
  l.force_float32 = force_float32;
  return l;
}

inline LayerSpec rescaling(double scale, double offset = 0.0) {
  LayerSpec l = simple(LayerType::Rescaling);
  l.scale = scale;
  l.offset = offset;
  return l;
}

inline LayerSpec dropout(double rate) {
  LayerSpec l = simple(LayerType::Dropout);
  l.rate = rate;
  return l;
}

// A layer named `name` (graph models), reading `inputs` when given (else what it read).
inline LayerSpec noise_dropout(double rate, std::vector<std::int64_t> noise_shape) {
  LayerSpec l = dropout(rate);
  l.noise_shape = std::move(noise_shape);
  return l;
}

inline LayerSpec relu(double max_value, double negative_slope = 0.0, double threshold = 0.0) {
  LayerSpec l;
  l.type = LayerType::ReLU;
  l.max_value = max_value;
  l.negative_slope = negative_slope;
  l.threshold = threshold;
  return l;
}

inline LayerSpec batch_norm(bool center = true, bool scale = true, double momentum = 0.99) {
  LayerSpec l;
  l.type = LayerType::BatchNormalization;
  l.center = center;
  l.scale_gamma = scale;
  l.momentum = momentum;
  return l;
}

inline LayerSpec layer_norm(bool center = true, bool scale = true, double epsilon = 1e-3) {
  LayerSpec l;
  l.type = LayerType::LayerNormalization;
  l.center = center;
  l.scale_gamma = scale;
  l.epsilon = epsilon;
  return l;
}

inline LayerSpec embedding(int vocabulary, int width) {
  LayerSpec l;
  l.type = LayerType::Embedding;
  l.input_dim = vocabulary;
  l.output_dim = width;
  return l;
}

inline LayerSpec position_embedding(int positions) {
  LayerSpec l;
  l.type = LayerType::PositionEmbedding;
  l.sequence_length = positions;
  return l;
}

inline LayerSpec attention(int heads, int key_dim, bool causal = false, int value_dim = 0,
                           int output = 0) {
  LayerSpec l;
  l.type = LayerType::MultiHeadAttention;
  l.num_heads = heads;
  l.key_dim = key_dim;
  l.causal = causal;
  l.value_dim = value_dim;
  l.output_dim = output;
  return l;
}

inline LayerSpec zero_padding(Pad2D p) {
  LayerSpec l;
  l.type = LayerType::ZeroPadding2D;
  l.zero_padding = p;
  return l;
}

inline LayerSpec depthwise(Size2 k, Size2 s, Padding p, int multiplier = 1,
                           ActivationFn fn = ActivationFn::linear, bool bias = true) {
  LayerSpec l;
  l.type = LayerType::DepthwiseConv2D;
  l.kernel_size = k;
  l.strides = s;
  l.padding = p;
  l.depth_multiplier = multiplier;
  l.activation = fn;
  l.use_bias = bias;
  return l;
}

inline LayerSpec separable(int filters, Size2 k, Size2 s, Padding p, int multiplier = 1,
                           ActivationFn fn = ActivationFn::linear, bool bias = true) {
  LayerSpec l = depthwise(k, s, p, multiplier, fn, bias);
  l.type = LayerType::SeparableConv2D;
  l.filters = filters;
  return l;
}

inline LayerSpec reshape(std::vector<std::int64_t> target) {
  LayerSpec l;
  l.type = LayerType::Reshape;
  l.target_shape = std::move(target);
  return l;
}

inline LayerSpec normalization(std::vector<double> mean, std::vector<double> variance) {
  LayerSpec l;
  l.type = LayerType::Normalization;
  l.mean = std::move(mean);
  l.variance = std::move(variance);
  return l;
}

inline LayerSpec named(LayerSpec l, std::string name, std::vector<std::string> inputs = {}) {
  l.name = std::move(name);
  if (!inputs.empty()) l.inputs = std::move(inputs);
  return l;
}

inline LayerSpec merge(LayerType type, std::vector<std::string> inputs, int axis = -1) {
  LayerSpec l = simple(type);
  l.inputs = std::move(inputs);
  l.axis = axis;
  return l;
}

// input -> conv_a (relu) -> conv_b -> add (conv_a, conv_b) -> flatten -> dense 3: the smallest
// residual network, for the graph tests.
inline ModelSpec residual_convnet(Shape input_shape) {
  ModelSpec spec;
  spec.name = "residual";
  spec.input_shape = std::move(input_shape);
  spec.layers = {named(conv(4, {3, 3}, {1, 1}, Padding::same, ActivationFn::relu), "conv_a"),
                 named(conv(4, {3, 3}, {1, 1}, Padding::same), "conv_b"),
                 named(merge(LayerType::Add, {"conv_a", "conv_b"}), "add"),
                 simple(LayerType::Flatten), dense(3)};
  return spec;
}

// Whether a layer's output keeps the spatial (or leading) axes that a Flatten must follow
// before the loss, for a model of that one layer on `input`.
inline bool needs_flatten(const LayerSpec& layer, std::size_t input_rank) {
  const bool global = layer.type == LayerType::GlobalAveragePooling2D ||
                      layer.type == LayerType::GlobalMaxPooling2D ||
                      layer.type == LayerType::GlobalAveragePooling1D ||
                      layer.type == LayerType::GlobalMaxPooling1D;
  if (layer.type == LayerType::Flatten || (global && !layer.keepdims)) return false;
  if (layer.type == LayerType::Reshape) return layer.target_shape.size() > 1;
  if (layer.type == LayerType::Embedding) return true;  // (steps) ids -> (steps, features)
  return input_rank >= 2;
}

}  // namespace mixlab::test_layers
