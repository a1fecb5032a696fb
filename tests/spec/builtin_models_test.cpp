// The example models: the files say what the brief asks, every one is embedded (and up to date)
// in mixlab_resources, and every one parses and passes shape inference.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "engine/spec/model_spec.h"
#include "engine/spec/shape_inference.h"
#include "resources/builtin_models.h"
#include "tests/spec/example_specs.h"
#include "tests/test_paths.h"

namespace mixlab {
namespace {

std::vector<std::string> model_files_on_disk() {
  std::vector<std::string> stems;
  for (const auto& entry :
       std::filesystem::directory_iterator(mixlab::test::source_dir() + "/resources/models")) {
    if (entry.path().extension() == ".json") stems.push_back(entry.path().stem().string());
  }
  std::sort(stems.begin(), stems.end());
  return stems;
}

TEST(BuiltinModels, NamesAreTheFileStemsSorted) {
  const std::vector<std::string_view> names = builtin_model_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.end()), model_files_on_disk());
  for (const char* expected : {"cifar10-mlp", "cifar100-convnet", "fashion-cnn", "fashion-mlp"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
}

TEST(BuiltinModels, EmbeddedTextIsTheFile) {
  for (const std::string& stem : model_files_on_disk()) {
    const auto json = builtin_model_json(stem);
    ASSERT_TRUE(json.has_value()) << stem;
    EXPECT_EQ(*json, test::read_source_file("resources/models/" + stem + ".json")) << stem;
  }
}

TEST(BuiltinModels, UnknownNames) {
  EXPECT_EQ(builtin_model_json("no-such-model"), std::nullopt);
  EXPECT_EQ(builtin_model_json("fashion"), std::nullopt);
  EXPECT_EQ(builtin_model_json("fashion-cnn.json"), std::nullopt);
  EXPECT_EQ(builtin_model_json(""), std::nullopt);
}

TEST(BuiltinModels, EveryModelParsesAndHasAShapeTable) {
  for (std::string_view name : builtin_model_names()) {
    SCOPED_TRACE(std::string(name));
    const ModelSpec spec = parse_model_json(*builtin_model_json(name), name);
    EXPECT_EQ(spec.name, name);  // each file names its model after itself
    for (Policy policy : {Policy::float32, Policy::mixed_float16, Policy::mixed_bfloat16}) {
      const ShapeTable table = infer_shapes(spec, policy);
      // A label per sample, or per step (tiny-gpt, a language model).
      EXPECT_EQ(table.output_shape.size(), table.label_positions() > 1 ? 2u : 1u);
      EXPECT_GT(table.params_total, 0);
    }
    // The file on disk reads the same through load_model_file.
    EXPECT_EQ(load_model_file(mixlab::test::source_dir() + "/resources/models/" +
                              std::string(name) + ".json"),
              spec);
  }
}

TEST(BuiltinModels, ExamplesAreTheModelsAsked) {
  EXPECT_EQ(parse_model_json(*builtin_model_json("fashion-mlp")), test::fashion_mlp_spec());
  EXPECT_EQ(parse_model_json(*builtin_model_json("fashion-cnn")), test::fashion_cnn_spec());
  EXPECT_EQ(parse_model_json(*builtin_model_json("cifar10-mlp")), test::cifar10_mlp_spec());
  EXPECT_EQ(parse_model_json(*builtin_model_json("cifar100-convnet")),
            test::cifar100_convnet_spec());
}

TEST(BuiltinModels, FashionCnnIsTheDocumentedExample) {
  // model_spec.h and the brief show this file as the format's example; keep it byte for byte.
  EXPECT_EQ(*builtin_model_json("fashion-cnn"),
            R"({"name": "fashion-cnn", "input": {"shape": [28, 28, 1]},
 "loss": "sparse_categorical_crossentropy",
 "layers": [
   {"type": "Rescaling", "scale": 0.00392156862745098},
   {"type": "Conv2D", "filters": 16, "kernel_size": [3, 3], "padding": "same", "activation": "relu"},
   {"type": "MaxPooling2D", "pool_size": 2},
   {"type": "Flatten"},
   {"type": "Dense", "units": 128, "activation": "relu"},
   {"type": "Dense", "units": 10},
   {"type": "Activation", "activation": "softmax", "dtype": "float32"}]}
)");
}

}  // namespace
}  // namespace mixlab
