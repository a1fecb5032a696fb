// Keras model JSON in and out: Keras 3 and tf.keras 2.x files as those versions write them, the
// functional chain rule, the named refusals, warnings for what MixLab does not model, and the
// export's round trip for every built-in model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/interop/keras_model.h"
#include "engine/spec/shape_inference.h"
#include "resources/builtin_models.h"
#include "tests/interop/keras_files.h"
#include "tests/spec/example_specs.h"

namespace mixlab {
namespace {

using test::keras3_layer;
using test::keras3_sequential;

const std::string kGlorot =
    R"("kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform",
       "config": {"seed": null}, "registered_name": null},
       "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {},
       "registered_name": null}, "kernel_regularizer": null, "bias_regularizer": null,
       "kernel_constraint": null, "bias_constraint": null)";

std::string policy(const std::string& name) {
  return R"({"module": "keras", "class_name": "DTypePolicy", "config": {"name": ")" + name +
         R"("}, "registered_name": null})";
}

std::string dense(const std::string& name, int units, const std::string& activation,
                  const std::string& dtype = policy("float32")) {
  return keras3_layer("Dense", R"("name": ")" + name + R"(", "trainable": true, "dtype": )" +
                                   dtype + R"(, "units": )" + std::to_string(units) +
                                   R"(, "activation": ")" + activation +
                                   R"(", "use_bias": true, )" + kGlorot);
}

std::string input(const std::string& shape) {
  return keras3_layer("InputLayer", R"("batch_shape": [null, )" + shape +
                                        R"(], "dtype": "float32", "sparse": false,
                                        "name": "input_layer")");
}

std::string error_of(const std::string& text) {
  return test::keras_error_of(text, "m.json");
}

TEST(KerasJson, Keras3ConvnetImportsWithItsPolicyAndFloat32Softmax) {
  const std::string mixed = policy("mixed_float16");
  const std::string text = keras3_sequential(
      {input("28, 28, 1"),
       keras3_layer("Rescaling", R"("name": "rescaling", "trainable": true, "dtype": )" + mixed +
                                     R"(, "scale": 0.00392156862745098, "offset": 0.0)"),
       keras3_layer("Conv2D", R"("name": "conv2d", "trainable": true, "dtype": )" + mixed +
                                  R"(, "filters": 16, "kernel_size": [3, 3], "strides": [1, 1],
                                  "padding": "same", "data_format": "channels_last",
                                  "dilation_rate": [1, 1], "groups": 1, "activation": "relu",
                                  "use_bias": true, )" +
                                  kGlorot),
       keras3_layer("MaxPooling2D", R"("name": "max_pooling2d", "trainable": true, "dtype": )" +
                                        mixed + R"(, "pool_size": [2, 2], "padding": "valid",
                                        "strides": [2, 2], "data_format": "channels_last")"),
       keras3_layer("Flatten", R"("name": "flatten", "trainable": true, "dtype": )" + mixed +
                                   R"(, "data_format": "channels_last")"),
       keras3_layer("Dropout", R"("name": "dropout", "trainable": true, "dtype": )" + mixed +
                                   R"(, "rate": 0.25, "seed": null, "noise_shape": null)"),
       dense("classifier", 10, "linear", mixed),
       keras3_layer("Activation", R"("name": "activation", "trainable": true,
                                  "dtype": "float32", "activation": "softmax")")},
      "mixed_float16");
  const ImportedModel model = import_keras_json(text, "m.json");
  EXPECT_EQ(model.format, "Keras 3 JSON");
  ASSERT_TRUE(model.policy.has_value());
  EXPECT_EQ(*model.policy, Policy::mixed_float16);
  EXPECT_TRUE(model.warnings.empty()) << model.warnings.front();
  ModelSpec expected;
  expected.name = "sequential";
  expected.input_shape = {28, 28, 1};
  expected.layers = {test::rescaling(0.00392156862745098),
                     test::conv2d(16, {3, 3}, Padding::same, ActivationFn::relu),
                     test::max_pool(2),
                     test::flatten(),
                     test::dropout(0.25),
                     test::dense(10),
                     test::activation(ActivationFn::softmax, true)};
  expected.layers[5].name = "classifier";  // a name Keras did not make up is kept
  EXPECT_EQ(model.spec, expected);
  EXPECT_EQ(model.keras_names.at(1), "conv2d");
  EXPECT_EQ(model.keras_names.at(5), "classifier");
}

