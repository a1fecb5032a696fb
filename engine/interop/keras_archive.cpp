// Keras 3 `.keras` archives: a zip of config.json (the model, as import_keras_json reads it),
// metadata.json and model.weights.h5, whose layer groups hold each layer's variables in order
// (layers/<name>/vars/0 the kernel, vars/1 the bias). The zip is read with libzip, the weights
// with the HDF5 C API from memory (no temporary file).
#include <hdf5.h>
#include <zip.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "engine/core/error.h"
#include "engine/interop/keras_model.h"
#include "engine/spec/shape_inference.h"

namespace mixlab {
namespace {

// The variables model.quantize("float8") adds to a Dense: inputs_scale, inputs_amax_history,
// kernel_scale, kernel_amax_history, outputs_grad_scale, outputs_grad_amax_history.
constexpr std::size_t kKerasFp8Variables = 6;

// What an entry of the archive may inflate to, decided before it is read, and stated in the
// error that refuses it. An entry's header is never trusted for an allocation: entries are read
// in chunks, and the read stops as soon as the bound is passed.
struct EntryBound {
  zip_uint64_t max_bytes;
  std::string why;  // "a model file is at most 16 MiB"
};

// model.weights.h5 holds what the config's parameters need, at most: each parameter as float64
// (8 bytes; Keras writes float32) four times over (the weight and up to three optimizer slots,
// as Adam with amsgrad keeps: Keras 3 saves a compiled model's optimizer variables in the same
// file), plus 1 MiB and 10% for HDF5's own structure (its superblock, groups, object headers).
constexpr zip_uint64_t kBytesPerParameter = 4 * 8;
constexpr zip_uint64_t kHdf5SlackBytes = zip_uint64_t{1} << 20;

// A compression ratio beyond this, in an entry of more than kRatioFloorBytes, is a zip bomb:
// float weights compress to about 1.1:1, JSON to 10:1; deflate's own limit is about 1032:1.
constexpr zip_uint64_t kMaxCompressionRatio = 200;
constexpr zip_uint64_t kRatioFloorBytes = zip_uint64_t{4} << 20;

// What is read at a time.
constexpr zip_uint64_t kChunkBytes = zip_uint64_t{1} << 20;

EntryBound weights_bound(const ShapeTable& table) {
  const auto params = static_cast<zip_uint64_t>(std::max<std::int64_t>(table.params_total, 0));
  const zip_uint64_t most = std::numeric_limits<zip_uint64_t>::max();
  const zip_uint64_t need =
      params > most / 2 / kBytesPerParameter ? most / 2 : params * kBytesPerParameter;
  const zip_uint64_t max_bytes = need + need / 10 + kHdf5SlackBytes;
  return {max_bytes,
          "the model's " + std::to_string(params) + " parameters need at most " +
              std::to_string(max_bytes) + " bytes (" + std::to_string(kBytesPerParameter) +
              " bytes each: float64, with up to three optimizer slots; plus 10% and 1 MiB for "
              "HDF5; a zip bomb, or another model's weights?)"};
}

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

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
  // Opens the zip `source` (consumed: freed here when it cannot be opened); `error` holds why
  // the source could not be made when it is null, and is released here.
  Archive(zip_source_t* source, zip_error_t& error, std::string name) : name_(std::move(name)) {
    if (source != nullptr) {
      zip_.reset(zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error));
      if (!zip_) zip_source_free(source);
    }
    const std::string why = zip_ ? "" : zip_error_strerror(&error);
    zip_error_fini(&error);
    if (!zip_) throw SpecError(name_ + ": not a readable .keras archive (a zip file): " + why);
  }

  const std::string& name() const { return name_; }

