#include "engine/spec/model_spec.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <unordered_set>

#include "engine/core/error.h"
#include "engine/core/text_file.h"
#include "engine/spec/json_text.h"
#include "engine/spec/layer_checks.h"

namespace mixlab {
namespace {

using json = nlohmann::json;
using spec_detail::kMaxFieldValue;

using spec_detail::kDefaultModelName;

constexpr std::array kLayerTypes = {
    LayerType::Dense,
    LayerType::Conv2D,
    LayerType::MaxPooling2D,
    LayerType::AveragePooling2D,
    LayerType::Flatten,
    LayerType::Dropout,
    LayerType::Activation,
    LayerType::Rescaling,
    LayerType::Add,
    LayerType::Subtract,
    LayerType::Multiply,
    LayerType::Average,
    LayerType::Maximum,
    LayerType::Concatenate,
    LayerType::GlobalAveragePooling2D,
    LayerType::GlobalMaxPooling2D,
    LayerType::GlobalAveragePooling1D,
    LayerType::GlobalMaxPooling1D,
    LayerType::ReLU,
    LayerType::BatchNormalization,
    LayerType::ZeroPadding2D,
    LayerType::DepthwiseConv2D,
    LayerType::Reshape,
    LayerType::SeparableConv2D,
    LayerType::Normalization,
    LayerType::Embedding,
    LayerType::LayerNormalization,
    LayerType::PositionEmbedding,
    LayerType::MultiHeadAttention,
};
constexpr std::array kActivations = {
    ActivationFn::relu,      ActivationFn::sigmoid, ActivationFn::tanh,  ActivationFn::gelu,
    ActivationFn::softmax,   ActivationFn::linear,  ActivationFn::silu,  ActivationFn::hard_sigmoid,
    ActivationFn::hard_silu, ActivationFn::elu,     ActivationFn::relu6, ActivationFn::leaky_relu,
};
constexpr std::array kPaddings = {Padding::valid, Padding::same};
constexpr std::array kLosses = {
    LossKind::sparse_categorical_crossentropy,
    LossKind::categorical_crossentropy,
    LossKind::binary_crossentropy,
};

constexpr std::array<std::string_view, 4> kTopLevelKeys = {"name", "input", "loss", "layers"};
constexpr std::array<std::string_view, 4> kCommonFields = {"type", "name", "inputs", "dtype"};

// The fields a layer type takes besides type, name and dtype (Keras's names).
std::span<const std::string_view> type_fields(LayerType type) {
  static constexpr std::array<std::string_view, 3> dense = {"units", "activation", "use_bias"};
  static constexpr std::array<std::string_view, 6> conv = {"filters", "kernel_size", "strides",
                                                           "padding", "activation",  "use_bias"};
  static constexpr std::array<std::string_view, 3> pool = {"pool_size", "strides", "padding"};
  static constexpr std::array<std::string_view, 2> dropout = {"rate", "noise_shape"};
  static constexpr std::array<std::string_view, 1> activation = {"activation"};
  static constexpr std::array<std::string_view, 2> rescaling = {"scale", "offset"};
  static constexpr std::array<std::string_view, 1> concatenate = {"axis"};
  static constexpr std::array<std::string_view, 1> global_pool = {"keepdims"};
  static constexpr std::array<std::string_view, 3> relu = {"max_value", "negative_slope",
                                                           "threshold"};
  static constexpr std::array<std::string_view, 5> batch_norm = {"axis", "momentum", "epsilon",
                                                                 "center", "scale"};
  static constexpr std::array<std::string_view, 4> layer_norm = {"axis", "epsilon", "center",
                                                                 "scale"};
  static constexpr std::array<std::string_view, 2> embedding = {"input_dim", "output_dim"};
  static constexpr std::array<std::string_view, 1> position = {"sequence_length"};
  static constexpr std::array<std::string_view, 7> attention = {
      "num_heads", "key_dim",      "value_dim",      "dropout",
      "use_bias",  "output_shape", "use_causal_mask"};
  static constexpr std::array<std::string_view, 1> zero_padding = {"padding"};
  static constexpr std::array<std::string_view, 1> reshape = {"target_shape"};
  static constexpr std::array<std::string_view, 3> normalization = {"axis", "mean", "variance"};
  static constexpr std::array<std::string_view, 7> separable = {
      "filters", "kernel_size", "strides", "padding", "depth_multiplier", "activation", "use_bias"};
  static constexpr std::array<std::string_view, 6> depthwise = {
      "kernel_size", "strides", "padding", "depth_multiplier", "activation", "use_bias"};
  switch (type) {
    case LayerType::Dense:
      return dense;
    case LayerType::Conv2D:
      return conv;
    case LayerType::MaxPooling2D:
    case LayerType::AveragePooling2D:
      return pool;
    case LayerType::Flatten:
      return {};
    case LayerType::Dropout:
      return dropout;
    case LayerType::Activation:
      return activation;
    case LayerType::Rescaling:
      return rescaling;
    case LayerType::Add:
    case LayerType::Subtract:
    case LayerType::Multiply:
    case LayerType::Average:
    case LayerType::Maximum:
      return {};
    case LayerType::Concatenate:
      return concatenate;
    case LayerType::GlobalAveragePooling2D:
    case LayerType::GlobalMaxPooling2D:
    case LayerType::GlobalAveragePooling1D:
    case LayerType::GlobalMaxPooling1D:
      return global_pool;
    case LayerType::ReLU:
      return relu;
    case LayerType::BatchNormalization:
      return batch_norm;
    case LayerType::ZeroPadding2D:
      return zero_padding;
    case LayerType::DepthwiseConv2D:
      return depthwise;
    case LayerType::Reshape:
      return reshape;
    case LayerType::SeparableConv2D:
      return separable;
    case LayerType::Normalization:
      return normalization;
    case LayerType::Embedding:
      return embedding;
    case LayerType::LayerNormalization:
      return layer_norm;
    case LayerType::PositionEmbedding:
      return position;
    case LayerType::MultiHeadAttention:
      return attention;
  }
  return {};
}

template <typename Range, typename ToText>
std::string join(const Range& range, ToText to_text) {
  std::string out;
  for (const auto& item : range) {
    if (!out.empty()) out += ", ";
    out += to_text(item);
  }
  return out;
}

template <typename Enum, std::size_t N>
std::optional<Enum> parse_enum(std::string_view name, const std::array<Enum, N>& values) {
  for (Enum value : values) {
    if (name == to_string(value)) return value;
  }
  return std::nullopt;
}

// What a JSON value is, for "must be X, got Y": numbers and short arrays by value, the rest by
// type ("string", "boolean", "null", "object").
std::string describe(const json& value) {
  if (value.is_number()) return value.dump();
  if (value.is_array()) {
    std::string text = value.dump();
    if (text.size() <= 40) return "array " + text;
    return "array of " + std::to_string(value.size()) + " elements";
  }
  return value.type_name();
}

enum class IntRead { ok, not_integer, out_of_range };

// Reads a whole number in [1, kMaxFieldValue]. A float with a whole value (16.0) counts as the
// integer it equals; 2.5, booleans and strings do not.
IntRead read_positive_int(const json& value, std::int64_t& out) {
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u < 1 || u > static_cast<std::uint64_t>(kMaxFieldValue)) return IntRead::out_of_range;
    out = static_cast<std::int64_t>(u);
    return IntRead::ok;
  }
  if (value.is_number_integer()) {
    const auto i = value.get<std::int64_t>();
    if (i < 1 || i > kMaxFieldValue) return IntRead::out_of_range;
    out = i;
    return IntRead::ok;
  }
  if (value.is_number_float()) {
    const auto d = value.get<double>();  // finite: the JSON parser rejects overflow
    if (std::trunc(d) != d) return IntRead::not_integer;
    if (d < 1 || d > kMaxFieldValue) return IntRead::out_of_range;
    out = static_cast<std::int64_t>(d);
    return IntRead::ok;
  }
  return IntRead::not_integer;
}