TEST(KerasJson, TfKeras2JsonImports) {
  // TensorFlow <= 2.15: no module / registered_name, batch_input_shape, Policy objects.
  const std::string p = R"({"class_name": "Policy", "config": {"name": "mixed_float16"}})";
  const std::string text = R"({"class_name": "Sequential", "config": {"name": "sequential",
    "layers": [
      {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 32, 32, 3],
       "dtype": "float32", "sparse": false, "ragged": false, "name": "input_1"}},
      {"class_name": "Flatten", "config": {"name": "flatten", "trainable": true, "dtype": )" +
                           p + R"(, "data_format": "channels_last"}},
      {"class_name": "Dense", "config": {"name": "dense", "trainable": true, "dtype": )" +
                           p +
                           R"(, "units": 64, "activation": "relu", "use_bias": true,
       "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}},
       "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": null,
       "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint": null,
       "bias_constraint": null}},
      {"class_name": "Dense", "config": {"name": "dense_1", "trainable": true, "dtype": )" +
                           p +
                           R"(, "units": 10, "activation": "linear", "use_bias": true}},
      {"class_name": "Activation", "config": {"name": "softmax_out", "trainable": true,
       "dtype": "float32", "activation": "softmax"}}]},
    "keras_version": "2.15.0", "backend": "tensorflow"})";
  const ImportedModel model = import_keras_json(text, "tf2.json");
  EXPECT_EQ(model.format, "tf.keras 2 JSON");
  ASSERT_TRUE(model.policy.has_value());
  EXPECT_EQ(*model.policy, Policy::mixed_float16);
  EXPECT_EQ(model.spec.input_shape, (std::vector<std::int64_t>{32, 32, 3}));
  ASSERT_EQ(model.spec.layers.size(), 4U);
  EXPECT_EQ(model.spec.layers[1], test::dense(64, ActivationFn::relu));
  EXPECT_TRUE(model.spec.layers[3].force_float32);
  EXPECT_EQ(model.spec.layers[3].name, "softmax_out");
}

TEST(KerasJson, FirstLayerBatchInputShapeOfTfKeras2) {
  const std::string text = R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "Dense", "config": {"name": "dense", "batch_input_shape": [null, 784],
       "dtype": "float32", "units": 10, "activation": "softmax"}}]}})";
  const ImportedModel model = import_keras_json(text);
  EXPECT_EQ(model.spec.input_shape, (std::vector<std::int64_t>{784}));
  EXPECT_EQ(model.spec.layers.at(0), test::dense(10, ActivationFn::softmax));
  EXPECT_EQ(model.policy, Policy::float32);
}

std::string functional(const std::string& layers, const std::string& out = "dense_1") {
  return R"({"module": "keras", "class_name": "Functional", "config": {"name": "f",
    "trainable": true, "layers": [)" +
         layers + R"(], "input_layers": [["input_layer", 0, 0]],
    "output_layers": [[")" +
         out + R"(", 0, 0]]}, "registered_name": "Functional"})";
}

std::string node(const std::string& from) {
  return R"([{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 8],
    "dtype": "float32", "keras_history": [")" +
         from + R"(", 0, 0]}}], "kwargs": {}}])";
}

std::string fn_layer(const std::string& cls, const std::string& name, const std::string& config,
                     const std::string& inbound) {
  return R"({"module": "keras.layers", "class_name": ")" + cls + R"(", "config": {"name": ")" +
         name + R"(")" + (config.empty() ? "" : ", " + config) +
         R"(}, "registered_name": null, "name": ")" + name + R"(", "inbound_nodes": )" + inbound +
         "}";
}

const std::string kFnInput =
    R"({"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape":
    [null, 8], "dtype": "float32", "sparse": false, "name": "input_layer"},
    "registered_name": null, "name": "input_layer", "inbound_nodes": []})";

TEST(KerasJson, FunctionalChainImports) {
  const std::string text = functional(
      kFnInput + "," +
      fn_layer("Dense", "dense", R"("units": 4, "activation": "relu")", node("input_layer")) + "," +
      fn_layer("Dense", "dense_1", R"("units": 2, "activation": "linear")", node("dense")));
  const ImportedModel model = import_keras_json(text);
  ASSERT_EQ(model.spec.layers.size(), 2U);
  EXPECT_EQ(model.spec.layers[0], test::dense(4, ActivationFn::relu));
  EXPECT_EQ(model.spec.layers[1], test::dense(2));
}

