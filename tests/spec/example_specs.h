// The four example models of resources/models/, built in code, so tests can check that the files
// say what the brief asks and that shape inference gives hand-derived numbers for them.
#pragma once

#include <string>

#include "engine/spec/model_spec.h"

namespace mixlab::test {

LayerSpec dense(int units, ActivationFn activation = ActivationFn::linear);
LayerSpec conv2d(int filters, Size2 kernel, Padding padding = Padding::valid,
                 ActivationFn activation = ActivationFn::linear);
LayerSpec max_pool(int pool);  // Keras default strides (= pool) and padding 'valid'
LayerSpec flatten();
LayerSpec rescaling(double scale);
LayerSpec dropout(double rate);
LayerSpec activation(ActivationFn fn, bool force_float32 = false);

ModelSpec fashion_mlp_spec();
ModelSpec fashion_cnn_spec();
ModelSpec cifar10_mlp_spec();
ModelSpec cifar100_convnet_spec();

// The text of a source-tree file, e.g. "resources/models/fashion-cnn.json".
std::string read_source_file(const std::string& relative_path);

}  // namespace mixlab::test
