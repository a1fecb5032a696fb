// Keras JSON that Keras itself refuses is refused by name (the layer and the field), and what
// Keras 3 accepts but MixLab does not model is a warning (issue 25, item 11: checked against
// Keras 3.12's model_from_json); text from the file is quoted escaped (item 9).
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/interop/keras_model.h"
#include "tests/interop/keras_files.h"

namespace mixlab {
namespace {

using test::keras3_layer;
using test::keras3_sequential;

std::string input_layer(const std::string& batch_shape) {
  return keras3_layer("InputLayer", R"("batch_shape": )" + batch_shape +
                                        R"(, "dtype": "float32", "name": "input_layer")");
}

// A Dense layer with `extra` config fields, and the envelope's `build` (e.g. a build_config).
std::string dense(const std::string& extra = "", const std::string& build = "") {
  return R"({"module": "keras.layers", "class_name": "Dense", "config": {"name": "d",
    "units": 2)" +
         (extra.empty() ? "" : ", " + extra) + R"(}, "registered_name": null)" +
         (build.empty() ? "" : ", " + build) + "}";
}

std::string error_of(const std::string& text) {
  return test::keras_error_of(text, "m.json");
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool has_raw_control(const std::string& text) {
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7F) return true;
  }
  return false;
}

// The model JSON with `sequential_field` added to the Sequential's config.
std::string with_model_field(const std::string& text, const std::string& field) {
  const std::string at = R"("layers": [)";
  std::string out = text;
  out.insert(out.find(at), field + ", ");
  return out;
}

TEST(KerasRefusals, BatchShapeThatIsNotAShapeIsNamed) {
  for (const std::string bad :
       {R"("abc")", "4", "{}", "[]", R"([null, "x"])", R"(["x", 4])", "[null, 4.5]", "[null, 0]"}) {
    const std::string error = error_of(keras3_sequential({input_layer(bad), dense()}));
    EXPECT_TRUE(contains(error, "m.json: layer 'input_layer' (InputLayer): batch_shape"))
        << bad << ": " << error;
  }
  // The batch may be fixed: Keras takes [4, 4] as a batch of 4.
  EXPECT_EQ(import_keras_json(keras3_sequential({input_layer("[4, 4]"), dense()})).spec.input_shape,
            (std::vector<std::int64_t>{4}));
}

TEST(KerasRefusals, ShapesThatContradictEachOtherAreNamed) {
  // A layer built (build_config) for another input than it gets: Keras refuses it too.
  std::string error = error_of(keras3_sequential(
      {input_layer("[null, 4]"), dense("", R"("build_config": {"input_shape": [null, 8]})")}));
  EXPECT_TRUE(contains(error, "layer 0 'd' (Dense): build_config input_shape [null,8]")) << error;
  EXPECT_TRUE(contains(error, "[null,4]")) << error;
  error = error_of(keras3_sequential(
      {input_layer("[null, 4]"), dense("", R"("build_config": {"input_shape": "abc"})")}));
  EXPECT_TRUE(contains(error, "layer 0 'd' (Dense): build_config input_shape \"abc\"")) << error;
  error =
      error_of(keras3_sequential({input_layer("[null, 4]"), dense("", R"("build_config": 5)")}));
  EXPECT_TRUE(contains(error, "layer 0 'd' (Dense): build_config 5 is not an object")) << error;
  // Two layers that give the input shape, differently.
  error = error_of(
      keras3_sequential({input_layer("[null, 4]"), dense(R"("batch_input_shape": [null, 8])")}));
  EXPECT_TRUE(contains(error, "layer 'd' (Dense): batch_input_shape [null,8] contradicts"))
      << error;
  EXPECT_TRUE(contains(error, "layer 'input_layer' (InputLayer): batch_shape")) << error;
  // Built for what it gets: fine, whatever the batch.
  const ImportedModel model = import_keras_json(keras3_sequential(
      {input_layer("[null, 4]"), dense("", R"("build_config": {"input_shape": [3, 4]})")}));
  EXPECT_TRUE(model.warnings.empty());
}

