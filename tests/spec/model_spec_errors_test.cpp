// parse_model_json and load_model_file: every error names where it is (origin, layer index and
// type, field or key) and what is wrong; nothing wrong is silently accepted.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/core/error.h"
#include "engine/spec/model_spec.h"

namespace mixlab {
namespace {

// The message of the SpecError that parsing `text` throws ("" and a test failure when none is).
std::string error_of(const std::string& text, std::string_view origin = {}) {
  try {
    parse_model_json(text, origin);
  } catch (const SpecError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a SpecError: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no error for: " << text;
  return {};
}

// A model whose layers are `layers_json` (a JSON array's contents); layer 0 sees an 8x8x3 image.
std::string with_layers(const std::string& layers_json) {
  return R"({"input": {"shape": [8, 8, 3]}, "layers": [)" + layers_json + "]}";
}

// The error of a model whose only layer is `layer_json`.
std::string layer_error(const std::string& layer_json) {
  return error_of(with_layers(layer_json));
}

#define EXPECT_CONTAINS(haystack, needle)                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "expected to find: " << (needle) << "\n               in: " << (haystack)

// ---- malformed JSON and origin ----

TEST(SpecErrors, MalformedJsonGivesPosition) {
  const std::string msg = error_of("{\"input\": {\"shape\": [8]},\n \"layers\": [,]}");
  EXPECT_CONTAINS(msg, "invalid JSON");
  EXPECT_CONTAINS(msg, "line 2, column 13");
  EXPECT_EQ(msg.find("[json.exception"), std::string::npos) << msg;
  EXPECT_CONTAINS(error_of(""), "invalid JSON");
  EXPECT_CONTAINS(error_of(R"({"input": {"shape": [8]}, "layers": [{"type": "Flatten"}]} x)"),
                  "invalid JSON");
  EXPECT_CONTAINS(
      error_of(R"({"input": {"shape": [8]}, "layers": [{"type": "Dropout", "rate": 1e999}]})"),
      "invalid JSON");  // a number beyond double is the parser's error
}

TEST(SpecErrors, OriginPrefixesEveryMessage) {
  EXPECT_EQ(error_of(with_layers(R"({"type": "Dense", "unit": 3})"), "models/x.json")
                .rfind("models/x.json: layer 0 (Dense): unknown field 'unit'", 0),
            0u);
  EXPECT_EQ(error_of("{", "models/x.json").rfind("models/x.json: invalid JSON", 0), 0u);
  EXPECT_EQ(error_of(R"({"layers": [{"type": "Flatten"}]})", "m.json"),
            "m.json: missing required key 'input'");
}

// ---- top level ----

TEST(SpecErrors, TopLevelMustBeAnObject) {
  EXPECT_EQ(error_of("[1, 2]"), "a model file must be a JSON object, got array [1,2]");
  EXPECT_EQ(error_of("\"model\""), "a model file must be a JSON object, got string");
}

TEST(SpecErrors, TopLevelKeys) {
  EXPECT_EQ(
      error_of(R"({"input": {"shape": [8]}, "layers": [{"type": "Flatten"}], "optimizer": "sgd"})"),
      "unknown key 'optimizer' (a model file takes name, input, loss, layers)");
  EXPECT_EQ(error_of(R"({"input": {"shape": [8]}})"), "missing required key 'layers'");
  EXPECT_EQ(error_of(R"({"layers": [{"type": "Flatten"}]})"), "missing required key 'input'");
  EXPECT_EQ(error_of(R"({"name": 3, "input": {"shape": [8]}, "layers": [{"type": "Flatten"}]})"),
            "key 'name' must be a string, got 3");
  EXPECT_EQ(error_of(R"({"input": {"shape": [8]}, "layers": {"type": "Flatten"}})"),
            "key 'layers' must be an array of layers, got object");
  EXPECT_EQ(error_of(R"({"input": {"shape": [8]}, "layers": []})"),
            "key 'layers' is empty: a model needs at least one layer");
}

TEST(SpecErrors, Loss) {
  EXPECT_EQ(
      error_of(R"({"input": {"shape": [8]}, "loss": "mse", "layers": [{"type": "Flatten"}]})"),
      "loss 'mse' is not one of sparse_categorical_crossentropy, categorical_crossentropy, "
      "binary_crossentropy");
  EXPECT_EQ(error_of(R"({"input": {"shape": [8]}, "loss": null, "layers": [{"type": "Flatten"}]})"),
            "key 'loss' must be a string, got null");
}

TEST(SpecErrors, Input) {
  const auto input_error = [](const std::string& input) {
    return error_of(R"({"input": )" + input + R"(, "layers": [{"type": "Flatten"}]})");
  };
  EXPECT_EQ(input_error("[28, 28, 1]"),
            "key 'input' must be an object {\"shape\": [...]}, got array [28,28,1]");
  EXPECT_EQ(input_error("{}"), "input: missing required key 'shape'");
  EXPECT_EQ(input_error(R"({"shape": [8], "dtype": "float16"})"),
            "input: unknown key 'dtype' (input takes shape)");
  EXPECT_EQ(input_error(R"({"shape": [1, 2, 3, 4]})"),
            "input: key 'shape' must be [features], [steps, features] or [H, W, C], got array "
            "[1,2,3,4]");
  EXPECT_EQ(input_error(R"({"shape": []})"),
            "input: key 'shape' must be [features], [steps, features] or [H, W, C], got array []");
  EXPECT_EQ(input_error(R"({"shape": 784})"),
            "input: key 'shape' must be [features], [steps, features] or [H, W, C], got 784");
  EXPECT_EQ(input_error(R"({"shape": [28, 0, 1]})"),
            "input: shape 0 is out of range [1, 2147483647]");
  EXPECT_EQ(input_error(R"({"shape": [-3]})"), "input: shape -3 is out of range [1, 2147483647]");
  EXPECT_EQ(input_error(R"({"shape": [2.5]})"), "input: key 'shape' must be an integer, got 2.5");
  EXPECT_EQ(input_error(R"({"shape": ["28"]})"),
            "input: key 'shape' must be an integer, got string");
}

TEST(SpecErrors, DuplicateKeysAreNotSilentlyDropped) {
  EXPECT_EQ(
      error_of(
          R"({"name": "a", "name": "b", "input": {"shape": [8]}, "layers": [{"type": "Flatten"}]})"),
      "duplicate key 'name'");
  EXPECT_EQ(error_of(R"({"input": {"shape": [8], "shape": [9]}, "layers": [{"type": "Flatten"}]})"),
            "input: duplicate key 'shape'");
  EXPECT_EQ(
      error_of(with_layers(R"({"type": "Flatten"}, {"type": "Dense", "units": 2, "units": 3})")),
      "layer 1: duplicate field 'units'");
}

// ---- layer type ----

TEST(SpecErrors, LayerTypeAndShape) {
  EXPECT_EQ(layer_error(R"("Dense")"), "layer 0: must be an object, got string");
  EXPECT_EQ(layer_error(R"({"units": 3})"), "layer 0: missing required field 'type'");
  EXPECT_EQ(layer_error(R"({"type": 3})"), "layer 0: field 'type' must be a string, got 3");
  const std::string msg = error_of(with_layers(
      R"({"type": "Flatten"}, {"type": "Flatten"}, {"type": "Flatten"}, {"type": "Conv3D"})"));
  EXPECT_EQ(msg.rfind("layer 3: unknown layer type 'Conv3D'", 0), 0u) << msg;
  EXPECT_CONTAINS(msg, "Conv2D");  // lists the known types
  EXPECT_EQ(layer_error(R"({"type": "dense", "units": 3})")
                .rfind("layer 0: unknown layer type 'dense'", 0),
            0u);
}

// ---- fields ----

TEST(SpecErrors, UnknownFields) {
  const std::string msg = error_of(with_layers(
      R"({"type": "Flatten"}, {"type": "Dense", "units": 3}, {"type": "Dense", "unit": 3})"));
  EXPECT_EQ(msg.rfind("layer 2 (Dense): unknown field 'unit'", 0), 0u) << msg;
  EXPECT_CONTAINS(msg, "units");  // says what Dense takes
  // A field of another layer type is unknown too.
  EXPECT_EQ(layer_error(R"({"type": "Flatten", "units": 3})")
                .rfind("layer 0 (Flatten): unknown field 'units'", 0),
            0u);
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": 3, "kernel_size": 3})")
                .rfind("layer 0 (Dense): unknown field 'kernel_size'", 0),
            0u);
  EXPECT_EQ(layer_error(R"({"type": "Dropout", "rate": 0.1, "seed": 3})")
                .rfind("layer 0 (Dropout): unknown field 'seed'", 0),
            0u);
  EXPECT_EQ(layer_error(R"({"type": "Activation", "activation": "relu", "use_bias": true})")
                .rfind("layer 0 (Activation): unknown field 'use_bias'", 0),
            0u);
  EXPECT_EQ(layer_error(R"({"type": "MaxPooling2D", "kernel_size": 2})")
                .rfind("layer 0 (MaxPooling2D): unknown field 'kernel_size'", 0),
            0u);
}

TEST(SpecErrors, MissingRequiredFields) {
  EXPECT_EQ(layer_error(R"({"type": "Dense"})"), "layer 0 (Dense): missing required field 'units'");
  EXPECT_EQ(layer_error(R"({"type": "Conv2D", "kernel_size": 3})"),
            "layer 0 (Conv2D): missing required field 'filters'");
  EXPECT_EQ(layer_error(R"({"type": "Conv2D", "filters": 3})"),
            "layer 0 (Conv2D): missing required field 'kernel_size'");
  EXPECT_EQ(layer_error(R"({"type": "Dropout"})"),
            "layer 0 (Dropout): missing required field 'rate'");
  EXPECT_EQ(layer_error(R"({"type": "Activation"})"),
            "layer 0 (Activation): missing required field 'activation'");
  EXPECT_EQ(layer_error(R"({"type": "Rescaling", "offset": 1})"),
            "layer 0 (Rescaling): missing required field 'scale'");
}

TEST(SpecErrors, WrongJsonTypes) {
  EXPECT_EQ(error_of(with_layers(R"({"type": "Flatten"}, {"type": "Dense", "units": "128"})")),
            "layer 1 (Dense): field 'units' must be an integer, got string");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": 2.5})"),
            "layer 0 (Dense): field 'units' must be an integer, got 2.5");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": true})"),
            "layer 0 (Dense): field 'units' must be an integer, got boolean");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": null})"),
            "layer 0 (Dense): field 'units' must be an integer, got null");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": [3]})"),
            "layer 0 (Dense): field 'units' must be an integer, got array [3]");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": 3, "use_bias": 1})"),
            "layer 0 (Dense): field 'use_bias' must be true or false, got 1");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": 3, "use_bias": "false"})"),
            "layer 0 (Dense): field 'use_bias' must be true or false, got string");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": 3, "activation": 1})"),
            "layer 0 (Dense): field 'activation' must be a string, got 1");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": 3, "activation": null})"),
            "layer 0 (Dense): field 'activation' must be a string, got null");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": 3, "name": 5})"),
            "layer 0 (Dense): field 'name' must be a string, got 5");
  EXPECT_EQ(layer_error(R"({"type": "Dropout", "rate": "0.5"})"),
            "layer 0 (Dropout): field 'rate' must be a number, got string");
  EXPECT_EQ(layer_error(R"({"type": "Dropout", "rate": false})"),
            "layer 0 (Dropout): field 'rate' must be a number, got boolean");
  EXPECT_EQ(layer_error(R"({"type": "Rescaling", "scale": null})"),
            "layer 0 (Rescaling): field 'scale' must be a number, got null");
  EXPECT_EQ(layer_error(R"({"type": "Rescaling", "scale": 1, "offset": {}})"),
            "layer 0 (Rescaling): field 'offset' must be a number, got object");
  EXPECT_EQ(layer_error(R"({"type": "Conv2D", "filters": 2, "kernel_size": 3, "padding": 1})"),
            "layer 0 (Conv2D): field 'padding' must be a string, got 1");
}