// Reads the fields of one JSON object. `where` prefixes every message ("x.json: layer 2 (Dense): "
// or "x.json: input: "); `noun` is "field" for layers and "key" at the top level.
class ObjectReader {
 public:
  ObjectReader(const json& object, std::string where, std::string_view noun)
      : object_(object), where_(std::move(where)), noun_(noun) {}

  [[noreturn]] void fail(const std::string& message) const { throw SpecError(where_ + message); }
  [[noreturn]] void fail_type(std::string_view key, std::string_view expected,
                              const json& got) const {
    fail(std::string(noun_) + " " + quote(key) + " must be " + std::string(expected) + ", got " +
         describe(got));
  }

  const json* find(std::string_view key) const {
    auto it = object_.find(std::string(key));
    return it == object_.end() ? nullptr : &*it;
  }
  const json& require(std::string_view key) const {
    const json* value = find(key);
    if (value == nullptr) fail("missing required " + std::string(noun_) + " " + quote(key));
    return *value;
  }

  // Rejects any key not in `allowed`, listing what `owner` takes.
  void check_keys(std::span<const std::string_view> allowed, std::string_view owner) const {
    for (const auto& [key, value] : object_.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        fail("unknown " + std::string(noun_) + " " + quote(key) + " (" + std::string(owner) +
             " takes " + join(allowed, [](std::string_view s) { return std::string(s); }) + ")");
      }
    }
  }

  std::string get_string(std::string_view key, const json& value) const {
    if (!value.is_string()) fail_type(key, "a string", value);
    return value.get<std::string>();
  }
  // A name shown in tables and terminals: no control characters (an ESC would drive the
  // terminal that prints it).
  std::string get_name(std::string_view key, const json& value) const {
    std::string text = get_string(key, value);
    for (const char c : text) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 || byte == 0x7F) {
        char code[8];
        std::snprintf(code, sizeof code, "0x%02X", byte);
        fail(std::string(key) + " contains the control character " + code +
             "; names are printable text");
      }
    }
    return text;
  }

  int get_positive_int(std::string_view key, const json& value) const {
    std::int64_t out = 0;
    switch (read_positive_int(value, out)) {
      case IntRead::ok:
        return static_cast<int>(out);
      case IntRead::not_integer:
        fail_type(key, "an integer", value);
      case IntRead::out_of_range:
        fail(std::string(key) + " " + value.dump() + " is out of range [1, " +
             std::to_string(kMaxFieldValue) + "]");
    }
    return 0;
  }

  // A whole number of either sign that fits an int (Concatenate's axis).
  int get_int(std::string_view key, const json& value) const {
    const bool whole =
        value.is_number_integer() ||
        (value.is_number_float() && std::trunc(value.get<double>()) == value.get<double>());
    if (!whole) fail_type(key, "an integer", value);
    const double d = value.get<double>();
    if (d < -1e6 || d > 1e6) fail(std::string(key) + " " + value.dump() + " is out of range");
    return static_cast<int>(d);
  }

  // A list of layer names ("inputs"): an array of one or more names.
  std::vector<std::string> get_names(std::string_view key, const json& value) const {
    if (!value.is_array() || value.empty()) fail_type(key, "an array of layer names", value);
    std::vector<std::string> names;
    for (const json& item : value) {
      if (!item.is_string()) fail_type(key, "an array of layer names", value);
      names.push_back(get_name(key, item));
    }
    return names;
  }

  double get_number(std::string_view key, const json& value) const {
    if (!value.is_number()) fail_type(key, "a number", value);
    return value.get<double>();
  }

  bool get_bool(std::string_view key, const json& value) const {
    if (!value.is_boolean()) fail_type(key, "true or false", value);
    return value.get<bool>();
  }

  // ZeroPadding2D's padding: n (all four), [h, w] (top and bottom h, left and right w) or
  // [[top, bottom], [left, right]], each >= 0.
  Pad2D get_pad2d(std::string_view key, const json& value) const {
    const char* expected = "an integer, [h, w] or [[top, bottom], [left, right]]";
    const auto count = [&](const json& v) {
      if (!v.is_number()) fail_type(key, expected, value);
      const int n = get_int(key, v);
      if (n < 0 || n > kMaxFieldValue) {
        fail(std::string(key) + " " + value.dump() + " is out of range [0, " +
             std::to_string(kMaxFieldValue) + "]");
      }
      return n;
    };
    if (value.is_number()) {
      const int n = count(value);
      return {n, n, n, n};
    }
    if (!value.is_array() || value.size() != 2) fail_type(key, expected, value);
    if (value[0].is_array() && value[1].is_array()) {
      if (value[0].size() != 2 || value[1].size() != 2) fail_type(key, expected, value);
      return {count(value[0][0]), count(value[0][1]), count(value[1][0]), count(value[1][1])};
    }
    const int h = count(value[0]), w = count(value[1]);
    return {h, h, w, w};
  }

  // An integer n (meaning n x n) or [h, w].
  Size2 get_size2(std::string_view key, const json& value) const {
    if (value.is_array()) {
      if (value.size() != 2 || !value[0].is_number() || !value[1].is_number()) {
        fail_type(key, "an integer or [h, w]", value);
      }
      return {get_positive_int(key, value[0]), get_positive_int(key, value[1])};
    }
    if (!value.is_number()) fail_type(key, "an integer or [h, w]", value);
    const int n = get_positive_int(key, value);
    return {n, n};
  }

  template <typename Enum, std::size_t N>
  Enum get_enum(std::string_view key, const json& value, const std::array<Enum, N>& values) const {
    const std::string name = get_string(key, value);
    if (auto parsed = parse_enum(name, values)) return *parsed;
    fail(std::string(key) + " " + quote(name) + " is not one of " +
         join(values, [](Enum e) { return std::string(to_string(e)); }));
  }

 private:
  const json& object_;
  std::string where_;
  std::string_view noun_;
};

