// Keras model JSON in: the Keras graph is walked into MixLab's own model JSON, which
// parse_model_json() then checks (types and ranges, with its messages). What is Keras-only (the
// envelope, dtype policies, functional connections, initialisers) is handled here.
#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <span>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/interop/keras_graph.h"
#include "engine/interop/keras_model.h"
#include "engine/spec/json_text.h"
#include "engine/spec/model_graph.h"
#include "engine/spec/shape_inference.h"

namespace mixlab {
namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;
using Keys = std::span<const std::string_view>;
using keras_detail::functional_graph;
using keras_detail::KerasLayer;
using keras_detail::KerasNode;
using keras_detail::layer_list;
using keras_detail::where;

// Keys of a serialized object that carry no model meaning here.
constexpr auto kEnvelopeKeys = std::to_array<std::string_view>(
    {"module", "class_name", "config", "registered_name", "build_config", "compile_config",
     "keras_version", "backend", "name", "inbound_nodes", "shared_object_id"});

// Config keys every Keras layer has.
constexpr auto kLayerBaseKeys =
    std::to_array<std::string_view>({"name", "trainable", "dtype", "autocast", "batch_input_shape",
                                     "input_shape", "batch_size", "input_dim"});
// Keras fields MixLab does not model, read as warnings when not at their defaults.
constexpr auto kKernelKeys = std::to_array<std::string_view>({"kernel_initializer",
                                                              "bias_initializer",
                                                              "kernel_regularizer",
                                                              "bias_regularizer",
                                                              "activity_regularizer",
                                                              "kernel_constraint",
                                                              "bias_constraint",
                                                              "lora_rank",
                                                              "lora_alpha",
                                                              "quantization_config",
                                                              "depthwise_initializer",
                                                              "depthwise_regularizer",
                                                              "depthwise_constraint",
                                                              "pointwise_initializer",
                                                              "pointwise_regularizer",
                                                              "pointwise_constraint",
                                                              "gamma_initializer",
                                                              "beta_initializer",
                                                              "moving_mean_initializer",
                                                              "moving_variance_initializer",
                                                              "gamma_regularizer",
                                                              "beta_regularizer",
                                                              "gamma_constraint",
                                                              "beta_constraint",
                                                              "embeddings_initializer",
                                                              "embeddings_regularizer",
                                                              "embeddings_constraint",
                                                              "initializer"});

// An initialiser at MixLab's own start for that variable: glorot_uniform kernels, zero biases,
// BatchNormalization's ones and zeros.
bool default_initializer(std::string_view key, const nlohmann::json& v) {
  const std::string cls = v.is_object() ? v.value("class_name", std::string()) : "";
  const auto is = [&](const char* c, const char* name) { return cls == c || v == name; };
  if (key == "kernel_initializer" || key == "depthwise_initializer" ||
      key == "pointwise_initializer") {
    return is("GlorotUniform", "glorot_uniform");
  }
  if (key == "bias_initializer" || key == "beta_initializer" || key == "moving_mean_initializer") {
    return is("Zeros", "zeros");
  }
  if (key == "gamma_initializer" || key == "moving_variance_initializer") return is("Ones", "ones");
  if (key == "embeddings_initializer") {  // Keras's "uniform": RandomUniform(-0.05, 0.05)
    if (v == "uniform") return true;
    const nlohmann::json c =
        v.is_object() ? v.value("config", nlohmann::json::object()) : nlohmann::json::object();
    return cls == "RandomUniform" && c.value("minval", 0.0) == -0.05 &&
           c.value("maxval", 0.0) == 0.05;
  }
  if (key == "initializer") return is("GlorotUniform", "glorot_uniform");  // PositionEmbedding's
  return false;
}

bool contains(Keys keys, std::string_view key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// Keras's name for an unnamed layer of class `cls`: snake_case ("max_pooling2d"), then "_1",
// "_2"... for later ones (keras.src.utils.naming: to_snake_case and uniquify).
bool is_auto_name(std::string_view name, std::string_view cls) {
  const std::string snake = keras_snake_case(cls);
  if (!name.starts_with(snake)) return false;
  const std::string_view rest = name.substr(snake.size());
  if (rest.empty()) return true;
  return rest.size() >= 2 && rest[0] == '_' &&
         std::all_of(rest.begin() + 1, rest.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

// Keras's merge layers, which MixLab's share the names of.
bool is_keras_merge(std::string_view cls) {
  const std::optional<LayerType> type = parse_layer_type(cls);
  return type && is_merge(*type) && to_string(*type) == cls;
}

class Importer {
 public:
  Importer(std::string_view origin, ImportedModel& out)
      : prefix_(origin.empty() ? std::string() : std::string(origin) + ": "), out_(out) {}

  [[noreturn]] void fail(const std::string& what) const { throw SpecError(prefix_ + what); }
  [[noreturn]] void fail_layer(int index, const KerasLayer& layer, const std::string& what) const {
    throw SpecError(prefix_ + where(index, layer) + ": " + what, index);
  }
  void import(const json& root) {
    if (!root.is_object() || !root.contains("class_name") || !root["class_name"].is_string()) {
      fail("not a Keras model: the JSON has no top-level \"class_name\"");
    }
    keras3_ = root.contains("module");
    check_keys(root, kEnvelopeKeys, "the model");
    const std::string cls = root["class_name"].get<std::string>();
    const json* config = root.contains("config") ? &root["config"] : nullptr;
    if (config == nullptr || !config->is_object()) fail("the model has no \"config\" object");
    if (cls == "Sequential") {
      read_sequential(*config);
    } else if (cls == "Functional" || cls == "Model") {
      read_functional(*config);
    } else {
      fail("a Keras " + quote(cls) + " model: MixLab imports Sequential and functional models");
    }
    if (root.contains("build_config") && root["build_config"].is_object() &&
        root["build_config"].contains("input_shape")) {
      model_shapes_.emplace_back("the model's build_config input_shape",
                                 root["build_config"]["input_shape"]);
    }
    if (root.contains("compile_config")) read_compile_config(root["compile_config"]);
    finish();
  }

 private:
  void check_keys(const json& object, std::initializer_list<std::string_view> known,
                  const std::string& what) const {
    check_keys(object, Keys(known.begin(), known.size()), what);
  }
  void check_keys(const json& object, Keys known, const std::string& what) const {
    for (const auto& [key, value] : object.items()) {
      if (!contains(known, key)) {
        fail(what + " has the field " + quote(key) +
             ", which MixLab does not know (a newer Keras?)");
      }
    }
  }

  void read_sequential(const json& config) {
    check_keys(config, {"name", "trainable", "dtype", "layers", "build_input_shape"},
               "the Sequential model's config");
    read_name(config);
    if (config.contains("dtype")) model_policy_ = read_policy(config["dtype"], "the model", true);
    if (config.contains("build_input_shape")) {
      model_shapes_.emplace_back("build_input_shape", config["build_input_shape"]);
    }
    for (const KerasLayer& layer : layer_list(config, prefix_)) add_layer(layer);
  }

  // A functional model: a graph from its one input to its one output, in an order where each
  // layer follows those it reads. A layer that reads the one before it needs no "inputs" and
  // keeps only a name of its own (as a stack's layers do); any other names what it reads, by
  // their Keras names ("input" for the InputLayer), which those layers then keep.
  void read_functional(const json& config) {
    check_keys(config, {"name", "trainable", "dtype", "layers", "input_layers", "output_layers"},
               "the functional model's config");
    read_name(config);
    if (config.contains("dtype")) model_policy_ = read_policy(config["dtype"], "the model", true);
    const std::vector<KerasLayer> layers = layer_list(config, prefix_);
    const std::vector<KerasNode> graph = functional_graph(config, layers, prefix_);
    // MixLab's names: the input's is "input"; a layer of another class called "input" is renamed.
    std::map<std::string, std::string> names;
    std::set<std::string> taken;
    for (const KerasNode& node : graph) taken.insert(node.layer->name);
    for (const KerasNode& node : graph) {
      std::string name = node.layer->name;
      if (node.layer->class_name == "InputLayer") {
        name = kModelInputName;
      } else if (name == kModelInputName) {
        for (int n = 1; taken.contains(name); ++n) name = "input_layer_" + std::to_string(n);
        taken.insert(name);
        out_.warnings.push_back(where(-1, *node.layer) + " is renamed " + quote(name) +
                                ": MixLab's \"inputs\" call the model's input \"input\"");
      }
      names[node.layer->name] = name;
    }
    std::vector<std::vector<std::string>> inputs(graph.size());  // empty: the layer before
    std::set<std::string> referenced;
    for (std::size_t i = 1; i < graph.size(); ++i) {
      for (const std::string& source : graph[i].inputs) inputs[i].push_back(names.at(source));
      if (inputs[i] == std::vector<std::string>{names.at(graph[i - 1].layer->name)}) {
        inputs[i].clear();
      }
      referenced.insert(inputs[i].begin(), inputs[i].end());
    }
    for (std::size_t i = 0; i < graph.size(); ++i) {
      const std::size_t before = layers_.size();
      add_layer(*graph[i].layer);
      if (layers_.size() == before) continue;  // the InputLayer
      ordered_json& layer = layers_.back();
      const std::string& name = names.at(graph[i].layer->name);
      if (layer.contains("name") || referenced.contains(name)) layer["name"] = name;
      if (!inputs[i].empty()) layer["inputs"] = inputs[i];
    }
  }

  void read_name(const json& config) {
    if (!config.contains("name") || config["name"].is_null()) return;
    if (!config["name"].is_string()) {
      fail("the model's \"name\" " + config["name"].dump() + " is not a string");
    }
    name_ = config["name"].get<std::string>();
  }

  // A layer's input shape with its batch ([null or a batch size, dims...]) as MixLab's dims;
  // nullopt, with why not, when it is not one.
  static std::optional<json> dims_of(const json& shape, std::string& why) {
    const auto whole = [](const json& v) {
      return v.is_number_integer() && v.get<std::int64_t>() >= 1;
    };
    if (!shape.is_array() || shape.size() < 2 || !(shape[0].is_null() || whole(shape[0]))) {
      why = "is not [null, dims...]";
      return std::nullopt;
    }
    json dims = json::array();
    for (std::size_t i = 1; i < shape.size(); ++i) {
      if (!whole(shape[i])) {
        why = "has a dimension that is not a positive whole number";
        return std::nullopt;
      }
      dims.push_back(shape[i]);
    }
    return dims;
  }

  // The input shape a layer gives (`what`: "layer 'x' (InputLayer): batch_shape"). Keras
  // refuses one that is not a shape; the first is the model's, and a later one must agree.
  void read_input_shape(const json& shape, const std::string& what) {
    std::string why;
    const std::optional<json> dims = dims_of(shape, why);
    if (!dims) fail(what + " " + shape.dump() + " " + why);
    if (input_shape_.is_null()) {
      input_shape_ = *dims;
      input_from_ = what + " " + shape.dump();
    } else if (*dims != input_shape_) {
      fail(what + " " + shape.dump() + " contradicts " + input_from_);
    }
  }

  // build_input_shape and the model's build_config: the input when no layer gives one. Keras
  // ignores them otherwise, and ignores one that is not a shape: warnings.
  void read_model_shapes() {
    for (const auto& [what, shape] : model_shapes_) {
      if (shape.is_null()) continue;
      std::string why;
      const std::optional<json> dims = dims_of(shape, why);
      if (!dims) {
        out_.warnings.push_back(what + " " + shape.dump() + " is not a shape (it " + why +
                                "): Keras ignores it, and so does MixLab");
      } else if (input_shape_.is_null()) {
        input_shape_ = *dims;
        input_from_ = what + " " + shape.dump();
      } else if (*dims != input_shape_) {
        out_.warnings.push_back(what + " " + shape.dump() + " disagrees with " + input_from_ +
                                ": Keras builds from the latter, and so does MixLab");
      }
    }
    // Neither: Keras builds the first layer for its own build_config.
    if (input_shape_.is_null() && !build_shapes_.empty() && !build_shapes_[0].first.is_null()) {
      input_shape_ = build_shapes_[0].second;
      input_from_ = "layer 0's build_config input_shape " + build_shapes_[0].first.dump();
    }
  }

  // Each layer's build_config input_shape (what Keras built it for) against the shape it gets:
  // Keras refuses a layer called on another shape than it was built for.
  void check_build_shapes() const {
    if (std::all_of(build_shapes_.begin(), build_shapes_.end(),
                    [](const auto& built) { return built.first.is_null(); })) {
      return;
    }
    ShapeTable table;
    try {
      table = infer_shapes(out_.spec);
    } catch (const SpecError&) {
      return;  // named where the shapes are used
    }
    for (std::size_t i = 0; i < build_shapes_.size() && i < table.layers.size(); ++i) {
      const auto& [built, dims] = build_shapes_[i];
      if (built.is_null() || dims == json(table.layers[i].input_shape)) continue;
      json gets = json::array({nullptr});
      for (const std::int64_t d : table.layers[i].input_shape) gets.push_back(d);
      const KerasLayer layer{out_.keras_classes[i], out_.keras_names[i]};
      fail_layer(static_cast<int>(i), layer,
                 "build_config input_shape " + built.dump() +
                     " is not the shape the layer gets here, " + gets.dump() +
                     " (Keras refuses it too)");
    }
  }

  // A dtype policy: "float32", or {"class_name": "DTypePolicy" | "FloatDTypePolicy" (Keras 3) |
  // "Policy" (tf.keras 2), "config": {"name": "mixed_float16"}}. Returns the policy's name.
  // Keras refuses a layer's policy of another class; it ignores a model's own "dtype", so an
  // unknown class there is a warning and MixLab takes the layers' policies.
  std::string read_policy(const json& value, const std::string& what, bool of_model = false) {
    std::string name;
    if (value.is_null()) return "";
    const json cls = value.is_object() ? value.value("class_name", json()) : json();
    if (value.is_object() && cls == "QuantizedDTypePolicy") {
      // model.quantize("int8") and the like: integer weights MixLab does not train.
      fail(what + ": \"dtype\" of class " + quote(cls.get<std::string>()) +
           " is a layer quantized with model.quantize() to integers; MixLab imports only "
           "float8 quantization (Keras's float8 training): save the model before quantize()");
    }
    if (value.is_object() && cls == "QuantizedFloat8DTypePolicy") return float8_policy(value, what);
    if (value.is_object() &&
        !(cls == "DTypePolicy" || cls == "FloatDTypePolicy" || cls == "Policy")) {
      const std::string problem =
          what + ": \"dtype\" " +
          (cls.is_string() ? "of class " + quote(cls.get<std::string>()) : value.dump()) +
          " is not a Keras dtype policy (DTypePolicy, FloatDTypePolicy, Policy)";
      if (!of_model) fail(problem);
      out_.warnings.push_back(problem + ": Keras ignores a model's own dtype, and so does MixLab");
      return "";
    }
    if (value.is_string()) {
      name = value.get<std::string>();
    } else if (value.is_object() && value.contains("config") && value["config"].is_object() &&
               value["config"].contains("name") && value["config"]["name"].is_string()) {
      name = value["config"]["name"].get<std::string>();
    } else {
      fail(what + ": \"dtype\" " + value.dump() + " is not a dtype policy");
    }
    if (name == "float32" || parse_policy(name)) return name;
    fail(what + ": dtype policy " + quote(name) +
         " is not one MixLab runs (float32, mixed_float16, mixed_bfloat16, or float8-quantized "
         "mixed_bfloat16)");
  }

  // model.quantize("float8")'s policy on a layer: {"mode": "float8", "source_name":
  // "mixed_bfloat16", "amax_history_length": 1024} (Keras 3.12; older ones name it
  // "float8_from_mixed_bfloat16"). MixLab's mixed_float8 is float8 from mixed_bfloat16.
  std::string float8_policy(const json& value, const std::string& what) {
    const json config = value.value("config", json::object());
    std::string source = config.value("source_name", std::string());
    const std::string name = config.value("name", std::string());
    if (source.empty() && name.starts_with("float8_from_")) source = name.substr(12);
    if (config.value("mode", std::string("float8")) != "float8" || source != "mixed_bfloat16") {
      fail(what + ": float8 quantization from " + quote(source.empty() ? "?" : source) +
           ": MixLab's mixed_float8 quantizes a mixed_bfloat16 model (Keras: "
           "set_dtype_policy(\"mixed_bfloat16\") before model.quantize(\"float8\"))");
    }
    const json history = config.value("amax_history_length", json(1024));
    if (history.is_number_integer() && history.get<std::int64_t>() != 1024) {
      const std::string n = std::to_string(history.get<std::int64_t>());
      out_.warnings.push_back(what + ": an amax history of " + n +
                              " steps: a run's history is its setting, give --fp8-history " + n);
    }
    return "mixed_float8";
  }

  // Whether a MixLab layer's JSON is one whose matmuls mixed_float8 runs in FP8 (Dense,
  // MultiHeadAttention, Conv2D): the layers a "bfloat16" opt-out means something for.
  static bool fp8_capable(const ordered_json& layer) {
    const std::string type = layer.value("type", std::string());
    return type == "Dense" || type == "MultiHeadAttention" || type == "Conv2D";
  }

  // An activation given by name ("relu"), or as a serialized function or object.
  std::string activation_name(const json& value, int index, const KerasLayer& layer) const {
    std::string name;
    if (value.is_null()) return "linear";
    if (value.is_string()) {
      name = value.get<std::string>();
    } else if (value.is_object() && value.contains("config") && value["config"].is_string()) {
      name = value["config"].get<std::string>();
    } else if (value.is_object() && value.contains("class_name") &&
               value["class_name"].is_string()) {
      name = value["class_name"].get<std::string>();
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    } else {
      fail_layer(index, layer, "\"activation\" " + value.dump() + " is not an activation");
    }
    if (name == "softmax_v2") name = "softmax";
    const std::optional<ActivationFn> fn = parse_activation(name);
    if (!fn) {
      fail_layer(
          index, layer,
          "activation " + quote(name) + " is not one MixLab has (" + activation_list() + ")");
    }
    return std::string(to_string(*fn));  // Keras's aliases (swish, hard_swish) by their names
  }

  static std::string activation_list() {
    std::string out;
    for (ActivationFn fn : all_activations()) {
      out += (out.empty() ? "" : ", ") + std::string(to_string(fn));
    }
    return out;
  }

  // Warns about an initialiser, regularizer or constraint MixLab does not model.
  void read_kernel_keys(const json& config, int index, const KerasLayer& layer) {
    for (std::string_view key : kKernelKeys) {
      if (!config.contains(key)) continue;
      const json& v = config[std::string(key)];
      if (v.is_null()) continue;
      const std::string cls = v.is_object() ? v.value("class_name", std::string()) : "";
      if (default_initializer(key, v)) continue;
      const bool initializer = key.ends_with("_initializer");
      const std::string shown = v.is_object() && !cls.empty() ? printable(cls) : v.dump();
      out_.warnings.push_back(
          where(index, layer) + ": " + std::string(key) + " " + shown +
          " is not modelled (MixLab " +
          (key == "kernel_initializer" || key == "depthwise_initializer" ||
                   key == "pointwise_initializer"
               ? "starts kernels from glorot_uniform"
           : key == "embeddings_initializer"
               ? "starts an Embedding's table from uniform(-0.05, 0.05)"
           : key == "initializer" ? "starts a PositionEmbedding's table from glorot_uniform"
           : initializer ? "starts biases, beta and moving means at zero, gamma and moving "
                           "variances at one"
                         : "trains without it") +
          ")");
    }
  }

  // A normalization's "axis": Keras 3 writes a list of axes, tf.keras 2 a list of one or a
  // number; one axis is MixLab's (a list of several, or None for every axis at once, is copied
  // as it is and refused by the spec's checks, naming the field).
  void read_axis(const json& config, ordered_json& out) {
    checked_.insert("axis");
    if (!config.contains("axis")) return;
    const json& axis = config["axis"];
    out["axis"] = axis.is_array() && axis.size() == 1 ? axis[0] : axis;
  }

  void add_layer(const KerasLayer& layer) {
    const json& config = *layer.config;
    check_keys(*layer.object, kEnvelopeKeys, where(-1, layer));
    const int index = static_cast<int>(layers_.size());
    for (const char* key : {"batch_input_shape", "batch_shape"}) {
      if (config.contains(key) && !config[key].is_null()) {
        read_input_shape(config[key], where(-1, layer) + ": " + key);
      }
    }
    if (layer.class_name == "InputLayer") {
      check_keys(config,
                 {"name", "dtype", "batch_shape", "batch_input_shape", "sparse", "ragged",
                  "optional", "input_shape"},
                 where(-1, layer) + "'s config");
      for (const char* key : {"sparse", "ragged", "optional"}) {
        if (config.contains(key) && config[key] == true) {
          fail(where(-1, layer) + ": a " + std::string(key) + " input is not supported");
        }
      }
      return;
    }
    ordered_json out;
    std::vector<std::string_view> fields;  // the layer's own config keys, copied as they are
    bool kernel_keys = false;
    const std::string& cls = layer.class_name;
    if (cls == "Dense") {
      out["type"] = "Dense";
      fields = {"units", "use_bias"};
      kernel_keys = true;
    } else if (cls == "Conv2D" || cls == "Convolution2D") {
      out["type"] = "Conv2D";
      fields = {"filters", "kernel_size", "strides", "padding", "use_bias"};
      kernel_keys = true;
      expect_default(config, "dilation_rate", {json(1), json({1, 1})}, index, layer);
      expect_default(config, "groups", {json(1)}, index, layer);
    } else if (cls == "MaxPooling2D" || cls == "MaxPool2D") {
      out["type"] = "MaxPooling2D";
      fields = {"pool_size", "strides", "padding"};
    } else if (cls == "AveragePooling2D" || cls == "AvgPool2D") {
      out["type"] = "AveragePooling2D";
      fields = {"pool_size", "strides", "padding"};
    } else if (cls == "GlobalAveragePooling2D" || cls == "GlobalAvgPool2D") {
      out["type"] = "GlobalAveragePooling2D";
      fields = {"keepdims"};
    } else if (cls == "GlobalMaxPooling2D" || cls == "GlobalMaxPool2D") {
      out["type"] = "GlobalMaxPooling2D";
      fields = {"keepdims"};
    } else if (cls == "GlobalAveragePooling1D" || cls == "GlobalAvgPool1D") {
      out["type"] = "GlobalAveragePooling1D";
      fields = {"keepdims"};
    } else if (cls == "GlobalMaxPooling1D" || cls == "GlobalMaxPool1D") {
      out["type"] = "GlobalMaxPooling1D";
      fields = {"keepdims"};
    } else if (cls == "Flatten") {
      out["type"] = "Flatten";
    } else if (cls == "Dropout") {
      out["type"] = "Dropout";
      fields = {"rate", "noise_shape"};
      checked_.insert("seed");
      if (config.contains("seed") && !config["seed"].is_null()) {
        out_.warnings.push_back(where(index, layer) + ": seed " + config["seed"].dump() +
                                " is not modelled (dropout masks follow the run's seed)");
      }
    } else if (cls == "Activation") {
      out["type"] = "Activation";
    } else if (cls == "ReLU") {
      // At its defaults, an Activation("relu"), as before MixLab had the layer.
      const auto at_default = [&](const char* key, const json& value) {
        return !config.contains(key) || config[key] == value ||
               (value.is_number() && config[key].is_number() && config[key] == 0.0);
      };
      if (at_default("max_value", json()) && at_default("negative_slope", json(0)) &&
          at_default("threshold", json(0))) {
        out["type"] = "Activation";
        out["activation"] = "relu";
        for (const char* key : {"max_value", "negative_slope", "threshold"}) checked_.insert(key);
      } else {
        out["type"] = "ReLU";
        fields = {"max_value", "negative_slope", "threshold"};
      }
    } else if (cls == "LeakyReLU") {
      // Keras 3's negative_slope, tf.keras 2's alpha; 0.3 by default in both.
      out["type"] = "ReLU";
      out["negative_slope"] = 0.3;
      for (const char* key : {"negative_slope", "alpha"}) {
        checked_.insert(key);
        if (config.contains(key)) out["negative_slope"] = config[key];
      }
    } else if (cls == "BatchNormalization") {
      out["type"] = "BatchNormalization";
      fields = {"momentum", "epsilon", "center", "scale"};
      kernel_keys = true;
      read_axis(config, out);
      expect_default(config, "synchronized", {json(false)}, index, layer);
      expect_default(config, "renorm", {json(false)}, index, layer);
      expect_default(config, "virtual_batch_size", {json()}, index, layer);
      expect_default(config, "adjustment", {json()}, index, layer);
      for (const char* key : {"renorm_clipping", "renorm_momentum", "fused"}) checked_.insert(key);
    } else if (cls == "LayerNormalization") {
      out["type"] = "LayerNormalization";
      fields = {"epsilon", "center", "scale"};
      kernel_keys = true;
      read_axis(config, out);
      expect_default(config, "rms_scaling", {json(false)}, index, layer);
    } else if (cls == "Embedding") {
      out["type"] = "Embedding";
      fields = {"input_dim", "output_dim"};
      kernel_keys = true;
      if (config.contains("mask_zero") && config["mask_zero"] == true) {
        fail_layer(index, layer,
                   "mask_zero true is not supported: MixLab has no masks; pad with a token the "
                   "model learns to ignore, or train on sequences of one length");
      }
      checked_.insert("mask_zero");
      checked_.insert("input_length");  // tf.keras 2's, the input's steps
    } else if (cls == "MultiHeadAttention") {
      out["type"] = "MultiHeadAttention";
      fields = {"num_heads", "key_dim", "dropout", "use_bias", "output_shape"};
      kernel_keys = true;
      // Keras writes value_dim as key_dim when it was not given: the default, left out.
      checked_.insert("value_dim");
      if (config.contains("value_dim") && !config["value_dim"].is_null() &&
          config["value_dim"] != config.value("key_dim", json())) {
        out["value_dim"] = config["value_dim"];
      }
      // Over the steps: Keras writes [1] once built on (batch, steps, features).
      expect_default(config, "attention_axes", {json(), json(1), json({1}), json({-2})}, index,
                     layer);
      checked_.insert("seed");
      checked_.insert("flash_attention");
      // A call argument, kept in the layer's inbound node.
      const json& nodes = layer.object->value("inbound_nodes", json::array());
      if (nodes.is_array() && !nodes.empty() && nodes[0].is_object() &&
          nodes[0].value("kwargs", json::object()).is_object()) {
        const json kwargs = nodes[0].value("kwargs", json::object());
        for (const auto& [key, value] : kwargs.items()) {
          if (key == "use_causal_mask") {
            if (!value.is_boolean()) {
              fail_layer(index, layer, "use_causal_mask " + value.dump() + " is not true or false");
            }
            out["use_causal_mask"] = value;
          } else if (key == "query" || key == "value" || key == "key") {
            continue;  // the input, read with the graph
          } else if (!value.is_null() && value != false) {
            fail_layer(index, layer,
                       "the call argument " + quote(key) +
                           " is not supported (MixLab takes use_causal_mask, no masks or "
                           "returned scores)");
          }
        }
      }
    } else if (cls == "PositionEmbedding") {
      // keras_hub's (registered "keras_hub>PositionEmbedding").
      out["type"] = "PositionEmbedding";
      fields = {"sequence_length"};
      kernel_keys = true;
    } else if (cls == "DepthwiseConv2D") {
      out["type"] = "DepthwiseConv2D";
      fields = {"kernel_size", "strides", "padding", "depth_multiplier", "use_bias"};
      kernel_keys = true;
      expect_default(config, "dilation_rate", {json(1), json({1, 1})}, index, layer);
    } else if (cls == "SeparableConv2D" || cls == "SeparableConvolution2D") {
      out["type"] = "SeparableConv2D";
      fields = {"filters", "kernel_size", "strides", "padding", "depth_multiplier", "use_bias"};
      kernel_keys = true;
      expect_default(config, "dilation_rate", {json(1), json({1, 1})}, index, layer);
    } else if (cls == "Reshape") {
      out["type"] = "Reshape";
      fields = {"target_shape"};
    } else if (cls == "ZeroPadding2D") {
      out["type"] = "ZeroPadding2D";
      fields = {"padding"};
    } else if (cls == "Softmax") {
      out["type"] = "Activation";
      out["activation"] = "softmax";
      expect_default(config, "axis", {json(-1), json({-1})}, index, layer);
    } else if (cls == "Rescaling") {
      out["type"] = "Rescaling";
      fields = {"scale", "offset"};
    } else if (cls == "Normalization") {
      out["type"] = "Normalization";
      fields = {"mean", "variance"};
      read_axis(config, out);
      expect_default(config, "invert", {json(false)}, index, layer);
      if (!config.contains("mean") || config["mean"].is_null()) {
        // Adapted: the statistics are the layer's state, in a .keras archive's weights
        // (keras_archive.cpp reads them); a JSON file has none.
        out_.warnings.push_back(where(index, layer) +
                                ": its mean and variance come from adapt(), which a JSON file "
                                "does not hold: mean 0 and variance 1 until a .keras archive's "
                                "weights give them");
      }
    } else if (is_keras_merge(cls)) {
      out["type"] = cls;
      if (cls == "Concatenate") fields = {"axis"};
    } else if (cls == "Lambda") {
      fail_layer(index, layer,
                 "a Lambda layer is Python code and cannot be imported; for the usual x / 255 "
                 "use Rescaling(1/255)");
    } else if (cls == "TokenAndPositionEmbedding") {
      // keras.io's text-classification transformer: a custom class whose saved config has no
      // sizes (it defines no get_config), only Python code.
      fail_layer(index, layer,
                 "keras.io's TokenAndPositionEmbedding is a custom layer (Python code) that a "
                 "Keras file cannot carry; write it with Keras's layers, which MixLab imports "
                 "with their weights: Embedding(vocab_size, embed_dim) on the tokens, "
                 "keras_hub.layers.PositionEmbedding(maxlen) on that, and Add()");
    } else if (cls == "TransformerBlock") {
      fail_layer(index, layer,
                 "keras.io's TransformerBlock is a custom layer (Python code) that a Keras file "
                 "cannot carry; write it with Keras's layers, which MixLab imports with their "
                 "weights: MultiHeadAttention(num_heads, key_dim=embed_dim)(x, x), Dropout, "
                 "Add, LayerNormalization(epsilon=1e-6), Dense(ff_dim, relu), Dense(embed_dim), "
                 "Dropout, Add, LayerNormalization(epsilon=1e-6)");
    } else {
      fail_layer(
          index, layer,
          "MixLab has no " + printable(cls) +
              " layer (it imports InputLayer, Dense, Conv2D, DepthwiseConv2D, SeparableConv2D, "
              "MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D, "
              "GlobalAveragePooling1D, GlobalMaxPooling1D, ZeroPadding2D, BatchNormalization, "
              "LayerNormalization, Embedding, MultiHeadAttention, keras_hub's PositionEmbedding, "
              "Flatten, Reshape, "
              "Dropout, "
              "Activation, ReLU, LeakyReLU, Softmax, Rescaling, Normalization, Add, Subtract, "
              "Multiply, "
              "Average, Maximum, Concatenate)");
    }
    // Every config key must be known: a layer field, a Keras base key, or one checked above.
    for (const auto& [key, value] : config.items()) {
      const bool known = contains(kLayerBaseKeys, key) ||
                         std::find(fields.begin(), fields.end(), key) != fields.end() ||
                         (kernel_keys && contains(kKernelKeys, key)) || key == "activation" ||
                         key == "data_format" || key == "batch_shape" || checked_.contains(key);
      if (!known) {
        fail_layer(
            index, layer,
            "field " + quote(key) + " is not one MixLab knows for this layer (a newer Keras?)");
      }
    }
    checked_.clear();
    if (config.contains("data_format") && !config["data_format"].is_null() &&
        config["data_format"] != "channels_last") {
      fail_layer(index, layer,
                 "data_format " + config["data_format"].dump() +
                     ": MixLab runs channels_last (NHWC) only");
    }
    read_trainable(config, index, layer);
    read_build_config(index, layer);
    if (!layer.name.empty() && !is_auto_name(layer.name, cls)) out["name"] = layer.name;
    for (std::string_view key : fields) {
      if (!config.contains(key)) continue;
      const json& v = config[std::string(key)];
      if (key == "strides" && v.is_null()) continue;  // pooling: strides = pool_size
      out[std::string(key)] = v;
    }
    if (config.contains("activation")) {
      const std::string name = activation_name(config["activation"], index, layer);
      if (cls == "Activation" || name != "linear") out["activation"] = name;
    } else if (cls == "Activation") {
      fail_layer(index, layer, "no \"activation\"");
    }
    if (kernel_keys) read_kernel_keys(config, index, layer);
    layer_policies_.push_back(config.contains("dtype")
                                  ? read_policy(config["dtype"], where(index, layer))
                                  : std::string());
    dtype_is_text_.push_back(config.contains("dtype") && config["dtype"].is_string());
    layers_.push_back(std::move(out));
    out_.keras_names.push_back(layer.name);
    out_.keras_classes.push_back(layer.class_name);
  }

  // Keras 3 keeps a "trainable" of any type and tests it as Python does ("ten" trains, 0 and
  // null freeze the layer); MixLab trains every layer: a warning unless it is true.
  void read_trainable(const json& config, int index, const KerasLayer& layer) {
    if (!config.contains("trainable") || config["trainable"] == true) return;
    const json& t = config["trainable"];
    if (t == false) {
      out_.warnings.push_back(where(index, layer) +
                              ": trainable false is not modelled (MixLab trains every layer)");
      return;
    }
    const bool truthy = !(t.is_null() || t == 0 || (t.is_string() && t.empty()) ||
                          ((t.is_array() || t.is_object()) && t.empty()));
    out_.warnings.push_back(where(index, layer) + ": trainable " + t.dump() +
                            " is not true or false (Keras takes it as " +
                            (truthy ? "true)" : "false): MixLab trains every layer"));
  }

  // The envelope's build_config: {"input_shape": [null, dims...]}, the shape Keras built the
  // layer for (checked against the one it gets once the model is read).
  void read_build_config(int index, const KerasLayer& layer) {
    std::pair<json, json> built;
    // A merge's is a list of its inputs' shapes, which shape inference checks against each other.
    if (is_keras_merge(layer.class_name)) {
      build_shapes_.push_back(std::move(built));
      return;
    }
    if (layer.object->contains("build_config")) {
      const json& config = (*layer.object)["build_config"];
      if (!config.is_object()) {
        fail_layer(index, layer, "build_config " + config.dump() + " is not an object");
      }
      if (config.contains("input_shape")) {
        std::string why;
        const std::optional<json> dims = dims_of(config["input_shape"], why);
        if (!dims) {
          fail_layer(index, layer,
                     "build_config input_shape " + config["input_shape"].dump() + " " + why);
        }
        built = {config["input_shape"], *dims};
      }
    }
    build_shapes_.push_back(std::move(built));
  }

  // A Keras field MixLab can only take at its default value.
  void expect_default(const json& config, const char* key, std::initializer_list<json> allowed,
                      int index, const KerasLayer& layer) {
    checked_.insert(key);
    if (!config.contains(key)) return;
    const json& v = config[key];
    for (const json& a : allowed) {
      if (v == a) return;
    }
    fail_layer(index, layer,
               std::string(key) + " " + v.dump() + " is not supported (only " +
                   allowed.begin()->dump() + ")");
  }

  void read_compile_config(const json& compile) {
    // Only the loss is the model's; the optimizer and metrics are run settings, chosen in MixLab.
    if (!compile.is_object() || !compile.contains("loss")) return;
    const json& loss = compile["loss"];
    std::string name = loss.is_string()   ? loss.get<std::string>()
                       : loss.is_object() ? loss.value("class_name", std::string())
                                          : std::string();
    // "SparseCategoricalCrossentropy" -> "sparse_categorical_crossentropy"
    std::string snake;
    for (char c : name) {
      if (std::isupper(static_cast<unsigned char>(c))) {
        if (!snake.empty()) snake += '_';
        snake += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      } else {
        snake += c;
      }
    }
    if (parse_loss(snake)) {
      loss_ = snake;
    } else if (!loss.is_null()) {
      out_.warnings.push_back("the compiled loss " + loss.dump() +
                              " is not one MixLab has: the model trains with "
                              "sparse_categorical_crossentropy");
    }
  }

  void finish() {
    read_model_shapes();
    if (input_shape_.is_null()) {
      fail(
          "the model has no input shape (no InputLayer, batch_input_shape or "
          "build_input_shape): give it an Input or build it before saving");
    }
    if (layers_.empty()) fail("the model has no layers besides its input");
    // The model's policy: its own "dtype", else the first mixed policy of its layers, else the
    // first they name.
    std::string policy = model_policy_;
    for (std::size_t i = 0; i < layer_policies_.size() && (policy.empty() || policy == "float32");
         ++i) {
      if (layer_policies_[i].starts_with("mixed_") || policy.empty()) policy = layer_policies_[i];
    }
    // A model with float8-quantized layers (model.quantize("float8") on a mixed_bfloat16 model,
    // or on some of its layers) is mixed_float8; its unquantized mixed_bfloat16 layers stay out
    // of FP8, as Keras leaves them.
    const bool float8 = std::find(layer_policies_.begin(), layer_policies_.end(), "mixed_float8") !=
                        layer_policies_.end();
    if (float8) {
      policy = "mixed_float8";
      for (std::size_t i = 0; i < layer_policies_.size(); ++i) {
        if (layer_policies_[i] != "mixed_bfloat16") continue;
        layer_policies_[i] = "mixed_float8";
        if (fp8_capable(layers_[i])) layers_[i]["dtype"] = "bfloat16";
      }
      out_.warnings.push_back(
          "float8-quantized layers: their FP8 scales and amax histories are not imported; a "
          "MixLab run starts them afresh (scale 1, an empty history), as model.quantize() does");
    }
    for (std::size_t i = 0; i < layer_policies_.size(); ++i) {
      const std::string& p = layer_policies_[i];
      if (p.starts_with("mixed_") && policy.starts_with("mixed_") && p != policy) {
        fail("layer " + std::to_string(i) + " runs " + p + " but the model " + policy +
             ": MixLab runs one mixed policy per model");
      }
      if (p == "float32" && policy.starts_with("mixed_")) layers_[i]["dtype"] = "float32";
    }
    // Under float32 a layer's own "float32" shows only as a plain string among policy objects
    // (export_keras_json writes it so; Keras 3 writes every other layer's policy as an object).
    const bool any_object =
        std::find(dtype_is_text_.begin(), dtype_is_text_.end(), false) != dtype_is_text_.end();
    for (std::size_t i = 0; i < layer_policies_.size() && !policy.starts_with("mixed_"); ++i) {
      if (any_object && dtype_is_text_[i] && layer_policies_[i] == "float32") {
        layers_[i]["dtype"] = "float32";
      }
    }
    if (!policy.empty()) out_.policy = parse_policy(policy);
    ordered_json model;
    model["name"] = name_.empty() ? "model" : name_;
    model["input"] = {{"shape", input_shape_}};
    if (!loss_.empty()) model["loss"] = loss_;
    model["layers"] = layers_;
    out_.spec = parse_model_json(
        model.dump(), prefix_.empty() ? std::string_view()
                                      : std::string_view(prefix_).substr(0, prefix_.size() - 2));
    // The graph's rules (a merge's input count, unique names) as Keras has them too: a model
    // that breaks one is refused here, naming the layer, rather than wherever it is used.
    try {
      resolve_graph(out_.spec);
    } catch (const SpecError& e) {
      throw SpecError(prefix_ + e.what(), e.layer());
    }
    check_build_shapes();
    out_.format = keras3_ ? "Keras 3 JSON" : "tf.keras 2 JSON";
  }

  std::string prefix_;
  ImportedModel& out_;
  bool keras3_ = false;
  std::string name_;
  json input_shape_;
  std::string input_from_;  // what gave it: "layer 'input' (InputLayer): batch_shape [null,4]"
  // build_input_shape and the model's build_config input_shape: (what, the shape as written)
  std::vector<std::pair<std::string, json>> model_shapes_;
  // per layer: its build_config input_shape as written and as dims (both null when none)
  std::vector<std::pair<json, json>> build_shapes_;
  std::string model_policy_;
  std::string loss_;
  std::vector<ordered_json> layers_;
  std::vector<std::string> layer_policies_;
  std::vector<bool> dtype_is_text_;  // the layer's "dtype" is a string, not a policy object
  std::set<std::string, std::less<>> checked_;
};

}  // namespace

std::string keras_snake_case(std::string_view cls) {
  // re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name), then re.sub("([a-z])([A-Z])", r"\1_\2", ...)
  std::string snake;
  for (std::size_t i = 0; i < cls.size(); ++i) {
    const auto c = static_cast<unsigned char>(cls[i]);
    const bool next_lower =
        i + 1 < cls.size() && std::islower(static_cast<unsigned char>(cls[i + 1])) != 0;
    if (std::isupper(c) != 0 && i > 0 &&
        (next_lower || std::islower(static_cast<unsigned char>(cls[i - 1])) != 0)) {
      snake += '_';
    }
    snake += static_cast<char>(std::tolower(c));
  }
  return snake;
}

bool is_keras_json(std::string_view text) {
  // MixLab's own files never have "class_name" at the top level, Keras's always do. Text that
  // does not parse (within the depth bound) is left to the real reader to report.
  try {
    const json root = parse_json_text(text, {});
    return root.is_object() && root.contains("class_name");
  } catch (const Error&) {
    return false;
  }
}

ImportedModel import_keras_json(std::string_view text, std::string_view origin) {
  const std::string prefix = origin.empty() ? std::string() : std::string(origin) + ": ";
  const json root = parse_json_text(text, prefix);
  ImportedModel out;
  Importer(origin, out).import(root);
  return out;
}

}  // namespace mixlab