TEST(SpecErrors, SizeFields) {
  EXPECT_EQ(layer_error(R"({"type": "Conv2D", "filters": 2, "kernel_size": "3"})"),
            "layer 0 (Conv2D): field 'kernel_size' must be an integer or [h, w], got string");
  EXPECT_EQ(layer_error(R"({"type": "Conv2D", "filters": 2, "kernel_size": [3]})"),
            "layer 0 (Conv2D): field 'kernel_size' must be an integer or [h, w], got array [3]");
  EXPECT_EQ(
      layer_error(R"({"type": "Conv2D", "filters": 2, "kernel_size": [3, 3, 3]})"),
      "layer 0 (Conv2D): field 'kernel_size' must be an integer or [h, w], got array [3,3,3]");
  EXPECT_EQ(
      layer_error(R"({"type": "Conv2D", "filters": 2, "kernel_size": [3, "3"]})"),
      "layer 0 (Conv2D): field 'kernel_size' must be an integer or [h, w], got array [3,\"3\"]");
  EXPECT_EQ(layer_error(R"({"type": "Conv2D", "filters": 2, "kernel_size": [3, 1.5]})"),
            "layer 0 (Conv2D): field 'kernel_size' must be an integer, got 1.5");
  // Only pooling takes strides null (Keras strides=None); Conv2D does not.
  EXPECT_EQ(layer_error(R"({"type": "Conv2D", "filters": 2, "kernel_size": 3, "strides": null})"),
            "layer 0 (Conv2D): field 'strides' must be an integer or [h, w], got null");
  EXPECT_EQ(layer_error(R"({"type": "MaxPooling2D", "pool_size": null})"),
            "layer 0 (MaxPooling2D): field 'pool_size' must be an integer or [h, w], got null");
}