  // The entry's bytes, nullopt when the archive has no such entry. Refuses, naming the archive
  // and the entry, one that says or turns out to be larger than `bound`, or compressed beyond
  // kMaxCompressionRatio.
  std::optional<std::string> read(const char* member, const EntryBound& bound) const {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat(zip_.get(), member, 0, &st) != 0) return std::nullopt;
    const std::string entry = name_ + ": " + member;
    const bool sized = (st.valid & ZIP_STAT_SIZE) != 0;
    const bool compressed_size = (st.valid & ZIP_STAT_COMP_SIZE) != 0;
    if (sized) check(entry, "says it inflates to", st.size, st.comp_size, compressed_size, bound);
    std::unique_ptr<zip_file_t, ZipFileCloser> file(zip_fopen(zip_.get(), member, 0));
    if (!file) {
      throw SpecError(entry + ": cannot open it: " + zip_strerror(zip_.get()));
    }
    std::string bytes;
    for (;;) {
      const std::size_t at = bytes.size();
      bytes.resize(at + kChunkBytes);
      const zip_int64_t got = zip_fread(file.get(), bytes.data() + at, kChunkBytes);
      if (got < 0) {
        throw SpecError(entry + " is damaged: " + zip_file_strerror(file.get()));
      }
      bytes.resize(at + static_cast<std::size_t>(got));
      if (got == 0) break;
      check(entry, "inflates to more than", bytes.size(), st.comp_size, compressed_size, bound);
    }
    if (sized && bytes.size() != st.size) {
      throw SpecError(entry + " is damaged: it inflates to " + std::to_string(bytes.size()) +
                      " bytes, its header says " + std::to_string(st.size));
    }
    return bytes;
  }

 private:
  // Refuses `size` bytes (said by the header, or read so far) over the bound or the ratio.
  static void check(const std::string& entry, const char* verb, zip_uint64_t size,
                    zip_uint64_t compressed, bool compressed_known, const EntryBound& bound) {
    if (size > bound.max_bytes) {
      throw SpecError(entry + " " + verb + " " + std::to_string(size) + " bytes; " + bound.why +
                      ": refused");
    }
    if (compressed_known && size > kRatioFloorBytes &&
        size / kMaxCompressionRatio >= compressed + 1) {
      throw SpecError(entry + " " + verb + " " + std::to_string(size) + " bytes from " +
                      std::to_string(compressed) + " compressed, a ratio over " +
                      std::to_string(kMaxCompressionRatio) + ":1: refused as a zip bomb");
    }
  }

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

  const std::string& name() const { return name_; }

  // The shape of the dataset at `path`.
  Shape dims(const std::string& path, const std::string& what) const {
    const H5Handle set(H5Dopen2(file_, path.c_str(), H5P_DEFAULT), H5Dclose);
    if (!set.valid()) throw SpecError(name_ + ": " + what + ": " + path + " is not a dataset");
    return dims_of(set.get(), path, what);
  }

  // The dataset at `path` as float32, checked to have `shape`.
  std::vector<float> read(const std::string& path, const Shape& shape,
                          const std::string& what) const {
    const H5Handle set(H5Dopen2(file_, path.c_str(), H5P_DEFAULT), H5Dclose);
    if (!set.valid()) throw SpecError(name_ + ": " + what + ": " + path + " is not a dataset");
    const Shape found = dims_of(set.get(), path, what);
    if (found != shape) {
      throw SpecError(name_ + ": " + what + ": " + path + " has shape (" + join(found) +
                      "), the model needs (" + join(shape) + ")");
    }
    const H5Handle type(H5Dget_type(set.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_FLOAT) {
      throw SpecError(name_ + ": " + what + ": " + path + " does not hold floating-point values");
    }
    // What libhdf5 allocates to convert it follows the file's own description of the type: a
    // damaged one (a float of 4 GiB: the fuzz target's find) is refused before it is read.
    // Keras writes 2-, 4- and 8-byte floats.
    const std::size_t element = H5Tget_size(type.get());
    if (element != 2 && element != 4 && element != 8) {
      throw SpecError(name_ + ": " + what + ": " + path + " holds floats of " +
                      std::to_string(element) + " bytes (2, 4 or 8 expected)");
    }
    std::vector<float> values(static_cast<std::size_t>(num_elements(shape)));
    if (H5Dread(set.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
      throw SpecError(name_ + ": " + what + ": cannot read " + path +
                      " as float32 (an HDF5 type MixLab cannot convert?)");
    }
    return values;
  }

  Shape dims_of(hid_t set, const std::string& path, const std::string& what) const {
    const H5Handle space(H5Dget_space(set), H5Sclose);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    std::vector<hsize_t> dims(rank > 0 ? static_cast<std::size_t>(rank) : 0);
    if (rank < 0 || H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) {
      throw SpecError(name_ + ": " + what + ": cannot read the shape of " + path);
    }
    return Shape(dims.begin(), dims.end());
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

// A float8-quantized Dense's three FP8 states, filed after its `first` variables as Keras's
// scale (a scalar) and amax history (a vector) each: input, kernel, output gradient.
std::vector<Fp8TensorState> read_fp8_states(const WeightsFile& file, const std::string& group,
                                            std::size_t first, const std::string& what) {
  static constexpr const char* kTensors[] = {"input", "kernel", "output gradient"};
  std::vector<Fp8TensorState> states(3);
  for (std::size_t t = 0; t < 3; ++t) {
    const std::string scale_at = group + "/" + std::to_string(first + 2 * t);
    const std::string history_at = group + "/" + std::to_string(first + 2 * t + 1);
    const std::string part = what + " FP8 " + kTensors[t];
    const float scale = file.read(scale_at, {}, part + " scale").front();
    if (!(scale > 0.0f) || !std::isfinite(scale)) {
      throw SpecError(file.name() + ": " + part + " scale is " + std::to_string(scale) + " (" +
                      scale_at + "): a scale is positive and finite");
    }
    const Shape dims = file.dims(history_at, part + " amax history");
    if (dims.size() != 1 || dims[0] < 1 || dims[0] > Fp8Recipe::kMaxHistory) {
      throw SpecError(file.name() + ": " + part + " amax history (" + history_at + ") has shape (" +
                      WeightsFile::join(dims) + "), a vector of 1 to " +
                      std::to_string(Fp8Recipe::kMaxHistory) + " amaxes expected");
    }
    states[t].scale = scale;
    states[t].amax_history = file.read(history_at, dims, part + " amax history");
  }
  return states;
}

ImportedModel import_archive(const Archive& archive, const std::string& origin) {
  const std::string& name = archive.name();
  const EntryBound json_bound{kMaxModelFileBytes, "config.json is at most " +
                                                      std::to_string(kMaxModelFileBytes >> 20) +
                                                      " MiB (a model file's cap)"};
  const auto config = archive.read("config.json", json_bound);
  if (!config) throw SpecError(name + ": not a .keras archive: it has no config.json");
  ImportedModel model = import_keras_json(*config, name + " (config.json)");
  model.format = "Keras 3 archive (.keras)";
  const ShapeTable table = infer_shapes(model.spec);
  const auto weights_image = archive.read("model.weights.h5", weights_bound(table));
  bool any_params = false;
  for (const LayerInfo& info : table.layers) any_params = any_params || !info.params.empty();
  // An adapted Normalization keeps its mean and variance as weights: they become the layer's
  // constants.
  for (const LayerSpec& layer : model.spec.layers) {
    any_params = any_params || (layer.type == LayerType::Normalization && layer.mean.empty());
  }
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
  // The group of layer `at`'s variables, or empty.
  const auto group_of = [&](std::size_t at) -> std::string {
    const std::string& keras_name = model.keras_names.at(at);
    for (const std::string& candidate :
         {"layers/" + class_paths.at(at) + "/vars", "layers/" + keras_name + "/vars",
          "_layer_checkpoint_dependencies/" + keras_name + "/vars", keras_name + "/vars"}) {
      // A name that is another layer's class path is that layer's group, not this one's.
      const bool other_layers =
          candidate != "layers/" + class_paths.at(at) + "/vars" &&
          std::any_of(class_paths.begin(), class_paths.end(),
                      [&](const std::string& p) { return candidate == "layers/" + p + "/vars"; });
      if (!other_layers && file.exists(candidate)) return candidate;
    }
    return {};
  };
  const auto layer_spec_out_of_fp8 = [&](std::size_t at) {
    const LayerSpec& l = model.spec.layers.at(at);
    return l.force_bfloat16 || l.force_float32 || l.type != LayerType::Dense;
  };
  for (std::size_t at = 0; at < model.spec.layers.size(); ++at) {
    LayerSpec& layer = model.spec.layers[at];
    if (layer.type != LayerType::Normalization || !layer.mean.empty()) continue;
    const std::string what = "layer " + std::to_string(at) + " " + quote(model.keras_names.at(at));
    const std::string group = group_of(at);
    if (group.empty() || !file.exists(group + "/0") || !file.exists(group + "/1")) {
      throw SpecError(name + " (model.weights.h5): no adapted mean and variance for " + what,
                      static_cast<int>(at));
    }
    const Shape channels{table.layers[at].output_shape.back()};
    for (auto [index, values] : {std::pair{"0", &layer.mean}, std::pair{"1", &layer.variance}}) {
      const std::string part = what + (values == &layer.mean ? " mean" : " variance");
      for (const float v : file.read(group + "/" + index, channels, part)) values->push_back(v);
    }
    // The import's note that a JSON file lacks them does not hold here.
    std::erase_if(model.warnings, [&](const std::string& w) {
      return w.find(quote(model.keras_names.at(at))) != std::string::npos &&
             w.find("come from adapt()") != std::string::npos;
    });
  }
  auto weights = std::make_shared<ModelWeights>();
  weights->origin = origin;
  for (const LayerInfo& info : table.layers) {
    if (info.params.empty()) continue;
    const auto at = static_cast<std::size_t>(info.index);
    const std::string& keras_name = model.keras_names.at(at);
    const std::string what = "layer " + std::to_string(info.index) + " " + quote(keras_name);
    const std::string group = group_of(at);
    if (group.empty()) {
      throw SpecError(name + " (model.weights.h5): no weights for " + what +
                          " (looked for layers/" + class_paths.at(at) + "/vars and layers/" +
                          keras_name + "/vars)",
                      info.index);
    }
    LayerWeights layer;
    layer.layer = info.index;
    // MultiHeadAttention files its projections' variables under its EinsumDense sub-layers
    // (query_dense/vars/0 the kernel, /1 the bias; key_dense, value_dense, output_dense).
    const bool attention = info.type == LayerType::MultiHeadAttention;
    const std::string base = group.substr(0, group.size() - std::string("/vars").size());
    const auto dataset_of = [&](std::size_t i) {
      if (!attention) return group + "/" + std::to_string(i);
      const ParamKind kind = info.params[i].kind;
      const char* sub =
          kind == ParamKind::query_kernel || kind == ParamKind::query_bias   ? "query_dense"
          : kind == ParamKind::key_kernel || kind == ParamKind::key_bias     ? "key_dense"
          : kind == ParamKind::value_kernel || kind == ParamKind::value_bias ? "value_dense"
                                                                             : "output_dense";
      return base + "/" + sub + "/vars/" + (is_kernel(kind) ? "0" : "1");
    };
    for (std::size_t i = 0; i < info.params.size(); ++i) {
      const std::string dataset = dataset_of(i);
      const std::string part = what + " " + std::string(to_string(info.params[i].kind));
      if (!file.exists(dataset)) {
        throw SpecError(name + " (model.weights.h5): " + part + " is missing (" + dataset + ")",
                        info.index);
      }
      std::vector<float> values = file.read(dataset, info.params[i].shape, part);
      layer.values(info.params[i].kind) = std::move(values);
    }
    // A float8-quantized layer (model.quantize("float8")) files six more after its kernel and
    // bias: each FP8 tensor's scale and amax history (input, kernel, output gradient; Keras's
    // Dense.variable_serialization_spec), which a run continues from (Fp8StateRestorer).
    const bool fp8 = model.policy == Policy::mixed_float8 && !layer_spec_out_of_fp8(at);
    const std::size_t extra = fp8 ? kKerasFp8Variables : 0;
    if (attention && model.policy == Policy::mixed_float8 &&
        file.exists(base + "/query_dense/vars/2")) {
      // Keras quantizes attention's EinsumDense sub-layers, not the layer: it is in FP8, each
      // projection's states after its kernel (and bias).
      model.spec.layers[at].force_bfloat16 = false;
      const std::size_t first = model.spec.layers[at].use_bias ? 2 : 1;
      for (const char* sub : {"query_dense", "key_dense", "value_dense", "output_dense"}) {
        for (Fp8TensorState& state :
             read_fp8_states(file, base + "/" + sub + "/vars", first, what + " " + sub)) {
          layer.fp8.push_back(std::move(state));
        }
      }
    }
    if (fp8 && !attention &&
        !file.exists(group + "/" + std::to_string(info.params.size() + extra - 1))) {
      throw SpecError(name + " (model.weights.h5): " + what + " is float8-quantized but lacks " +
                          "its scales and amax histories (" + std::to_string(extra) +
                          " variables after its " + std::to_string(info.params.size()) + ")",
                      info.index);
    }
    if (!attention && file.exists(group + "/" + std::to_string(info.params.size() + extra))) {
      throw SpecError(name + " (model.weights.h5): " + what + " has more variables than its " +
                          std::to_string(info.params.size() + extra) + " in MixLab",
                      info.index);
    }
    if (fp8 && !attention) layer.fp8 = read_fp8_states(file, group, info.params.size(), what);
    weights->layers.push_back(std::move(layer));
  }
  // The JSON import's warning said the FP8 states are not imported: from an archive they are.
  const bool carried = std::any_of(weights->layers.begin(), weights->layers.end(),
                                   [](const LayerWeights& w) { return !w.fp8.empty(); });
  if (carried) {
    for (std::string& w : model.warnings) {
      if (w.find("FP8 scales and amax histories are not imported") == std::string::npos) continue;
      w = "float8-quantized layers: a run continues from their FP8 scales and amax histories "
          "when its --fp8-history is as long as theirs (else it starts them afresh, saying so)";
    }
  }
  model.weights = std::move(weights);
  return model;
}

}  // namespace

ImportedModel import_keras_archive(const std::filesystem::path& path) {
  zip_error_t error;
  zip_error_init(&error);
  // Length -1: to the end of the file (ZIP_LENGTH_TO_END from libzip 1.10).
  zip_source_t* source = zip_source_file_create(path.c_str(), 0, -1, &error);
  return import_archive(Archive(source, error, path.string()), path.filename().string());
}

ImportedModel import_keras_archive(std::string_view bytes, const std::string& name) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  return import_archive(Archive(source, error, name), name);
}

}  // namespace mixlab
