// parse_model_json: every field, every default, and the enum name tables.
#include <gtest/gtest.h>

#include <string>

#include "engine/spec/layer_text.h"
#include "engine/spec/model_spec.h"

namespace mixlab {
namespace {

// A model around one layer; the input is an image so that every layer type is parsed.
ModelSpec parse_one(const std::string& layer_json) {
  return parse_model_json(R"({"input": {"shape": [8, 8, 3]}, "layers": [)" + layer_json + "]}");
}

LayerSpec parse_layer(const std::string& layer_json) {
  ModelSpec spec = parse_one(layer_json);
  EXPECT_EQ(spec.layers.size(), 1u);
  return spec.layers.at(0);
}

TEST(ParseModel, TopLevelDefaults) {
  const ModelSpec spec = parse_one(R"({"type": "Flatten"})");
  EXPECT_EQ(spec.name, "model");
  EXPECT_EQ(spec.input_shape, (std::vector<std::int64_t>{8, 8, 3}));
  EXPECT_EQ(spec.loss, LossKind::sparse_categorical_crossentropy);
  ASSERT_EQ(spec.layers.size(), 1u);
  EXPECT_EQ(spec.layers[0].type, LayerType::Flatten);
}

TEST(ParseModel, TopLevelFields) {
  const ModelSpec spec = parse_model_json(R"({
    "name": "net", "input": {"shape": [784]}, "loss": "binary_crossentropy",
    "layers": [{"type": "Dense", "units": 1}, {"type": "Activation", "activation": "sigmoid"}]})");
  EXPECT_EQ(spec.name, "net");
  EXPECT_EQ(spec.input_shape, (std::vector<std::int64_t>{784}));
  EXPECT_EQ(spec.loss, LossKind::binary_crossentropy);
  ASSERT_EQ(spec.layers.size(), 2u);
  EXPECT_EQ(spec.layers[0].type, LayerType::Dense);
  EXPECT_EQ(spec.layers[1].type, LayerType::Activation);
}

TEST(ParseModel, EveryLoss) {
  for (auto [name, loss] :
       {std::pair{"sparse_categorical_crossentropy", LossKind::sparse_categorical_crossentropy},
        std::pair{"categorical_crossentropy", LossKind::categorical_crossentropy},
        std::pair{"binary_crossentropy", LossKind::binary_crossentropy}}) {
    const ModelSpec spec =
        parse_model_json(std::string(R"({"input": {"shape": [4]}, "loss": ")") + name +
                         R"(", "layers": [{"type": "Dense", "units": 2}]})");
    EXPECT_EQ(spec.loss, loss) << name;
  }
}

TEST(ParseModel, DenseDefaults) {
  const LayerSpec l = parse_layer(R"({"type": "Dense", "units": 7})");
  EXPECT_EQ(l.type, LayerType::Dense);
  EXPECT_EQ(l.units, 7);
  EXPECT_EQ(l.activation, ActivationFn::linear);
  EXPECT_TRUE(l.use_bias);
  EXPECT_EQ(l.name, "");
  EXPECT_FALSE(l.force_float32);
}

TEST(ParseModel, DenseAllFields) {
  const LayerSpec l = parse_layer(
      R"({"type": "Dense", "name": "fc1", "units": 3000, "activation": "relu",
          "use_bias": false, "dtype": "float32"})");
  EXPECT_EQ(l.name, "fc1");
  EXPECT_EQ(l.units, 3000);
  EXPECT_EQ(l.activation, ActivationFn::relu);
  EXPECT_FALSE(l.use_bias);
  EXPECT_TRUE(l.force_float32);
}

// "bfloat16" (or Keras's "mixed_bfloat16") keeps a layer out of FP8; it is written back as
// "bfloat16" and shown in the layer's title.
TEST(ParseModel, DtypeBfloat16KeepsALayerOutOfFp8) {
  for (const char* dtype : {"bfloat16", "mixed_bfloat16"}) {
    const LayerSpec l =
        parse_layer(std::string(R"({"type": "Dense", "units": 7, "dtype": ")") + dtype + "\"}");
    EXPECT_TRUE(l.force_bfloat16) << dtype;
    EXPECT_FALSE(l.force_float32) << dtype;
  }
  const ModelSpec spec = parse_model_json(R"({"name": "m", "input": {"shape": [4]}, "layers": [
      {"type": "Dense", "units": 7, "dtype": "mixed_bfloat16"}]})",
                                          "test");
  const std::string text = to_json(spec, -1);
  EXPECT_NE(text.find(R"("dtype":"bfloat16")"), std::string::npos) << text;
  EXPECT_EQ(parse_model_json(text, "again"), spec);
  EXPECT_EQ(layer_title(spec, 0), "0 Dense 7, bfloat16");
}

