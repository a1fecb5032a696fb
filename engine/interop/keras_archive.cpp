// Keras 3 `.keras` archives: a zip of config.json (the model, as import_keras_json reads it),
// metadata.json and model.weights.h5, whose layer groups hold each layer's variables in order
// (layers/<name>/vars/0 the kernel, vars/1 the bias). The zip is read with libzip, the weights
// with the HDF5 C API from memory (no temporary file).
#include <hdf5.h>
#include <zip.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "engine/core/error.h"
#include "engine/interop/keras_model.h"
#include "engine/spec/shape_inference.h"

namespace mixlab {
namespace {

// Members larger than this are refused (a model's weights are far smaller; a zip bomb is not).
constexpr zip_uint64_t kMaxMemberBytes = zip_uint64_t{4} << 30;

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

// An HDF5 handle closed by its own close function.
class H5Handle {
 public:
  H5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  ~H5Handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

class Archive {
 public:
  explicit Archive(const std::filesystem::path& path) : name_(path.string()) {
    int code = 0;
    zip_.reset(zip_open(name_.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
    if (!zip_) {
      zip_error_t error;
      zip_error_init_with_code(&error, code);
      const std::string why = zip_error_strerror(&error);
      zip_error_fini(&error);
      throw SpecError(name_ + ": not a readable .keras archive (a zip file): " + why);
    }
  }

  const std::string& name() const { return name_; }

  std::optional<std::string> read(const char* member, zip_uint64_t max_bytes) const {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat(zip_.get(), member, 0, &st) != 0) return std::nullopt;
    if ((st.valid & ZIP_STAT_SIZE) == 0 || st.size > max_bytes) {
      throw SpecError(name_ + ": " + member + " is larger than " + std::to_string(max_bytes >> 20) +
                      " MiB");
    }
    zip_file_t* file = zip_fopen(zip_.get(), member, 0);
    if (file == nullptr) {
      throw SpecError(name_ + ": cannot open " + member + ": " + zip_strerror(zip_.get()));
    }
    std::string bytes(static_cast<std::size_t>(st.size), '\0');
    const zip_int64_t got = zip_fread(file, bytes.data(), st.size);
    const std::string why = got < 0 ? zip_file_strerror(file) : "";
    zip_fclose(file);
    if (got < 0 || static_cast<zip_uint64_t>(got) != st.size) {
      throw SpecError(name_ + ": " + member + " is damaged" + (why.empty() ? "" : ": " + why));
    }
    return bytes;
  }

 private:
  std::string name_;
  ZipPtr zip_;
};

// model.weights.h5, opened from memory.
class WeightsFile {
 public:
  WeightsFile(std::string image, std::string name)
      : image_(std::move(image)), name_(std::move(name)) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors come back as codes, named below
    const H5Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    if (!fapl.valid() || H5Pset_fapl_core(fapl.get(), 1 << 20, 0) < 0 ||
        H5Pset_file_image(fapl.get(), image_.data(), image_.size()) < 0) {
      throw SpecError(name_ + ": the HDF5 library could not open the weights in memory");
    }
    file_ = H5Fopen("model.weights.h5", H5F_ACC_RDONLY, fapl.get());
    if (file_ < 0) throw SpecError(name_ + ": not an HDF5 file");
  }
  WeightsFile(const WeightsFile&) = delete;
  WeightsFile& operator=(const WeightsFile&) = delete;
  ~WeightsFile() {
    if (file_ >= 0) H5Fclose(file_);
  }

  bool exists(const std::string& path) const {
    // Each link on the way must exist for H5Lexists to answer.
    std::size_t at = 0;
    while (true) {
      const std::size_t slash = path.find('/', at);
      const std::string part = path.substr(0, slash);
      if (H5Lexists(file_, part.c_str(), H5P_DEFAULT) <= 0) return false;
      if (slash == std::string::npos) return true;
      at = slash + 1;
    }
  }