TEST(KerasRefusals, ModelShapesKerasIgnoresAreWarnings) {
  // Keras builds from the input layer and ignores build_input_shape and the model's
  // build_config then; MixLab does the same and says so.
  std::string text = with_model_field(keras3_sequential({input_layer("[null, 4]"), dense()}),
                                      R"("build_input_shape": [null, 8])");
  ImportedModel model = import_keras_json(text);
  EXPECT_EQ(model.spec.input_shape, (std::vector<std::int64_t>{4}));
  ASSERT_EQ(model.warnings.size(), 1U);
  EXPECT_TRUE(contains(model.warnings[0],
                       "build_input_shape [null,8] disagrees with layer "
                       "'input_layer' (InputLayer): batch_shape"))
      << model.warnings[0];
  text = with_model_field(keras3_sequential({input_layer("[null, 4]"), dense()}),
                          R"("build_input_shape": "abc")");
  model = import_keras_json(text);
  ASSERT_EQ(model.warnings.size(), 1U);
  EXPECT_TRUE(contains(model.warnings[0], "build_input_shape \"abc\" is not a shape"))
      << model.warnings[0];
  // Without an input layer, build_input_shape is the input, and a layer built for another
  // one is refused, as Keras refuses it.
  text = with_model_field(keras3_sequential({dense()}), R"("build_input_shape": [null, 6])");
  EXPECT_EQ(import_keras_json(text).spec.input_shape, (std::vector<std::int64_t>{6}));
  text = with_model_field(
      keras3_sequential({dense("", R"("build_config": {"input_shape": [null, 4]})")}),
      R"("build_input_shape": [null, 8])");
  EXPECT_TRUE(contains(error_of(text), "build_config input_shape [null,4]")) << error_of(text);
}

TEST(KerasRefusals, TrainableThatIsNotABooleanIsAWarning) {
  // Keras 3 keeps any value and tests it as Python does: "ten" trains, 0 and null freeze.
  const std::pair<std::string, std::string> cases[] = {
      {R"("ten")",
       "layer 0 'd' (Dense): trainable \"ten\" is not true or false (Keras takes "
       "it as true)"},
      {"0",
       "trainable 0 is not true or false (Keras takes it as false): MixLab trains every "
       "layer"},
      {"null", "trainable null is not true or false (Keras takes it as false)"},
      {"true", ""}};
  for (const auto& [value, warning] : cases) {
    const ImportedModel model = import_keras_json(
        keras3_sequential({input_layer("[null, 4]"), dense(R"("trainable": )" + value)}));
    if (warning.empty()) {
      EXPECT_TRUE(model.warnings.empty()) << value;
      continue;
    }
    ASSERT_EQ(model.warnings.size(), 1U) << value;
    EXPECT_TRUE(contains(model.warnings[0], warning)) << model.warnings[0];
  }
}

TEST(KerasRefusals, NameThatIsNotAStringIsNamed) {
  std::string error = error_of(keras3_sequential(
      {input_layer("[null, 4]"), keras3_layer("Dense", R"("name": {}, "units": 2)")}));
  EXPECT_TRUE(contains(error, "m.json: layer 1 of the file (Dense): \"name\" {} is not a string"))
      << error;
  error = error_of(keras3_sequential(
      {keras3_layer("InputLayer", R"("batch_shape": [null, 4], "name": 5)"), dense()}));
  EXPECT_TRUE(contains(error, "layer 0 of the file (InputLayer): \"name\" 5 is not a string"))
      << error;
  error = error_of(R"({"module": "keras", "class_name": "Sequential", "config": {"name": [1],
                       "layers": []}})");
  EXPECT_TRUE(contains(error, "the model's \"name\" [1] is not a string")) << error;
  // null is Keras's "make one up".
  const ImportedModel model = import_keras_json(keras3_sequential(
      {input_layer("[null, 4]"), keras3_layer("Dense", R"("name": null, "units": 2)")}));
  EXPECT_EQ(model.spec.layers.size(), 1U);
}

std::string policy_of(const std::string& cls) {
  return R"({"module": "keras", "class_name": ")" + cls +
         R"(", "config": {"name": "mixed_float16"}, "registered_name": null})";
}