// Keras 3's inbound node of a merge: one argument, the list of its input tensors.
std::string merge_node(const std::vector<std::string>& from) {
  std::string tensors;
  for (const std::string& f : from) {
    tensors += (tensors.empty() ? "" : ", ") +
               std::string(R"({"class_name": "__keras_tensor__", "config": {"keras_history": [")") +
               f + R"(", 0, 0]}})";
  }
  return R"([{"args": [[)" + tensors + R"(]], "kwargs": {}}])";
}

// A residual graph: Dense, Dense, their Add, the output. The file lists the Add before the
// second Dense: MixLab runs each layer after what it reads. A layer that reads the one before it
// needs no "inputs"; the Add names what it reads, which keep their (Keras-made) names; the Add's
// own made-up name goes, and the output's own stays.
TEST(KerasJson, BranchingFunctionalImportsAsAGraph) {
  const std::string text = functional(
      kFnInput + "," + fn_layer("Dense", "dense", R"("units": 8)", node("input_layer")) + "," +
          fn_layer("Add", "add", "", merge_node({"dense", "dense_1"})) + "," +
          fn_layer("Dense", "dense_1", R"("units": 8, "activation": "relu")", node("dense")) + "," +
          fn_layer("Dense", "out", R"("units": 3)", node("add")),
      "out");
  const ImportedModel model = import_keras_json(text);
  ASSERT_EQ(model.spec.layers.size(), 4U);
  const std::vector<std::string> names = {"dense", "dense_1", "", "out"};
  const std::vector<std::vector<std::string>> inputs = {{}, {}, {"dense", "dense_1"}, {}};
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(model.spec.layers[i].name, names[i]) << i;
    EXPECT_EQ(model.spec.layers[i].inputs, inputs[i]) << i;
  }
  EXPECT_EQ(model.spec.layers[2].type, LayerType::Add);
  EXPECT_EQ(model.keras_names, (std::vector<std::string>{"dense", "dense_1", "add", "out"}));
  EXPECT_EQ(infer_shapes(model.spec).output_shape, (Shape{3}));
}

// A graph exports as a functional model, in the order it runs, with made-up Keras names for its
// unnamed layers, and imports back to the same spec.
TEST(KerasJson, AGraphExportsAsFunctionalAndImportsBack) {
  const ModelSpec spec = parse_model_json(R"({"name": "g", "input": {"shape": [6, 6, 2]},
    "layers": [
      {"type": "Conv2D", "filters": 4, "kernel_size": 3, "padding": "same", "name": "a"},
      {"type": "Add", "inputs": ["a", "b"], "name": "skip"},
      {"type": "Conv2D", "filters": 4, "kernel_size": 3, "padding": "same", "name": "b",
       "inputs": ["a"]},
      {"type": "Concatenate", "inputs": ["skip", "input"], "name": "cat"},
      {"type": "Flatten", "inputs": ["cat"]},
      {"type": "Dense", "units": 3, "activation": "softmax"}]})");
  const std::string text = export_keras_json(spec, Policy::mixed_bfloat16);
  const auto root = nlohmann::json::parse(text);
  EXPECT_EQ(root["class_name"], "Functional");
  const auto& layers = root["config"]["layers"];
  ASSERT_EQ(layers.size(), 7U);
  std::vector<std::string> order;
  for (const auto& l : layers) order.push_back(l["name"]);
  EXPECT_EQ(order,
            (std::vector<std::string>{"input_layer", "a", "b", "skip", "cat", "flatten", "dense"}));
  EXPECT_EQ(layers[3]["inbound_nodes"][0]["args"][0][1]["config"]["keras_history"][0], "b");
  EXPECT_EQ(layers[3]["inbound_nodes"][0]["args"][0][1]["config"]["dtype"], "bfloat16");
  EXPECT_EQ(root["config"]["output_layers"][0][0], "dense");

  const ImportedModel back = import_keras_json(text);
  EXPECT_EQ(back.policy, Policy::mixed_bfloat16);
  ModelSpec expected = spec;  // in the order it runs; b reads a, the layer before it
  std::swap(expected.layers[1], expected.layers[2]);
  expected.layers[1].inputs.clear();
  expected.layers[4].inputs.clear();
  EXPECT_EQ(back.spec, expected) << to_json(back.spec);
}

