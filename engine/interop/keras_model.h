// Models in and out of Keras: Keras 3 and tf.keras 2.x model JSON (model.to_json()) and Keras 3
// `.keras` archives with their weights become a MixLab spec; a spec becomes Keras 3 JSON that
// keras.models.model_from_json loads. Qt-free; mixlab-cli and the GUI both read models through
// load_model_source(), which takes MixLab's own model files too.
//
// What imports: Sequential models, and functional models with one input and one output whose
// layers are each called once (a graph: merges keep the Keras names of what they read); the layer
// types MixLab has, under their Keras names and common spellings (MaxPool2D, ReLU, Softmax,
// activations given by name or as serialized objects). The model's dtype policy sets the run's
// precision; a layer's own "float32" under a mixed policy is kept. Fields MixLab does not model
// (initialisers other than Keras's defaults, regularizers, constraints) become warnings, as does
// what Keras 3 keeps or ignores (checked against Keras 3.12): a "trainable" that is false or not
// a boolean, a build_input_shape or model build_config that is not a shape or disagrees with the
// input layer's, a model's own dtype policy of an unknown class. Fields it does not know are
// errors, as are other layer types, several inputs or outputs and shared layers, and what Keras
// refuses: a batch_shape that is not [null, dims...], two layers giving different input shapes,
// a layer's build_config input_shape other than the shape it gets, a name that is not a string,
// a layer's dtype policy of a class other than DTypePolicy, FloatDTypePolicy or Policy. Every
// error names the file, the layer and the field, and nothing is half-imported.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/precision.h"
#include "engine/spec/model_spec.h"
#include "engine/spec/model_weights.h"

namespace mixlab {

// A model as read from a file, with what the file says beyond the layers.
struct ImportedModel {
  ModelSpec spec;
  std::string format;            // "MixLab JSON", "Keras 3 JSON", "tf.keras 2 JSON", ...
  std::optional<Policy> policy;  // the file's dtype policy, when it names one
  std::shared_ptr<const ModelWeights> weights;  // a .keras archive's, checked against the spec
  std::vector<std::string> warnings;            // fields read but not modelled
  // Each layer's name in the Keras file (its weights are found by it); the spec keeps only the
  // names Keras did not make up ("dense_3" is left out, so that spec round trips compare).
  std::vector<std::string> keras_names;
  std::vector<std::string> keras_classes;  // each layer's Keras class ("Dense", "MaxPooling2D")
};

// Keras's snake_case of a class name, as it names layers and their weight groups:
// "MaxPooling2D" -> "max_pooling2d", "ReLU" -> "re_lu".
std::string keras_snake_case(std::string_view cls);

// True when `text` is a Keras model's JSON (a top-level "class_name") rather than MixLab's.
bool is_keras_json(std::string_view text);

// Parses Keras 3 or tf.keras 2.x model JSON. `origin` (a file name) prefixes errors. Throws
// SpecError.
ImportedModel import_keras_json(std::string_view text, std::string_view origin = {});

// Reads a Keras 3 `.keras` archive: config.json as import_keras_json() does, and the weights of
// model.weights.h5, checked against the spec's parameter shapes. Throws SpecError naming the
// archive and what is wrong (not a zip, a member missing, a weight missing or mis-shaped).
// Every entry is read in chunks and bounded before it is allocated: config.json by a model
// file's cap, model.weights.h5 by what the config's parameters need (with a stated slack for
// HDF5 and optimizer slots), and any entry by a compression ratio of 200:1 beyond 4 MiB, so that
// a zip bomb or a header that lies about a size is refused, naming the archive and the entry.
ImportedModel import_keras_archive(const std::filesystem::path& path);
// The same from an archive's bytes in memory; `name` stands for the file in errors and is the
// weights' origin.
ImportedModel import_keras_archive(std::string_view bytes, const std::string& name);

// Any model file: MixLab JSON, Keras JSON or a .keras archive (by its content, not its name).
ImportedModel load_model_source(const std::filesystem::path& path);

// Keras 3 JSON of a Sequential model that keras.models.model_from_json() loads: the layers,
// `policy` as the model's and the layers' dtype policy (a layer with force_float32 keeps
// "float32"), and the loss as a compile config.
std::string export_keras_json(const ModelSpec& spec, Policy policy = Policy::float32);

}  // namespace mixlab
