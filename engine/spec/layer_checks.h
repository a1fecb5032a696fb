// Internal to engine/spec: the value checks that the parser and shape inference share, so that a
// spec read from a file and one built in memory (the editor) fail with the same message.
#pragma once

#include <string>

#include "engine/spec/model_spec.h"

namespace mixlab::spec_detail {

// Largest value of an integer field (units, filters, kernel_size, ...) and of an input dimension.
inline constexpr int kMaxFieldValue = 2147483647;

// "layer 4 (Conv2D): "
std::string layer_prefix(int index, LayerType type);

// Shortest text that reads back as the same double ("0.00392156862745098", "1.5", "inf").
std::string format_number(double value);

// Throws SpecError (prefixed by `prefix`, then the layer) when a field the layer's type uses is
// out of range: units/filters/kernel_size/strides/pool_size < 1, rate outside [0, 1), scale or
// offset not finite. The error's layer() is `index`.
void check_layer_values(const LayerSpec& layer, int index, const std::string& prefix = {});

}  // namespace mixlab::spec_detail
