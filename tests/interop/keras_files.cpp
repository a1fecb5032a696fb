#include "tests/interop/keras_files.h"

#include <hdf5.h>
#include <zip.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace mixlab::test {

void write_h5(const std::filesystem::path& file, const std::vector<H5Dataset>& datasets) {
  const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error("H5Fcreate " + file.string());
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  for (const H5Dataset& d : datasets) {
    std::vector<hsize_t> dims(d.shape.begin(), d.shape.end());
    const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t set =
        H5Dcreate2(f, d.path.c_str(), H5T_IEEE_F32LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    if (set < 0) throw std::runtime_error("H5Dcreate2 " + d.path);
    H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.values.data());
    H5Dclose(set);
    H5Sclose(space);
  }
  H5Pclose(lcpl);
  H5Fclose(f);
}

void write_zip(const std::filesystem::path& file,
               const std::map<std::string, std::string>& members) {
  int error = 0;
  zip_t* z = zip_open(file.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  if (z == nullptr) throw std::runtime_error("zip_open " + file.string());
  for (const auto& [name, bytes] : members) {
    zip_source_t* source = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    if (source == nullptr || zip_file_add(z, name.c_str(), source, ZIP_FL_OVERWRITE) < 0) {
      throw std::runtime_error("zip_file_add " + name);
    }
  }
  if (zip_close(z) != 0) throw std::runtime_error("zip_close " + file.string());
}

std::string read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string keras3_layer(const std::string& cls, const std::string& config_fields) {
  return R"({"module": "keras.layers", "class_name": ")" + cls + R"(", "config": {)" +
         config_fields + R"(}, "registered_name": null})";
}

std::string keras3_sequential(const std::vector<std::string>& layers, const std::string& policy) {
  std::string list;
  for (const std::string& l : layers) list += (list.empty() ? "" : ", ") + l;
  return R"({"module": "keras", "class_name": "Sequential", "config": {"name": "sequential",
    "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
    "config": {"name": ")" +
         policy + R"("}, "registered_name": null}, "layers": [)" + list +
         R"(]}, "registered_name": null, "build_config": {"input_shape": null}})";
}

}  // namespace mixlab::test