// tf.keras 2 writes a merge's inbound node as [[["a", 0, 0, {}], ["b", 0, 0, {}]]]; Concatenate
// keeps its axis; a layer named "input" is renamed, with a warning.
TEST(KerasJson, TfKeras2ConcatenateGraph) {
  const std::string text = R"({"class_name": "Functional", "config": {"name": "f", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 4], "name": "in"},
     "name": "in", "inbound_nodes": []},
    {"class_name": "Dense", "config": {"name": "input", "units": 3}, "name": "input",
     "inbound_nodes": [[["in", 0, 0, {}]]]},
    {"class_name": "Concatenate", "config": {"name": "cat", "axis": 1}, "name": "cat",
     "inbound_nodes": [[["input", 0, 0, {}], ["in", 0, 0, {}]]]}],
    "input_layers": [["in", 0, 0]], "output_layers": [["cat", 0, 0]]}})";
  const ImportedModel model = import_keras_json(text);
  ASSERT_EQ(model.spec.layers.size(), 2U);
  EXPECT_EQ(model.spec.layers[0].name, "input_layer_1");
  EXPECT_EQ(model.spec.layers[1].inputs, (std::vector<std::string>{"input_layer_1", "input"}));
  EXPECT_EQ(model.spec.layers[1].axis, 1);
  EXPECT_EQ(infer_shapes(model.spec).output_shape, (Shape{7}));
  ASSERT_EQ(model.warnings.size(), 1U);
  EXPECT_NE(model.warnings[0].find("'input' (Dense) is renamed 'input_layer_1'"), std::string::npos)
      << model.warnings[0];
}

// What MixLab cannot import is named: a second input, a shared layer, a cycle, a layer off the
// path to the output, a merge of mismatched shapes (by MixLab's shape inference, in Keras's
// names).
TEST(KerasJson, GraphsMixLabCannotImportAreNamed) {
  const std::string second_input = R"({"class_name": "Functional", "config": {"name": "f",
    "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 8], "name": "input_1"},
     "name": "input_1", "inbound_nodes": []},
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 8], "name": "input_2"},
     "name": "input_2", "inbound_nodes": []},
    {"class_name": "Dense", "config": {"name": "dense", "units": 8}, "name": "dense",
     "inbound_nodes": [[["input_1", 0, 0, {}]]]},
    {"class_name": "Add", "config": {"name": "add"}, "name": "add",
     "inbound_nodes": [[["dense", 0, 0, {}], ["input_2", 0, 0, {}]]]}],
    "input_layers": [["input_1", 0, 0]], "output_layers": [["add", 0, 0]]}})";
  std::string error = error_of(second_input);
  EXPECT_NE(error.find("'input_2' (InputLayer) is a second input (the model's is 'input_1')"),
            std::string::npos)
      << error;

  const std::string dense = fn_layer("Dense", "dense", R"("units": 8)", node("input_layer"));
  std::string shared = dense;
  shared.replace(shared.rfind("]"), 1, ", " + node("input_layer").substr(1));
  error = error_of(functional(kFnInput + "," + shared, "dense"));
  EXPECT_NE(error.find("'dense' (Dense) is called 2 times (a shared layer)"), std::string::npos)
      << error;

  error = error_of(functional(kFnInput + "," +
                              fn_layer("Dense", "dense", R"("units": 8)", node("dense_1")) + "," +
                              fn_layer("Dense", "dense_1", R"("units": 8)", node("dense"))));
  EXPECT_NE(error.find("'dense' (Dense) is on a cycle"), std::string::npos) << error;

  error = error_of(functional(kFnInput + "," + dense + "," +
                              fn_layer("Dense", "side", R"("units": 8)", node("input_layer")) +
                              "," + fn_layer("Dense", "dense_1", R"("units": 8)", node("dense"))));
  EXPECT_NE(error.find("'side' (Dense) is not on a path from the input 'input_layer' to the "
                       "output 'dense_1'"),
            std::string::npos)
      << error;

  error = error_of(functional(
      kFnInput + "," + dense + "," + fn_layer("Subtract", "sub", "", merge_node({"dense"})),
      "sub"));
  EXPECT_NE(error.find("m.json: layer 1 (Subtract) 'sub': reads 2 layers, got 1"),
            std::string::npos)
      << error;

  // Shapes are checked where the model is used, as for every import.
  const ImportedModel mismatched = import_keras_json(
      functional(kFnInput + "," + dense + "," +
                     fn_layer("Dense", "dense_1", R"("units": 4)", node("input_layer")) + "," +
                     fn_layer("Add", "add", "", merge_node({"dense", "dense_1"})),
                 "add"));
  try {
    infer_shapes(mismatched.spec);
    ADD_FAILURE() << "an Add of 8 and 4 features has no shape";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("(Add): adds 8 from 'dense' to 4 from 'dense_1'"),
              std::string::npos)
        << e.what();
  }
}

