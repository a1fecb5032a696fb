// Internal to engine/spec: the value checks that the parser and shape inference share, so that a
// spec read from a file and one built in memory (the editor) fail with the same message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/spec/model_spec.h"

namespace mixlab::spec_detail {

// What a file may leave out (model_spec.h), as the reader fills it in and the writer omits it.
inline constexpr std::string_view kDefaultModelName = "model";
inline constexpr LossKind kDefaultLoss = LossKind::sparse_categorical_crossentropy;
inline constexpr Size2 kDefaultStrides{1, 1};
inline constexpr Size2 kDefaultPoolSize{2, 2};

// Largest value of an integer field (units, filters, kernel_size, ...) and of an input dimension.
inline constexpr int kMaxFieldValue = 2147483647;

// "layer 4 (Conv2D): "; with a name, "layer 4 (Conv2D) 'conv_1': ".
std::string layer_prefix(int index, LayerType type);
std::string layer_prefix(int index, LayerType type, std::string_view name);

// Shortest text that reads back as the same double ("0.00392156862745098", "1.5", "inf").
std::string format_number(double value);
// A Reshape's target_shape as written: "[4, -1, 2]".
std::string format_target(const std::vector<std::int64_t>& shape);

// Throws SpecError (prefixed by `prefix`, then the layer) when a field the layer's type uses is
// out of range: units/filters/kernel_size/strides/pool_size < 1, rate outside [0, 1), scale or
// offset not finite. The error's layer() is `index`.
void check_layer_values(const LayerSpec& layer, int index, const std::string& prefix = {});

}  // namespace mixlab::spec_detail