LayerSpec parse_layer(const json& value, int index, const std::string& origin_prefix) {
  const std::string anonymous = origin_prefix + "layer " + std::to_string(index) + ": ";
  if (!value.is_object()) {
    throw SpecError(anonymous + "must be an object, got " + describe(value));
  }
  LayerSpec layer;
  {
    const ObjectReader untyped(value, anonymous, "field");
    const std::string type_name = untyped.get_string("type", untyped.require("type"));
    const auto type = parse_layer_type(type_name);
    if (!type) {
      untyped.fail("unknown layer type " + quote(type_name) + " (known: " +
                   join(kLayerTypes, [](LayerType t) { return std::string(to_string(t)); }) + ")");
    }
    layer.type = *type;
  }

  const ObjectReader in(value, origin_prefix + spec_detail::layer_prefix(index, layer.type),
                        "field");
  std::vector<std::string_view> allowed(kCommonFields.begin(), kCommonFields.end());
  const auto fields = type_fields(layer.type);
  allowed.insert(allowed.begin() + 1, fields.begin(), fields.end());
  in.check_keys(allowed, to_string(layer.type));

  if (const json* v = in.find("name")) layer.name = in.get_name("name", *v);
  if (const json* v = in.find("inputs")) layer.inputs = in.get_names("inputs", *v);
  if (const json* v = in.find("dtype")) {
    const std::string dtype = in.get_string("dtype", *v);
    if (dtype == "float32") {
      layer.force_float32 = true;
    } else if (dtype == "bfloat16" || dtype == "mixed_bfloat16") {
      layer.force_bfloat16 = true;
    } else {
      in.fail("dtype " + quote(dtype) +
              " is not supported: a layer's dtype is \"float32\" (kept in float32 under a "
              "mixed policy) or \"bfloat16\" (kept out of FP8 under mixed_float8)");
    }
  }

  switch (layer.type) {
    case LayerType::Dense:
      layer.units = in.get_positive_int("units", in.require("units"));
      break;
    case LayerType::Conv2D:
      layer.filters = in.get_positive_int("filters", in.require("filters"));
      layer.kernel_size = in.get_size2("kernel_size", in.require("kernel_size"));
      if (const json* v = in.find("strides")) layer.strides = in.get_size2("strides", *v);
      break;
    case LayerType::MaxPooling2D:
    case LayerType::AveragePooling2D:
      if (const json* v = in.find("pool_size")) layer.pool_size = in.get_size2("pool_size", *v);
      layer.strides = layer.pool_size;  // Keras: strides=None means pool_size
      if (const json* v = in.find("strides"); v != nullptr && !v->is_null()) {
        layer.strides = in.get_size2("strides", *v);
      }
      break;
    case LayerType::Dropout:
      layer.rate = in.get_number("rate", in.require("rate"));
      if (const json* v = in.find("noise_shape"); v != nullptr && !v->is_null()) {
        if (!v->is_array() || v->empty() || v->size() > 4) {
          in.fail_type("noise_shape", "null or an array of 2 to 4 sizes or nulls", *v);
        }
        for (const json& d : *v) {
          if (!d.is_null() && !d.is_number()) {
            in.fail_type("noise_shape", "null or an array of 2 to 4 sizes or nulls", *v);
          }
          layer.noise_shape.push_back(d.is_null() ? -1 : in.get_int("noise_shape", d));
        }
      }
      break;
    case LayerType::Activation:
      layer.activation = in.get_enum("activation", in.require("activation"), kActivations);
      break;
    case LayerType::Rescaling:
      layer.scale = in.get_number("scale", in.require("scale"));
      if (const json* v = in.find("offset")) layer.offset = in.get_number("offset", *v);
      break;
    case LayerType::Concatenate:
      if (const json* v = in.find("axis")) layer.axis = in.get_int("axis", *v);
      break;
    case LayerType::GlobalAveragePooling2D:
    case LayerType::GlobalMaxPooling2D:
    case LayerType::GlobalAveragePooling1D:
    case LayerType::GlobalMaxPooling1D:
      if (const json* v = in.find("keepdims")) layer.keepdims = in.get_bool("keepdims", *v);
      break;
    case LayerType::ReLU:
      if (const json* v = in.find("max_value"); v != nullptr && !v->is_null()) {
        layer.max_value = in.get_number("max_value", *v);
      }
      if (const json* v = in.find("negative_slope")) {
        layer.negative_slope = in.get_number("negative_slope", *v);
      }
      if (const json* v = in.find("threshold")) layer.threshold = in.get_number("threshold", *v);
      break;
    case LayerType::BatchNormalization:
      if (const json* v = in.find("momentum")) layer.momentum = in.get_number("momentum", *v);
      [[fallthrough]];  // the fields LayerNormalization has too
    case LayerType::LayerNormalization:
      if (const json* v = in.find("axis")) layer.axis = in.get_int("axis", *v);
      if (const json* v = in.find("epsilon")) layer.epsilon = in.get_number("epsilon", *v);
      if (const json* v = in.find("center")) layer.center = in.get_bool("center", *v);
      if (const json* v = in.find("scale")) layer.scale_gamma = in.get_bool("scale", *v);
      break;
    case LayerType::ZeroPadding2D:
      if (const json* v = in.find("padding")) layer.zero_padding = in.get_pad2d("padding", *v);
      break;
    case LayerType::Embedding:
      layer.input_dim = in.get_positive_int("input_dim", in.require("input_dim"));
      layer.output_dim = in.get_positive_int("output_dim", in.require("output_dim"));
      break;
    case LayerType::PositionEmbedding:
      layer.sequence_length = in.get_positive_int("sequence_length", in.require("sequence_length"));
      break;
    case LayerType::MultiHeadAttention:
      layer.num_heads = in.get_positive_int("num_heads", in.require("num_heads"));
      layer.key_dim = in.get_positive_int("key_dim", in.require("key_dim"));
      if (const json* v = in.find("value_dim"); v != nullptr && !v->is_null()) {
        layer.value_dim = in.get_positive_int("value_dim", *v);
      }
      if (const json* v = in.find("dropout"))
        layer.attention_dropout = in.get_number("dropout", *v);
      if (const json* v = in.find("output_shape"); v != nullptr && !v->is_null()) {
        // Keras takes a number or a list of one (the last axis's size).
        const json& size = v->is_array() && v->size() == 1 ? (*v)[0] : *v;
        layer.output_dim = in.get_positive_int("output_shape", size);
      }
      if (const json* v = in.find("use_causal_mask")) {
        layer.causal = in.get_bool("use_causal_mask", *v);
      }
      if (const json* v = in.find("use_bias")) layer.use_bias = in.get_bool("use_bias", *v);
      break;
    case LayerType::DepthwiseConv2D:
    case LayerType::SeparableConv2D:
      if (layer.type == LayerType::SeparableConv2D) {
        layer.filters = in.get_positive_int("filters", in.require("filters"));
      }
      layer.kernel_size = in.get_size2("kernel_size", in.require("kernel_size"));
      if (const json* v = in.find("strides")) layer.strides = in.get_size2("strides", *v);
      if (const json* v = in.find("depth_multiplier")) {
        layer.depth_multiplier = in.get_positive_int("depth_multiplier", *v);
      }
      break;
    case LayerType::Normalization:
      if (const json* v = in.find("axis")) layer.axis = in.get_int("axis", *v);
      // A number for every channel, or an array of one per channel (null: none, as Keras).
      for (auto [field, values] :
           {std::pair{"mean", &layer.mean}, std::pair{"variance", &layer.variance}}) {
        const json* v = in.find(field);
        if (v == nullptr || v->is_null()) continue;
        if (v->is_number()) {
          values->push_back(in.get_number(field, *v));
          continue;
        }
        if (!v->is_array() || v->empty())
          in.fail_type(field, "a number or an array of numbers", *v);
        for (const json& e : *v) {
          if (!e.is_number()) in.fail_type(field, "a number or an array of numbers", *v);
          values->push_back(in.get_number(field, e));
        }
      }
      break;
    case LayerType::Reshape: {
      const json& target = in.require("target_shape");
      if (!target.is_array() || target.empty() || target.size() > 3) {
        in.fail_type("target_shape", "an array of 1 to 3 sizes", target);
      }
      for (const json& d : target) {
        if (!d.is_number()) in.fail_type("target_shape", "an array of 1 to 3 sizes", target);
        layer.target_shape.push_back(in.get_int("target_shape", d));
      }
      break;
    }
    case LayerType::Flatten:
    case LayerType::Add:
    case LayerType::Subtract:
    case LayerType::Multiply:
    case LayerType::Average:
    case LayerType::Maximum:
      break;
  }
  if (layer.type == LayerType::Dense || layer.type == LayerType::Conv2D ||
      layer.type == LayerType::DepthwiseConv2D || layer.type == LayerType::SeparableConv2D) {
    if (const json* v = in.find("activation")) {
      layer.activation = in.get_enum("activation", *v, kActivations);
    }
    if (const json* v = in.find("use_bias")) layer.use_bias = in.get_bool("use_bias", *v);
  }
  if (layer.type == LayerType::Conv2D || layer.type == LayerType::DepthwiseConv2D ||
      layer.type == LayerType::SeparableConv2D || layer.type == LayerType::MaxPooling2D ||
      layer.type == LayerType::AveragePooling2D) {
    if (const json* v = in.find("padding")) layer.padding = in.get_enum("padding", *v, kPaddings);
  }
  spec_detail::check_layer_values(layer, index, origin_prefix);
  return layer;
}