TEST(SpecErrors, OutOfRange) {
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": 0})"),
            "layer 0 (Dense): units 0 is out of range [1, 2147483647]");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": -4})"),
            "layer 0 (Dense): units -4 is out of range [1, 2147483647]");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": 2147483648})"),
            "layer 0 (Dense): units 2147483648 is out of range [1, 2147483647]");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": 18446744073709551615})"),
            "layer 0 (Dense): units 18446744073709551615 is out of range [1, 2147483647]");
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": 1e300})"),
            "layer 0 (Dense): units 1e+300 is out of range [1, 2147483647]");
  EXPECT_EQ(layer_error(R"({"type": "Conv2D", "filters": 0, "kernel_size": 3})"),
            "layer 0 (Conv2D): filters 0 is out of range [1, 2147483647]");
  EXPECT_EQ(layer_error(R"({"type": "Conv2D", "filters": 1, "kernel_size": [3, 0]})"),
            "layer 0 (Conv2D): kernel_size 0 is out of range [1, 2147483647]");
  EXPECT_EQ(layer_error(R"({"type": "Conv2D", "filters": 1, "kernel_size": 3, "strides": 0})"),
            "layer 0 (Conv2D): strides 0 is out of range [1, 2147483647]");
  EXPECT_EQ(layer_error(R"({"type": "AveragePooling2D", "pool_size": [-1, 2]})"),
            "layer 0 (AveragePooling2D): pool_size -1 is out of range [1, 2147483647]");
  EXPECT_EQ(layer_error(R"({"type": "MaxPooling2D", "strides": [1, 0]})"),
            "layer 0 (MaxPooling2D): strides 0 is out of range [1, 2147483647]");
}