TEST(KerasRefusals, PolicyOfAnUnknownClassIsNamed) {
  std::string error = error_of(keras3_sequential(
      {input_layer("[null, 4]"), dense(R"("dtype": )" + policy_of("EvilPolicy"))}));
  EXPECT_TRUE(contains(error,
                       "layer 0 'd' (Dense): \"dtype\" of class 'EvilPolicy' is not a Keras "
                       "dtype policy"))
      << error;
  error = error_of(keras3_sequential(
      {input_layer("[null, 4]"), dense(R"("dtype": {"config": {"name": "mixed_float16"}})")}));
  EXPECT_TRUE(contains(error, "layer 0 'd' (Dense): \"dtype\"")) << error;
  for (const char* cls : {"DTypePolicy", "FloatDTypePolicy", "Policy"}) {
    const ImportedModel model = import_keras_json(
        keras3_sequential({input_layer("[null, 4]"), dense(R"("dtype": )" + policy_of(cls))}));
    EXPECT_EQ(model.policy, Policy::mixed_float16) << cls;
  }
  // A model.quantize("int8") model: refused; float8 from anything but mixed_bfloat16 too
  // (float8 imports: keras_archive_test.cpp).
  error = error_of(keras3_sequential(
      {input_layer("[null, 4]"), dense(R"("dtype": )" + policy_of("QuantizedDTypePolicy"))}));
  EXPECT_TRUE(contains(error,
                       "layer 0 'd' (Dense): \"dtype\" of class 'QuantizedDTypePolicy' is a layer "
                       "quantized with model.quantize() to integers"))
      << error;
  error = error_of(keras3_sequential(
      {input_layer("[null, 4]"), dense(R"("dtype": {"module": "keras.dtype_policies", "class_name":
             "QuantizedFloat8DTypePolicy", "config": {"mode": "float8", "source_name":
             "mixed_float16", "amax_history_length": 1024}, "registered_name": null})")}));
  EXPECT_TRUE(contains(error,
                       "layer 0 'd' (Dense): float8 quantization from 'mixed_float16': MixLab's "
                       "mixed_float8 quantizes a mixed_bfloat16 model"))
      << error;
  // Keras ignores a Sequential's own dtype; an unknown class there is a warning.
  std::string text = keras3_sequential({input_layer("[null, 4]"), dense()});
  const std::string model_policy = R"("class_name": "DTypePolicy")";
  text.replace(text.find(model_policy), model_policy.size(), R"("class_name": "EvilPolicy")");
  const ImportedModel model = import_keras_json(text);
  ASSERT_EQ(model.warnings.size(), 1U);
  EXPECT_TRUE(contains(model.warnings[0],
                       "the model: \"dtype\" of class 'EvilPolicy' is not a "
                       "Keras dtype policy"))
      << model.warnings[0];
}

TEST(KerasRefusals, TextFromTheFileIsQuotedEscaped) {
  const std::string esc = R"(\u001b[2J\u0007)";
  for (const std::string& text : {
           keras3_sequential(
               {input_layer("[null, 4]"), keras3_layer("Den" + esc, R"("units": 2)")}),
           keras3_sequential(
               {input_layer("[null, 4]"), dense(R"("activation": "re)" + esc + R"(lu")")}),
           keras3_sequential({input_layer("[null, 4]"), dense(R"("colour)" + esc + R"(": 1)")}),
           keras3_sequential(
               {input_layer("[null, 4]"), dense(R"("dtype": "float)" + esc + R"(32")")}),
           keras3_sequential(
               {input_layer("[null, 4]"),
                keras3_layer("Dense", R"("name": "d)" + esc + R"(", "units": 2, "x": 1)")}),
       }) {
    const std::string error = error_of(text);
    EXPECT_NE(error, "(no error)");
    EXPECT_FALSE(has_raw_control(error)) << error;
    EXPECT_TRUE(contains(error, "\\x1b[2J\\x07")) << error;
  }
}

}  // namespace
}  // namespace mixlab
