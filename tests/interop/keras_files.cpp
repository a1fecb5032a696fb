#include "tests/interop/keras_files.h"

#include <hdf5.h>
#include <zip.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "engine/core/error.h"
#include "engine/interop/keras_model.h"

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

void write_zip(const std::filesystem::path& file, const std::map<std::string, std::string>& members,
               bool stored) {
  int error = 0;
  zip_t* z = zip_open(file.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  if (z == nullptr) throw std::runtime_error("zip_open " + file.string());
  for (const auto& [name, bytes] : members) {
    zip_source_t* source = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    const zip_int64_t index =
        source == nullptr ? -1 : zip_file_add(z, name.c_str(), source, ZIP_FL_OVERWRITE);
    if (index < 0 || (stored && zip_set_file_compression(z, static_cast<zip_uint64_t>(index),
                                                         ZIP_CM_STORE, 0) < 0)) {
      throw std::runtime_error("zip_file_add " + name);
    }
  }
  if (zip_close(z) != 0) throw std::runtime_error("zip_close " + file.string());
}

void set_declared_size(std::string& bytes, const std::string& member, std::uint32_t size) {
  const auto put32 = [&](std::size_t at) {
    for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>((size >> (8 * i)) & 0xff);
  };
  // (signature, offset of the uncompressed size, offset of the name) for the local file header
  // and the central directory entry (APPNOTE.TXT 4.3.7 and 4.3.12).
  struct Header {
    std::string_view signature;
    std::size_t size_at, name_at;
  };
  int patched = 0;
  for (const Header h : {Header{std::string_view("PK\3\4", 4), 22, 30},
                         Header{std::string_view("PK\1\2", 4), 24, 46}}) {
    for (std::size_t at = bytes.find(h.signature); at != std::string::npos;
         at = bytes.find(h.signature, at + 1)) {
      if (bytes.compare(at + h.name_at, member.size(), member) == 0) {
        put32(at + h.size_at);
        ++patched;
      }
    }
  }
  if (patched != 2) throw std::runtime_error("set_declared_size: " + member + " not found");
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

std::string keras_error_of(const std::string& text, const std::string& origin) {
  try {
    import_keras_json(text, origin);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace mixlab::test