  // The dataset at `path` as float32, checked to have `shape`.
  std::vector<float> read(const std::string& path, const Shape& shape,
                          const std::string& what) const {
    const H5Handle set(H5Dopen2(file_, path.c_str(), H5P_DEFAULT), H5Dclose);
    if (!set.valid()) throw SpecError(name_ + ": " + what + ": " + path + " is not a dataset");
    const H5Handle space(H5Dget_space(set.get()), H5Sclose);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    std::vector<hsize_t> dims(rank > 0 ? static_cast<std::size_t>(rank) : 0);
    if (rank < 0 || H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) {
      throw SpecError(name_ + ": " + what + ": cannot read the shape of " + path);
    }
    Shape found(dims.begin(), dims.end());
    if (found != shape) {
      throw SpecError(name_ + ": " + what + ": " + path + " has shape (" + join(found) +
                      "), the model needs (" + join(shape) + ")");
    }
    const H5Handle type(H5Dget_type(set.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_FLOAT) {
      throw SpecError(name_ + ": " + what + ": " + path + " does not hold floating-point values");
    }
    std::vector<float> values(static_cast<std::size_t>(num_elements(shape)));
    if (H5Dread(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
      throw SpecError(name_ + ": " + what + ": cannot read " + path +
                      " as float32 (an HDF5 type MixLab cannot convert?)");
    }
    return values;
  }

  static std::string join(const Shape& shape) {
    std::string out;
    for (std::int64_t d : shape) out += (out.empty() ? "" : ", ") + std::to_string(d);
    return out;
  }

 private:
  std::string image_;  // H5Pset_file_image copies it, but the core driver may keep pointers
  std::string name_;
  hid_t file_ = -1;
};

}  // namespace

ImportedModel import_keras_archive(const std::filesystem::path& path) {
  const Archive archive(path);
  const std::string& name = archive.name();
  const auto config = archive.read("config.json", kMaxModelFileBytes);
  if (!config) throw SpecError(name + ": not a .keras archive: it has no config.json");
  ImportedModel model = import_keras_json(*config, name + " (config.json)");
  model.format = "Keras 3 archive (.keras)";
  const auto weights_image = archive.read("model.weights.h5", kMaxMemberBytes);
  const ShapeTable table = infer_shapes(model.spec);
  bool any_params = false;
  for (const LayerInfo& info : table.layers) any_params = any_params || !info.params.empty();
  if (!weights_image) {
    if (any_params) {
      throw SpecError(name + ": the archive has no model.weights.h5 (save it with model.save())");
    }
    return model;
  }
  const WeightsFile file(*weights_image, name + " (model.weights.h5)");
  // Keras 3 files a model's layers under the snake_case of their class, numbered per class in
  // the model's order ("layers/dense", "layers/dense_1"; the input layer has none), whatever
  // the layers are called. Their own names are tried after (other writers).
  std::vector<std::string> class_paths;
  std::map<std::string, int> per_class;
  for (const std::string& cls : model.keras_classes) {
    const std::string snake = keras_snake_case(cls);
    const int n = per_class[snake]++;
    class_paths.push_back(n == 0 ? snake : snake + "_" + std::to_string(n));
  }
  auto weights = std::make_shared<ModelWeights>();
  weights->origin = path.filename().string();
  for (const LayerInfo& info : table.layers) {
    if (info.params.empty()) continue;
    const auto at = static_cast<std::size_t>(info.index);
    const std::string& keras_name = model.keras_names.at(at);
    const std::string what = "layer " + std::to_string(info.index) + " '" + keras_name + "'";
    std::string group;
    for (const std::string& candidate :
         {"layers/" + class_paths.at(at) + "/vars", "layers/" + keras_name + "/vars",
          "_layer_checkpoint_dependencies/" + keras_name + "/vars", keras_name + "/vars"}) {
      // A name that is another layer's class path is that layer's group, not this one's.
      const bool other_layers =
          candidate != "layers/" + class_paths.at(at) + "/vars" &&
          std::any_of(class_paths.begin(), class_paths.end(),
                      [&](const std::string& p) { return candidate == "layers/" + p + "/vars"; });
      if (!other_layers && file.exists(candidate)) {
        group = candidate;
        break;
      }
    }
    if (group.empty()) {
      throw SpecError(name + " (model.weights.h5): no weights for " + what +
                          " (looked for layers/" + class_paths.at(at) + "/vars and layers/" +
                          keras_name + "/vars)",
                      info.index);
    }
    LayerWeights layer;
    layer.layer = info.index;
    for (std::size_t i = 0; i < info.params.size(); ++i) {
      const std::string dataset = group + "/" + std::to_string(i);
      const std::string part = what + " " + std::string(to_string(info.params[i].kind));
      if (!file.exists(dataset)) {
        throw SpecError(name + " (model.weights.h5): " + part + " is missing (" + dataset + ")",
                        info.index);
      }
      std::vector<float> values = file.read(dataset, info.params[i].shape, part);
      (info.params[i].kind == ParamKind::kernel ? layer.kernel : layer.bias) = std::move(values);
    }
    if (file.exists(group + "/" + std::to_string(info.params.size()))) {
      throw SpecError(name + " (model.weights.h5): " + what + " has more variables than its " +
                          std::to_string(info.params.size()) + " in MixLab",
                      info.index);
    }
    weights->layers.push_back(std::move(layer));
  }
  model.weights = std::move(weights);
  return model;
}

}  // namespace mixlab