TEST(SpecErrors, DropoutRate) {
  EXPECT_EQ(layer_error(R"({"type": "Dropout", "rate": 1.5})"),
            "layer 0 (Dropout): rate 1.5 is out of range [0, 1)");
  EXPECT_EQ(layer_error(R"({"type": "Dropout", "rate": 1})"),
            "layer 0 (Dropout): rate 1 is out of range [0, 1)");
  EXPECT_EQ(layer_error(R"({"type": "Dropout", "rate": -0.1})"),
            "layer 0 (Dropout): rate -0.1 is out of range [0, 1)");
}

TEST(SpecErrors, NewLayersNameTheirFields) {
  EXPECT_EQ(layer_error(R"({"type": "ReLU", "max_value": -1})"),
            "layer 0 (ReLU): max_value -1 must be >= 0");
  EXPECT_EQ(layer_error(R"({"type": "BatchNormalization", "momentum": 1.5})"),
            "layer 0 (BatchNormalization): momentum 1.5 is out of range [0, 1]");
  EXPECT_EQ(layer_error(R"({"type": "BatchNormalization", "epsilon": 0})"),
            "layer 0 (BatchNormalization): epsilon 0 must be a finite number above 0");
  EXPECT_EQ(layer_error(R"({"type": "ZeroPadding2D", "padding": [[1, -1], [0, 0]]})"),
            "layer 0 (ZeroPadding2D): padding [[1,-1],[0,0]] is out of range [0, 2147483647]");
  EXPECT_EQ(layer_error(R"({"type": "Normalization", "mean": [0.5]})"),
            "layer 0 (Normalization): mean is given without variance: give both (or neither: mean "
            "0, variance 1)");
  EXPECT_EQ(layer_error(R"({"type": "Normalization", "mean": 0, "variance": [1, -2, 1]})"),
            "layer 0 (Normalization): variance -2 is below 0");
  EXPECT_EQ(layer_error(R"({"type": "Normalization", "mean": [0, 0], "variance": [1, 1, 1]})"),
            "layer 0 (Normalization): mean has 2 values and variance 3: give one value, or one "
            "per channel, for each");
  EXPECT_EQ(layer_error(R"({"type": "Normalization", "mean": "0.5", "variance": 1})"),
            "layer 0 (Normalization): field 'mean' must be a number or an array of numbers, got "
            "string");
  EXPECT_EQ(layer_error(R"({"type": "Reshape", "target_shape": [-1, -1]})"),
            "layer 0 (Reshape): target_shape [-1, -1]: each size must be in [1, 2147483647], or "
            "one of them -1 (inferred)");
}

