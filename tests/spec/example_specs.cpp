#include "tests/spec/example_specs.h"
#include "tests/test_paths.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace mixlab::test {

LayerSpec dense(int units, ActivationFn activation) {
  LayerSpec l;
  l.type = LayerType::Dense;
  l.units = units;
  l.activation = activation;
  return l;
}

LayerSpec conv2d(int filters, Size2 kernel, Padding padding, ActivationFn activation) {
  LayerSpec l;
  l.type = LayerType::Conv2D;
  l.filters = filters;
  l.kernel_size = kernel;
  l.padding = padding;
  l.activation = activation;
  return l;
}

LayerSpec max_pool(int pool) {
  LayerSpec l;
  l.type = LayerType::MaxPooling2D;
  l.pool_size = {pool, pool};
  l.strides = {pool, pool};
  return l;
}

LayerSpec flatten() {
  LayerSpec l;
  l.type = LayerType::Flatten;
  return l;
}

LayerSpec rescaling(double scale) {
  LayerSpec l;
  l.type = LayerType::Rescaling;
  l.scale = scale;
  return l;
}

LayerSpec dropout(double rate) {
  LayerSpec l;
  l.type = LayerType::Dropout;
  l.rate = rate;
  return l;
}

LayerSpec activation(ActivationFn fn, bool force_float32) {
  LayerSpec l;
  l.type = LayerType::Activation;
  l.activation = fn;
  l.force_float32 = force_float32;
  return l;
}

ModelSpec fashion_mlp_spec() {
  ModelSpec s;
  s.name = "fashion-mlp";
  s.input_shape = {28, 28, 1};
  s.layers = {rescaling(1.0 / 255), flatten(), dense(128, ActivationFn::relu), dense(10),
              activation(ActivationFn::softmax, true)};
  return s;
}

ModelSpec fashion_cnn_spec() {
  ModelSpec s;
  s.name = "fashion-cnn";
  s.input_shape = {28, 28, 1};
  s.layers = {rescaling(1.0 / 255),
              conv2d(16, {3, 3}, Padding::same, ActivationFn::relu),
              max_pool(2),
              flatten(),
              dense(128, ActivationFn::relu),
              dense(10),
              activation(ActivationFn::softmax, true)};
  return s;
}

ModelSpec cifar10_mlp_spec() {
  ModelSpec s;
  s.name = "cifar10-mlp";
  s.input_shape = {32, 32, 3};
  s.layers = {flatten(), dense(3000, ActivationFn::relu), dense(1000, ActivationFn::relu),
              dense(10), activation(ActivationFn::sigmoid, true)};
  return s;
}

ModelSpec cifar100_convnet_spec() {
  ModelSpec s;
  s.name = "cifar100-convnet";
  s.input_shape = {32, 32, 3};
  s.layers = {rescaling(1.0 / 255),
              conv2d(64, {4, 4}),
              max_pool(2),
              conv2d(32, {2, 2}),
              max_pool(2),
              flatten(),
              dense(4096, ActivationFn::relu),
              dense(4096, ActivationFn::relu),
              dense(4096, ActivationFn::relu),
              dense(4096, ActivationFn::relu),
              dropout(0.2),
              dense(100),
              activation(ActivationFn::softmax, true)};
  return s;
}

std::string read_source_file(const std::string& relative_path) {
  const std::string path = mixlab::test::source_dir() + "/" + relative_path;
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot open " + path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace mixlab::test
