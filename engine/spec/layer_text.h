// How a layer is named for people, in Keras's vocabulary, the same everywhere: the editor's
// stack, per-layer timings in the live view, the history, mixlab-cli and the CSV export.
#pragma once

#include <string>

#include "engine/spec/model_spec.h"

namespace mixlab {

// "Dense 128, relu", "Conv2D 64, 4x4, stride 2, same", "MaxPooling2D 2x2", "Rescaling 1/255";
// ", float32" when the layer keeps float32 under a mixed policy.
std::string layer_summary(const LayerSpec& layer);
// Layer `index` of `spec` as a list names it: "2 Dense 128, relu (dense_1)" (its name when it
// has one); "layer 7" for an index the spec does not have.
std::string layer_title(const ModelSpec& spec, int index);
std::string format_size2(Size2 size);  // "3x3"

}  // namespace mixlab