TEST(ParseModel, Conv2DDefaults) {
  const LayerSpec l = parse_layer(R"({"type": "Conv2D", "filters": 16, "kernel_size": 3})");
  EXPECT_EQ(l.type, LayerType::Conv2D);
  EXPECT_EQ(l.filters, 16);
  EXPECT_EQ(l.kernel_size, (Size2{3, 3}));  // an integer means n x n
  EXPECT_EQ(l.strides, (Size2{1, 1}));
  EXPECT_EQ(l.padding, Padding::valid);
  EXPECT_EQ(l.activation, ActivationFn::linear);
  EXPECT_TRUE(l.use_bias);
}

TEST(ParseModel, Conv2DAllFields) {
  const LayerSpec l = parse_layer(
      R"({"type": "Conv2D", "name": "c", "filters": 8, "kernel_size": [3, 5], "strides": [2, 1],
          "padding": "same", "activation": "gelu", "use_bias": false, "dtype": "float32"})");
  EXPECT_EQ(l.name, "c");
  EXPECT_EQ(l.filters, 8);
  EXPECT_EQ(l.kernel_size, (Size2{3, 5}));
  EXPECT_EQ(l.strides, (Size2{2, 1}));
  EXPECT_EQ(l.padding, Padding::same);
  EXPECT_EQ(l.activation, ActivationFn::gelu);
  EXPECT_FALSE(l.use_bias);
  EXPECT_TRUE(l.force_float32);
  EXPECT_EQ(
      parse_layer(R"({"type": "Conv2D", "filters": 1, "kernel_size": 2, "strides": 2})").strides,
      (Size2{2, 2}));
}

TEST(ParseModel, PoolingDefaultsFollowKeras) {
  for (const char* type : {"MaxPooling2D", "AveragePooling2D"}) {
    const LayerSpec l = parse_layer(std::string(R"({"type": ")") + type + R"("})");
    EXPECT_EQ(l.type, *parse_layer_type(type));
    EXPECT_EQ(l.pool_size, (Size2{2, 2})) << type;
    EXPECT_EQ(l.strides, (Size2{2, 2})) << type << ": strides default to pool_size";
    EXPECT_EQ(l.padding, Padding::valid) << type;
  }
  // strides omitted or null: the pool size, whatever it is.
  EXPECT_EQ(parse_layer(R"({"type": "MaxPooling2D", "pool_size": 3})").strides, (Size2{3, 3}));
  EXPECT_EQ(
      parse_layer(R"({"type": "MaxPooling2D", "pool_size": [3, 2], "strides": null})").strides,
      (Size2{3, 2}));
}

TEST(ParseModel, PoolingAllFields) {
  const LayerSpec l = parse_layer(
      R"({"type": "AveragePooling2D", "name": "p", "pool_size": [3, 2], "strides": [1, 2],
          "padding": "same", "dtype": "float32"})");
  EXPECT_EQ(l.type, LayerType::AveragePooling2D);
  EXPECT_EQ(l.name, "p");
  EXPECT_EQ(l.pool_size, (Size2{3, 2}));
  EXPECT_EQ(l.strides, (Size2{1, 2}));
  EXPECT_EQ(l.padding, Padding::same);
  EXPECT_TRUE(l.force_float32);
}

