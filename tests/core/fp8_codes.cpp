// The FP8 conversions and scale updates of engine/core/fp8.h and engine/ops/fp8_scaling.h as a
// filter, for tests/keras/parity.py's fp8 part to compare with ml_dtypes and keras.quantizers:
//   fp8_codes encode IN OUT
//       IN: float32 values (little-endian); OUT: their E4M3 codes, then their E5M2 codes
//   fp8_codes scales FORMAT HISTORY MARGIN AMAX IN OUT
//       FORMAT e4m3|e5m2, AMAX max|most_recent; IN: a float32 amax per step; OUT: the float32
//       scale after each step's update
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/core/fp8.h"
#include "engine/ops/fp8_scaling.h"

namespace {

std::vector<float> read_floats(const char* path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<float> values(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.begin() + static_cast<long>(values.size() * sizeof(float)),
            reinterpret_cast<char*>(values.data()));
  return values;
}

int usage() {
  std::cerr << "usage: fp8_codes encode IN OUT | scales e4m3|e5m2 HISTORY MARGIN max|most_recent "
               "IN OUT\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mixlab;
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "encode" && argc == 4) {
    const auto values = read_floats(argv[2]);
    std::vector<std::uint8_t> out;
    out.reserve(values.size() * 2);
    for (float v : values) out.push_back(float_to_e4m3_bits(v));
    for (float v : values) out.push_back(float_to_e5m2_bits(v));
    std::ofstream(argv[3], std::ios::binary)
        .write(reinterpret_cast<const char*>(out.data()), static_cast<long>(out.size()));
    return 0;
  }
  if (command == "scales" && argc == 8) {
    const std::string format = argv[2];
    Fp8Recipe recipe;
    recipe.history = std::atoi(argv[3]);
    recipe.margin = std::atoi(argv[4]);
    const auto algo = parse_fp8_amax(argv[5]);
    if ((format != "e4m3" && format != "e5m2") || !algo) return usage();
    recipe.amax = *algo;
    Fp8TensorScaling scaling(format == "e4m3" ? Fp8Format::e4m3 : Fp8Format::e5m2, recipe);
    std::vector<float> scales;
    for (float amax : read_floats(argv[6])) {
      scaling.update(amax);
      scales.push_back(scaling.scale());
    }
    std::ofstream(argv[7], std::ios::binary)
        .write(reinterpret_cast<const char*>(scales.data()),
               static_cast<long>(scales.size() * sizeof(float)));
    return 0;
  }
  return usage();
}
