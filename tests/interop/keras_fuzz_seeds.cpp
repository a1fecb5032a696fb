// Writes the keras_archive fuzz target's seed corpus (fuzz/corpus/keras_archive/, committed):
// small .keras archives as Keras 3 saves them, their entries stored (not deflated) so that the
// fuzzer's mutations reach the JSON and the HDF5 bytes, and one deflated. Run by
// fuzz/make_corpus.py --keras-seeds build/release/tests/interop/keras_fuzz_seeds.
//
// usage: keras_fuzz_seeds DIR
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/interop/keras_files.h"

namespace {

using mixlab::test::H5Dataset;
using mixlab::test::keras3_layer;
using mixlab::test::keras3_sequential;

std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) / 8.0f - 1.0f;
  return v;
}

std::string h5(const std::filesystem::path& dir, const std::vector<H5Dataset>& datasets) {
  mixlab::test::write_h5(dir / "w.h5", datasets);
  return mixlab::test::read_bytes(dir / "w.h5");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: keras_fuzz_seeds DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const std::string input4 = keras3_layer(
      "InputLayer", R"("batch_shape": [null, 4], "dtype": "float32", "name": "input_layer")");
  const std::string dense = keras3_sequential(
      {input4, keras3_layer("Dense", R"("name": "hidden", "units": 3, "activation": "relu")"),
       keras3_layer("Dense", R"("name": "out", "units": 2, "use_bias": false)")});
  const std::string dense_h5 = h5(dir, {{"layers/dense/vars/0", {4, 3}, ramp(12)},
                                        {"layers/dense/vars/1", {3}, ramp(3)},
                                        {"layers/dense_1/vars/0", {3, 2}, ramp(6)}});
  const std::string metadata = R"({"keras_version": "3.12.0", "date_saved": "2026-12-04"})";
  mixlab::test::write_zip(
      dir / "dense.keras",
      {{"config.json", dense}, {"metadata.json", metadata}, {"model.weights.h5", dense_h5}}, true);
  mixlab::test::write_zip(dir / "dense-deflated.keras",
                          {{"config.json", dense}, {"model.weights.h5", dense_h5}});

  const std::string conv = keras3_sequential(
      {keras3_layer("InputLayer",
                    R"("batch_shape": [null, 4, 4, 1], "dtype": "float32", "name": "in")"),
       keras3_layer("Conv2D", R"("name": "c", "filters": 2, "kernel_size": [2, 2],
                                 "padding": "same", "activation": "relu")"),
       keras3_layer("MaxPooling2D", R"("name": "p", "pool_size": [2, 2])"),
       keras3_layer("Flatten", R"("name": "f")"),
       keras3_layer("Dense", R"("name": "d", "units": 2, "activation": "softmax")")},
      "mixed_float16");
  mixlab::test::write_zip(
      dir / "conv.keras",
      {{"config.json", conv},
       {"model.weights.h5", h5(dir, {{"layers/conv2d/vars/0", {2, 2, 1, 2}, ramp(8)},
                                     {"layers/conv2d/vars/1", {2}, ramp(2)},
                                     {"layers/dense/vars/0", {8, 2}, ramp(16)},
                                     {"layers/dense/vars/1", {2}, ramp(2)}})}},
      true);

  const std::string no_params = keras3_sequential(
      {input4, keras3_layer("Activation", R"("name": "a", "activation": "softmax")")});
  mixlab::test::write_zip(dir / "no-weights.keras", {{"config.json", no_params}}, true);
  std::filesystem::remove(dir / "w.h5");
  return 0;
}