TEST(KerasJson, LambdaIsRefusedSuggestingRescaling) {
  const std::string text = keras3_sequential(
      {input("4"), keras3_layer("Lambda", R"("name": "lambda", "function": "x / 255")"),
       dense("dense", 2, "linear")});
  const std::string error = error_of(text);
  EXPECT_NE(error.find("m.json: layer 0 'lambda' (Lambda)"), std::string::npos) << error;
  EXPECT_NE(error.find("Rescaling"), std::string::npos) << error;
}

// Issue 29: keras.io's text-classification transformer defines its blocks as Python classes
// without get_config(); the import names them and says how to write them in Keras's layers.
TEST(KerasJson, KerasIoCustomTransformerClassesAreRefusedWithTheirRecipe) {
  std::string error = error_of(keras3_sequential(
      {input("200"), keras3_layer("TokenAndPositionEmbedding", R"("name": "tpe")")}));
  EXPECT_NE(error.find("layer 0 'tpe' (TokenAndPositionEmbedding): keras.io's"), std::string::npos)
      << error;
  EXPECT_NE(error.find("PositionEmbedding(maxlen)"), std::string::npos) << error;
  error = error_of(keras3_sequential(
      {input("200, 32"), keras3_layer("TransformerBlock", R"("name": "block")")}));
  EXPECT_NE(error.find("layer 0 'block' (TransformerBlock): keras.io's"), std::string::npos)
      << error;
  EXPECT_NE(error.find("MultiHeadAttention(num_heads, key_dim=embed_dim)"), std::string::npos)
      << error;
}