std::vector<std::int64_t> parse_input(const json& value, const std::string& origin_prefix) {
  if (!value.is_object()) {
    throw SpecError(origin_prefix + "key 'input' must be an object {\"shape\": [...]}, got " +
                    describe(value));
  }
  const ObjectReader in(value, origin_prefix + "input: ", "key");
  static constexpr std::array<std::string_view, 1> keys = {"shape"};
  in.check_keys(keys, "input");
  const json& shape = in.require("shape");
  if (!shape.is_array() || shape.empty() || shape.size() > 3) {
    in.fail_type("shape", "[features], [steps, features] or [H, W, C]", shape);
  }
  std::vector<std::int64_t> dims;
  for (const json& dim : shape) dims.push_back(in.get_positive_int("shape", dim));
  return dims;
}

}  // namespace

// Parses JSON text, rejecting duplicate keys (nlohmann would keep the last one silently) and
// nesting deeper than kMaxJsonDepth (a model is 4 levels deep; "[" x 100000 once crashed the
// recursive printing of the error message).
nlohmann::json parse_json_text(std::string_view text, const std::string& origin_prefix) {
  using json = nlohmann::json;
  struct Frame {
    bool is_object = false;
    int elements = 0;  // arrays: elements started so far
    std::string last_key;
    std::unordered_set<std::string> keys;  // a set: 40,000 keys in one object once took minutes
  };
  std::vector<Frame> stack;
  const auto begin_value = [&stack] {
    if (!stack.empty() && !stack.back().is_object) ++stack.back().elements;
  };
  const auto where = [&stack]() -> std::string {
    // Inside a layer: [top object] [layers array] [layer object].
    if (stack.size() == 3 && stack[0].last_key == "layers" && !stack[1].is_object) {
      return "layer " + std::to_string(stack[1].elements - 1) + ": duplicate field ";
    }
    if (stack.size() == 2 && stack[0].last_key == "input") return "input: duplicate key ";
    return "duplicate key ";
  };
  json::parser_callback_t callback = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth) {
          throw SpecError(origin_prefix + "invalid JSON: nested deeper than " +
                          std::to_string(kMaxJsonDepth) + " levels (a model needs 4)");
        }
        begin_value();
        stack.push_back({event == json::parse_event_t::object_start, 0, {}, {}});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        stack.pop_back();
        break;
      case json::parse_event_t::key: {
        Frame& frame = stack.back();
        std::string key = parsed.get<std::string>();
        if (frame.keys.contains(key)) throw SpecError(origin_prefix + where() + quote(key));
        frame.last_key = key;
        frame.keys.insert(std::move(key));
        break;
      }
      case json::parse_event_t::value:
        begin_value();
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 5: ...".
    std::string message = e.what();
    if (const auto close = message.find("] ");
        message.starts_with("[json.") && close != std::string::npos) {
      message.erase(0, close + 2);
    }
    throw SpecError(origin_prefix + "invalid JSON: " + message);
  }
}