TEST(SpecErrors, EnumValues) {
  constexpr const char* kKnown =
      "relu, sigmoid, tanh, gelu, softmax, linear, silu, hard_sigmoid, hard_silu, elu, relu6, "
      "leaky_relu";
  EXPECT_EQ(layer_error(R"({"type": "Dense", "units": 3, "activation": "relu7"})"),
            std::string("layer 0 (Dense): activation 'relu7' is not one of ") + kKnown);
  // MixLab's files spell activations as Keras serializes them: no aliases, no class names.
  EXPECT_EQ(layer_error(R"({"type": "Activation", "activation": "Softmax"})"),
            std::string("layer 0 (Activation): activation 'Softmax' is not one of ") + kKnown);
  EXPECT_EQ(layer_error(R"({"type": "Activation", "activation": "swish"})"),
            std::string("layer 0 (Activation): activation 'swish' is not one of ") + kKnown);
  EXPECT_EQ(layer_error(R"({"type": "MaxPooling2D", "padding": "SAME"})"),
            "layer 0 (MaxPooling2D): padding 'SAME' is not one of valid, same");
  EXPECT_EQ(
      layer_error(R"({"type": "Conv2D", "filters": 1, "kernel_size": 1, "padding": "causal"})"),
      "layer 0 (Conv2D): padding 'causal' is not one of valid, same");
}

TEST(SpecErrors, DtypeIsFloat32OrBfloat16) {
  for (const char* dtype : {"float16", "mixed_float16", "float64", "float8"}) {
    const std::string msg = error_of(with_layers(
        std::string(R"({"type": "Flatten"}, {"type": "Dense", "units": 3, "dtype": ")") + dtype +
        "\"}"));
    EXPECT_EQ(msg, std::string("layer 1 (Dense): dtype '") + dtype +
                       "' is not supported: a layer's dtype is \"float32\" (kept in float32 under "
                       "a mixed policy) or \"bfloat16\" (kept out of FP8 under mixed_float8)");
  }
  EXPECT_EQ(layer_error(R"({"type": "Flatten", "dtype": null})"),
            "layer 0 (Flatten): field 'dtype' must be a string, got null");
}

// ---- files ----

class ModelFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("mixlab_spec_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::filesystem::path dir_;
};