TEST(KerasJson, UnsupportedLayerAndUnknownFieldAreNamed) {
  std::string error = error_of(
      keras3_sequential({input("4, 8"), keras3_layer("LSTM", R"("name": "lstm", "units": 4)")}));
  EXPECT_NE(error.find("layer 0 'lstm' (LSTM): MixLab has no LSTM layer"), std::string::npos)
      << error;
  error = error_of(keras3_sequential(
      {input("4"), keras3_layer("Dense", R"("name": "d", "units": 4, "flash_mode": true)")}));
  EXPECT_NE(error.find("layer 0 'd' (Dense): field 'flash_mode' is not one MixLab knows"),
            std::string::npos)
      << error;
  error = error_of(R"({"module": "keras", "class_name": "Sequential", "config": {"layers": []},
                       "quantum": 1})");
  EXPECT_NE(error.find("the model has the field 'quantum'"), std::string::npos) << error;
  error = error_of(keras3_sequential({input("4"), dense("d", 4, "selu")}));
  EXPECT_NE(error.find("activation 'selu' is not one MixLab has"), std::string::npos) << error;
  // Keras's aliases come in under their names.
  EXPECT_EQ(import_keras_json(keras3_sequential({input("4"), dense("d", 4, "swish")}))
                .spec.layers[0]
                .activation,
            ActivationFn::silu);
  EXPECT_EQ(import_keras_json(keras3_sequential({input("4"), dense("d", 4, "hard_swish")}))
                .spec.layers[0]
                .activation,
            ActivationFn::hard_silu);
  error = error_of(keras3_sequential({dense("d", 4, "relu")}));
  EXPECT_NE(error.find("no input shape"), std::string::npos) << error;
  error = error_of(keras3_sequential({input("4"), dense("d", 0, "relu")}));
  EXPECT_NE(error.find("layer 0 (Dense)"), std::string::npos) << error;  // parse_model_json's
  error = error_of(keras3_sequential(
      {input("8, 8, 3"), keras3_layer("Conv2D", R"("name": "c", "filters": 4, "kernel_size": 3,
                                                 "dilation_rate": [2, 2])")}));
  EXPECT_NE(error.find("dilation_rate [2,2] is not supported"), std::string::npos) << error;
  error = error_of(keras3_sequential(
      {input("8, 8, 3"), keras3_layer("Conv2D", R"("name": "c", "filters": 4, "kernel_size": 3,
                                                 "data_format": "channels_first")")}));
  EXPECT_NE(error.find("channels_last (NHWC) only"), std::string::npos) << error;
  EXPECT_NE(error_of("{not json").find("m.json: invalid JSON"), std::string::npos);
}

TEST(KerasJson, NonDefaultInitializersAndRegularizersAreWarnings) {
  const std::string text = keras3_sequential(
      {input("4"),
       keras3_layer("Dense", R"("name": "d", "units": 4, "kernel_initializer": {"module":
         "keras.initializers", "class_name": "HeNormal", "config": {"seed": null}},
         "kernel_regularizer": {"module": "keras.regularizers", "class_name": "L2",
         "config": {"l2": 0.01}}, "trainable": false)")});
  const ImportedModel model = import_keras_json(text);
  ASSERT_EQ(model.warnings.size(), 3U);
  EXPECT_NE(model.warnings[0].find("trainable false"), std::string::npos) << model.warnings[0];
  EXPECT_NE(model.warnings[1].find("kernel_initializer HeNormal is not modelled"),
            std::string::npos)
      << model.warnings[1];
  EXPECT_NE(model.warnings[2].find("kernel_regularizer L2"), std::string::npos)
      << model.warnings[2];
}

// The layers of ResNets and MobileNets as Keras 3 writes them, tf.keras 2's list-valued
// BatchNormalization axis among them.
TEST(KerasJson, BatchNormDepthwiseZeroPaddingAndReshapeImport) {
  const ImportedModel model = import_keras_json(keras3_sequential(
      {input("8, 8, 3"),
       keras3_layer("ZeroPadding2D", R"("name": "pad", "padding": [[0, 1], [1, 2]],
                                       "data_format": "channels_last")"),
       keras3_layer("DepthwiseConv2D", R"("name": "dw", "kernel_size": [3, 3], "strides": [2, 2],
          "padding": "valid", "depth_multiplier": 2, "data_format": "channels_last",
          "dilation_rate": [1, 1], "activation": "relu6", "use_bias": false,
          "depthwise_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform",
                                    "config": {"seed": null}, "registered_name": null},
          "bias_initializer": "zeros", "depthwise_regularizer": null, "bias_regularizer": null,
          "activity_regularizer": null, "depthwise_constraint": null, "bias_constraint": null)"),
       keras3_layer("BatchNormalization", R"("name": "bn", "axis": [3], "momentum": 0.9,
          "epsilon": 1e-05, "center": true, "scale": false, "beta_initializer": "zeros",
          "gamma_initializer": "ones", "moving_mean_initializer": "zeros",
          "moving_variance_initializer": {"module": "keras.initializers", "class_name": "Ones",
                                          "config": {}, "registered_name": null},
          "beta_regularizer": null, "gamma_regularizer": null, "beta_constraint": null,
          "gamma_constraint": null, "synchronized": false)"),
       keras3_layer("Reshape", R"("name": "flat", "target_shape": [-1])")}));
  EXPECT_TRUE(model.warnings.empty()) << model.warnings.front();
  ASSERT_EQ(model.spec.layers.size(), 4U);
  const LayerSpec& pad = model.spec.layers[0];
  EXPECT_EQ(pad.type, LayerType::ZeroPadding2D);
  EXPECT_EQ(pad.zero_padding, (Pad2D{0, 1, 1, 2}));
  const LayerSpec& dw = model.spec.layers[1];
  EXPECT_EQ(dw.type, LayerType::DepthwiseConv2D);
  EXPECT_EQ(dw.depth_multiplier, 2);
  EXPECT_EQ(dw.strides, (Size2{2, 2}));
  EXPECT_EQ(dw.activation, ActivationFn::relu6);
  EXPECT_FALSE(dw.use_bias);
  const LayerSpec& bn = model.spec.layers[2];
  EXPECT_EQ(bn.type, LayerType::BatchNormalization);
  EXPECT_EQ(bn.axis, 3);
  EXPECT_EQ(bn.momentum, 0.9);
  EXPECT_EQ(bn.epsilon, 1e-5);
  EXPECT_TRUE(bn.center);
  EXPECT_FALSE(bn.scale_gamma);
  EXPECT_EQ(model.spec.layers[3].target_shape, (std::vector<std::int64_t>{-1}));
  // 9x11x3 padded, 3x3 stride 2 with 2 per channel: 4x5x6; beta and the two statistics of 6.
  const ShapeTable table = infer_shapes(model.spec);
  EXPECT_EQ(table.layers[1].output_shape, (Shape{4, 5, 6}));
  EXPECT_EQ(table.layers[1].param_count, 3 * 3 * 3 * 2);
  EXPECT_EQ(table.layers[2].param_count, 3 * 6);
  EXPECT_EQ(table.non_trainable_total, 2 * 6);
  EXPECT_EQ(table.output_shape, (Shape{120}));

  // Renormalization and a synchronized layer are Keras features MixLab does not model: named.
  const std::string error = error_of(keras3_sequential(
      {input("4"), keras3_layer("BatchNormalization", R"("name": "b", "renorm": true)")}));
  EXPECT_NE(error.find("'b' (BatchNormalization): renorm true is not supported"), std::string::npos)
      << error;
}

TEST(KerasJson, KerasSpellingsOfActivations) {
  const std::string text =
      keras3_sequential({input("4"), keras3_layer("ReLU", R"("name": "r", "max_value": null,
                                         "negative_slope": 0.0, "threshold": 0.0)"),
                         keras3_layer("Dense", R"("name": "d", "units": 3, "activation": {"module":
         "keras.activations", "class_name": "function", "config": "tanh",
         "registered_name": "function"})"),
                         keras3_layer("Softmax", R"("name": "s", "axis": -1)")});
  const ImportedModel model = import_keras_json(text);
  ASSERT_EQ(model.spec.layers.size(), 3U);
  EXPECT_EQ(model.spec.layers[0].activation, ActivationFn::relu);
  EXPECT_EQ(model.spec.layers[0].type, LayerType::Activation);
  EXPECT_EQ(model.spec.layers[1].activation, ActivationFn::tanh);
  EXPECT_EQ(model.spec.layers[2].activation, ActivationFn::softmax);
  // With arguments, Keras's ReLU layer; LeakyReLU is one too (Keras 3's default slope 0.3).
  const ImportedModel relu6 = import_keras_json(
      keras3_sequential({input("4"), keras3_layer("ReLU", R"("name": "r6", "max_value": 6.0)"),
                         keras3_layer("LeakyReLU", R"("name": "leaky")"),
                         keras3_layer("LeakyReLU", R"("name": "leaky2", "negative_slope": 0.1)")}));
  ASSERT_EQ(relu6.spec.layers.size(), 3U);
  EXPECT_EQ(relu6.spec.layers[0].type, LayerType::ReLU);
  EXPECT_EQ(relu6.spec.layers[0].max_value, 6.0);
  EXPECT_EQ(relu6.spec.layers[1].type, LayerType::ReLU);
  EXPECT_EQ(relu6.spec.layers[1].negative_slope, 0.3);
  EXPECT_EQ(relu6.spec.layers[2].negative_slope, 0.1);
  const std::string error = error_of(keras3_sequential(
      {input("4"), keras3_layer("ReLU", R"("name": "r", "negative_slope": -1.0)")}));
  EXPECT_NE(error.find("negative_slope -1 must be >= 0"), std::string::npos) << error;
}

TEST(KerasJson, ExportImportsBackToTheSameSpecForEveryBuiltin) {
  for (const auto name : builtin_model_names()) {
    const ModelSpec spec = parse_model_json(*builtin_model_json(name));
    for (const Policy p : {Policy::float32, Policy::mixed_float16, Policy::mixed_bfloat16}) {
      const std::string text = export_keras_json(spec, p);
      ASSERT_TRUE(is_keras_json(text));
      const ImportedModel back = import_keras_json(text, name);
      EXPECT_EQ(to_json(back.spec), to_json(spec)) << name << " " << to_string(p);
      EXPECT_EQ(back.policy, p) << name;
      EXPECT_TRUE(back.warnings.empty()) << back.warnings.front();
    }
  }
}

TEST(KerasJson, MixLabJsonIsNotKerasJson) {
  EXPECT_FALSE(is_keras_json(*builtin_model_json("fashion-mlp")));
  EXPECT_FALSE(is_keras_json("{broken"));
}

}  // namespace
}  // namespace mixlab