ModelSpec parse_model_json(std::string_view text, std::string_view origin) {
  const std::string origin_prefix = origin.empty() ? std::string() : std::string(origin) + ": ";
  const json root = parse_json_text(text, origin_prefix);
  if (!root.is_object()) {
    throw SpecError(origin_prefix + "a model file must be a JSON object, got " + describe(root));
  }
  const ObjectReader top(root, origin_prefix, "key");
  top.check_keys(kTopLevelKeys, "a model file");

  ModelSpec spec;
  spec.name = kDefaultModelName;
  if (const json* v = top.find("name")) spec.name = top.get_name("name", *v);
  spec.input_shape = parse_input(top.require("input"), origin_prefix);
  if (const json* v = top.find("loss")) spec.loss = top.get_enum("loss", *v, kLosses);

  const json& layers = top.require("layers");
  if (!layers.is_array()) top.fail_type("layers", "an array of layers", layers);
  if (layers.empty()) top.fail("key 'layers' is empty: a model needs at least one layer");
  spec.layers.reserve(layers.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    spec.layers.push_back(parse_layer(layers[i], static_cast<int>(i), origin_prefix));
  }
  return spec;
}

std::string read_model_text(const std::filesystem::path& path) {
  return read_text_file<SpecError>(path, kModelFileKind);
}