TEST(ParseModel, FlattenDropoutActivationRescaling) {
  const LayerSpec f = parse_layer(R"({"type": "Flatten", "name": "flat"})");
  EXPECT_EQ(f.type, LayerType::Flatten);
  EXPECT_EQ(f.name, "flat");

  EXPECT_DOUBLE_EQ(parse_layer(R"({"type": "Dropout", "rate": 0.2})").rate, 0.2);
  EXPECT_EQ(parse_layer(R"({"type": "Dropout", "rate": 0})").rate, 0.0);  // integer JSON is fine

  const LayerSpec a = parse_layer(R"({"type": "Activation", "activation": "tanh"})");
  EXPECT_EQ(a.type, LayerType::Activation);
  EXPECT_EQ(a.activation, ActivationFn::tanh);

  const LayerSpec r = parse_layer(R"({"type": "Rescaling", "scale": 0.00392156862745098})");
  EXPECT_EQ(r.scale, 1.0 / 255);  // exactly: the shortest text of 1/255 reads back as it
  EXPECT_EQ(r.offset, 0.0);
  const LayerSpec r2 = parse_layer(R"({"type": "Rescaling", "scale": 2, "offset": -1.5})");
  EXPECT_EQ(r2.scale, 2.0);
  EXPECT_EQ(r2.offset, -1.5);
}

TEST(ParseModel, EveryActivationName) {
  for (ActivationFn fn : {ActivationFn::linear, ActivationFn::relu, ActivationFn::sigmoid,
                          ActivationFn::tanh, ActivationFn::gelu, ActivationFn::softmax}) {
    const std::string name(to_string(fn));
    EXPECT_EQ(parse_layer(R"({"type": "Activation", "activation": ")" + name + "\"}").activation,
              fn)
        << name;
    EXPECT_EQ(
        parse_layer(R"({"type": "Dense", "units": 1, "activation": ")" + name + "\"}").activation,
        fn)
        << name;
  }
}

TEST(ParseModel, WholeNumberFloatsCountAsIntegers) {
  // 16.0 and 1e2 are whole numbers (Python's json writes floats so); 2.5 is not (see errors).
  EXPECT_EQ(parse_layer(R"({"type": "Dense", "units": 16.0})").units, 16);
  EXPECT_EQ(parse_layer(R"({"type": "Dense", "units": 1e2})").units, 100);
  EXPECT_EQ(parse_layer(R"({"type": "Conv2D", "filters": 2, "kernel_size": [3.0, 1]})").kernel_size,
            (Size2{3, 1}));
  EXPECT_EQ(
      parse_model_json(R"({"input": {"shape": [28.0, 28, 1]}, "layers": [{"type": "Flatten"}]})")
          .input_shape,
      (std::vector<std::int64_t>{28, 28, 1}));
}

TEST(ParseModel, LargestIntegerAccepted) {
  EXPECT_EQ(parse_layer(R"({"type": "Dense", "units": 2147483647})").units, 2147483647);
}

TEST(ParseModel, EnumNamesRoundTrip) {
  for (LayerType t :
       {LayerType::Dense, LayerType::Conv2D, LayerType::MaxPooling2D, LayerType::AveragePooling2D,
        LayerType::Flatten, LayerType::Dropout, LayerType::Activation, LayerType::Rescaling}) {
    EXPECT_EQ(parse_layer_type(to_string(t)), t);
  }
  for (ActivationFn f : {ActivationFn::linear, ActivationFn::relu, ActivationFn::sigmoid,
                         ActivationFn::tanh, ActivationFn::gelu, ActivationFn::softmax}) {
    EXPECT_EQ(parse_activation(to_string(f)), f);
  }
  for (LossKind l : {LossKind::sparse_categorical_crossentropy, LossKind::categorical_crossentropy,
                     LossKind::binary_crossentropy}) {
    EXPECT_EQ(parse_loss(to_string(l)), l);
  }
  EXPECT_EQ(to_string(Padding::valid), "valid");
  EXPECT_EQ(to_string(Padding::same), "same");
  EXPECT_EQ(to_string(LayerType::MaxPooling2D), "MaxPooling2D");
  EXPECT_EQ(parse_layer_type("dense"), std::nullopt);  // names are case-sensitive, as in Keras
  EXPECT_EQ(parse_layer_type("Conv3D"), std::nullopt);
  EXPECT_EQ(parse_activation("ReLU"), std::nullopt);
  EXPECT_EQ(parse_loss("mse"), std::nullopt);
}

TEST(ParseModel, KeyOrderDoesNotMatter) {
  const ModelSpec a = parse_model_json(
      R"({"layers": [{"units": 3, "activation": "relu", "type": "Dense"}], "input": {"shape": [2]}})");
  const ModelSpec b = parse_model_json(
      R"({"input": {"shape": [2]}, "layers": [{"type": "Dense", "units": 3, "activation": "relu"}]})");
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace mixlab
