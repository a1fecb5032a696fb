// Test support: Keras files made by hand, as Keras 3 and tf.keras 2 write them, and .keras
// archives written with libzip and HDF5 (good ones, and ones broken in one named way).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/data/data_files.h"  // TempDir

namespace mixlab::test {

// One dataset of model.weights.h5: its path ("layers/dense/vars/0"), shape and values.
struct H5Dataset {
  std::string path;
  std::vector<unsigned long long> shape;
  std::vector<float> values;
};

// Writes an HDF5 file holding `datasets` (float32).
void write_h5(const std::filesystem::path& file, const std::vector<H5Dataset>& datasets);

// Writes a zip of `members` (name -> bytes), deflated, or stored as they are.
void write_zip(const std::filesystem::path& file, const std::map<std::string, std::string>& members,
               bool stored = false);

// Makes the zip `bytes` lie about `member`: its local and central headers then say it inflates
// to `size` bytes, whatever its data inflates to (a hostile archive). Throws when the member is
// not found.
void set_declared_size(std::string& bytes, const std::string& member, std::uint32_t size);

// The bytes of a file.
std::string read_bytes(const std::filesystem::path& file);

// A Keras 3 layer object: {"module": "keras.layers", "class_name": cls, "config": config, ...}.
std::string keras3_layer(const std::string& cls, const std::string& config_fields);
// A Keras 3 Sequential model of `layers` (keras3_layer texts) with a model dtype policy.
std::string keras3_sequential(const std::vector<std::string>& layers,
                              const std::string& policy = "float32");

// The message of the SpecError import_keras_json(text, origin) throws, or "(no error)".
std::string keras_error_of(const std::string& text, const std::string& origin);

}  // namespace mixlab::test