ModelSpec load_model_file(const std::filesystem::path& path) {
  return parse_model_json(read_model_text(path), path.string());
}

std::string_view to_string(LayerType type) {
  switch (type) {
    case LayerType::Dense:
      return "Dense";
    case LayerType::Conv2D:
      return "Conv2D";
    case LayerType::MaxPooling2D:
      return "MaxPooling2D";
    case LayerType::AveragePooling2D:
      return "AveragePooling2D";
    case LayerType::Flatten:
      return "Flatten";
    case LayerType::Dropout:
      return "Dropout";
    case LayerType::Activation:
      return "Activation";
    case LayerType::Rescaling:
      return "Rescaling";
    case LayerType::Add:
      return "Add";
    case LayerType::Subtract:
      return "Subtract";
    case LayerType::Multiply:
      return "Multiply";
    case LayerType::Average:
      return "Average";
    case LayerType::Maximum:
      return "Maximum";
    case LayerType::Concatenate:
      return "Concatenate";
    case LayerType::GlobalAveragePooling2D:
      return "GlobalAveragePooling2D";
    case LayerType::GlobalMaxPooling2D:
      return "GlobalMaxPooling2D";
    case LayerType::GlobalAveragePooling1D:
      return "GlobalAveragePooling1D";
    case LayerType::GlobalMaxPooling1D:
      return "GlobalMaxPooling1D";
    case LayerType::ReLU:
      return "ReLU";
    case LayerType::BatchNormalization:
      return "BatchNormalization";
    case LayerType::ZeroPadding2D:
      return "ZeroPadding2D";
    case LayerType::DepthwiseConv2D:
      return "DepthwiseConv2D";
    case LayerType::Reshape:
      return "Reshape";
    case LayerType::Normalization:
      return "Normalization";
    case LayerType::SeparableConv2D:
      return "SeparableConv2D";
    case LayerType::Embedding:
      return "Embedding";
    case LayerType::LayerNormalization:
      return "LayerNormalization";
    case LayerType::PositionEmbedding:
      return "PositionEmbedding";
    case LayerType::MultiHeadAttention:
      return "MultiHeadAttention";
  }
  return "?";
}