std::string load_error(const std::filesystem::path& path) {
  try {
    load_model_file(path);
  } catch (const SpecError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error loading " << path;
  return {};
}

TEST_F(ModelFile, LoadsAFile) {
  const auto path =
      write("m.json", R"({"input": {"shape": [4]}, "layers": [{"type": "Dense", "units": 2}]})");
  const ModelSpec spec = load_model_file(path);
  EXPECT_EQ(spec.input_shape, (std::vector<std::int64_t>{4}));
  EXPECT_EQ(spec.layers.at(0).units, 2);
}

TEST_F(ModelFile, MissingFileIsNamed) {
  const auto path = dir_ / "absent.json";
  const std::string msg = load_error(path);
  EXPECT_EQ(msg.rfind(path.string() + ": cannot open model file", 0), 0u) << msg;
  EXPECT_CONTAINS(msg, "No such file");
}

// Only a regular file is read: a FIFO would block for ever, /dev/zero never ends.
TEST_F(ModelFile, OnlyRegularFilesAreRead) {
  const auto fifo = dir_ / "fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_CONTAINS(load_error(fifo), "not a regular file");
  EXPECT_CONTAINS(load_error("/dev/zero"), "not a regular file");
}

TEST_F(ModelFile, SizeIsBounded) {
  const auto path = dir_ / "huge.json";
  std::filesystem::resize_file(write("huge.json", "{"), kMaxModelFileBytes + 1);
  const std::string msg = load_error(path);
  EXPECT_CONTAINS(msg, "at most 16 MiB");
  EXPECT_EQ(msg.rfind(path.string(), 0), 0u) << msg;
}

// "[" x 100000 used to crash (recursion while printing the error); nesting is bounded while
// parsing, with a named error.
TEST_F(ModelFile, DeepNestingIsAnError) {
  const std::string msg = load_error(write("deep.json", std::string(100000, '[')));
  EXPECT_CONTAINS(msg, "nested deeper than 64 levels");
  EXPECT_THROW(parse_model_json(std::string(100000, '{') ), SpecError);
  std::string inside = R"({"input": {"shape": [4]}, "layers": [{"type": "Dense", "units": 2, "name": )";
  EXPECT_THROW(parse_model_json(inside + std::string(70, '[') + std::string(70, ']') + "}]}"),
               SpecError);
}

// Names reach terminals and tables: control characters (ESC, BEL) are refused by name.
TEST_F(ModelFile, ControlCharactersInNamesAreRefused) {
  // JSON's escapes \u001b (ESC) and \u0007 (BEL) in the file (a raw ESC is invalid JSON).
  const std::string model =
      "{\"name\": \"x\\u001b[31m\\u0007\", \"input\": {\"shape\": [4]}, "
      "\"layers\": [{\"type\": \"Dense\", \"units\": 2}]}";
  try {
    parse_model_json(model, "m.json");
    ADD_FAILURE() << "parsed";
  } catch (const SpecError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "control character 0x1B");
  }
  const std::string layer =
      "{\"input\": {\"shape\": [4]}, "
      "\"layers\": [{\"type\": \"Dense\", \"units\": 2, \"name\": \"a\\nb\"}]}";
  EXPECT_THROW(parse_model_json(layer), SpecError);
}

// Text from the file that a message quotes (a type, a field, an activation, a padding, a dtype,
// a loss, a duplicate key) is quoted escaped: no raw ESC or BEL reaches a terminal.
TEST_F(ModelFile, QuotedTextIsEscaped) {
  const std::string esc = "\\u001b[2J\\u0007";
  for (const std::string& model : {
           with_layers(R"({"type": "Den)" + esc + R"(se"})"),
           with_layers(R"({"type": "Flatten", "col)" + esc + R"(our": 1})"),
           with_layers(R"({"type": "Activation", "activation": "re)" + esc + R"(lu"})"),
           with_layers(R"({"type": "Conv2D", "filters": 1, "kernel_size": 1, "padding": "x)" + esc +
                       R"("})"),
           with_layers(R"({"type": "Flatten", "dtype": "f)" + esc + R"("})"),
           R"({"input": {"shape": [4]}, "loss": "l)" + esc +
               R"(", "layers": [{"type": "Flatten"}]})",
           R"({"input": {"shape": [4]}, "k)" + esc + R"(": 1, "k)" + esc + R"(": 2})",
       }) {
    const std::string message = error_of(model, "m.json");
    EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
    EXPECT_EQ(message.find('\x07'), std::string::npos) << message;
    EXPECT_CONTAINS(message, "\\x1b[2J\\x07");
  }
}

TEST_F(ModelFile, DirectoryIsNamed) {
  const std::string msg = load_error(dir_);
  EXPECT_EQ(msg.rfind(dir_.string() + ": cannot read model file", 0), 0u) << msg;
}

TEST_F(ModelFile, ErrorsInsideAFileNameIt) {
  const auto path = write("bad.json", with_layers(R"({"type": "Dropout", "rate": 1.5})"));
  EXPECT_EQ(load_error(path),
            path.string() + ": layer 0 (Dropout): rate 1.5 is out of range [0, 1)");
}

}  // namespace
}  // namespace mixlab