std::string_view to_string(ActivationFn fn) {
  switch (fn) {
    case ActivationFn::linear:
      return "linear";
    case ActivationFn::relu:
      return "relu";
    case ActivationFn::sigmoid:
      return "sigmoid";
    case ActivationFn::tanh:
      return "tanh";
    case ActivationFn::gelu:
      return "gelu";
    case ActivationFn::softmax:
      return "softmax";
    case ActivationFn::silu:
      return "silu";
    case ActivationFn::hard_sigmoid:
      return "hard_sigmoid";
    case ActivationFn::hard_silu:
      return "hard_silu";
    case ActivationFn::elu:
      return "elu";
    case ActivationFn::relu6:
      return "relu6";
    case ActivationFn::leaky_relu:
      return "leaky_relu";
  }
  return "?";
}

std::string_view to_string(Padding padding) {
  switch (padding) {
    case Padding::valid:
      return "valid";
    case Padding::same:
      return "same";
  }
  return "?";
}

std::string_view to_string(LossKind loss) {
  switch (loss) {
    case LossKind::sparse_categorical_crossentropy:
      return "sparse_categorical_crossentropy";
    case LossKind::categorical_crossentropy:
      return "categorical_crossentropy";
    case LossKind::binary_crossentropy:
      return "binary_crossentropy";
  }
  return "?";
}

std::span<const LayerType> all_layer_types() {
  return kLayerTypes;
}
std::span<const ActivationFn> all_activations() {
  return kActivations;
}
std::span<const Padding> all_paddings() {
  return kPaddings;
}
std::span<const LossKind> all_losses() {
  return kLosses;
}

std::optional<LayerType> parse_layer_type(std::string_view name) {
  return parse_enum(name, kLayerTypes);
}
std::optional<ActivationFn> parse_activation(std::string_view name) {
  if (name == "swish") return ActivationFn::silu;  // Keras's aliases
  if (name == "hard_swish") return ActivationFn::hard_silu;
  return parse_enum(name, kActivations);
}
std::optional<LossKind> parse_loss(std::string_view name) {
  return parse_enum(name, kLosses);
}

}  // namespace mixlab
