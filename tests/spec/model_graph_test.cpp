// Models as graphs (issue 27): a layer names the layers it reads; merges join them. The graph
// resolves to an order in which each layer runs after what it reads; every broken rule is a
// SpecError naming the layer and the edge.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/spec/model_graph.h"
#include "engine/spec/model_spec.h"
#include "engine/spec/shape_inference.h"
#include "tests/cpu/layers.h"

namespace mixlab {
namespace {

using namespace test_layers;

ModelSpec residual() {
  ModelSpec spec = residual_convnet({8, 8, 4});
  return spec;
}

std::string error_of(const ModelSpec& spec) {
  try {
    infer_shapes(spec);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelGraph, AStackReadsTheLayerBeforeEachAndRunsInFileOrder) {
  ModelSpec spec;
  spec.input_shape = {6};
  spec.layers = {dense(4), dense(3), activation(ActivationFn::softmax)};
  const ModelGraph g = resolve_graph(spec);
  EXPECT_TRUE(g.is_chain());
  EXPECT_EQ(g.order, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(g.inputs[0], (std::vector<int>{kModelInput}));
  EXPECT_EQ(g.inputs[2], (std::vector<int>{1}));
  EXPECT_EQ(g.output, 2);
}

TEST(ModelGraph, AResidualAddReadsBothBranchesAndTheTableFollowsTheEdges) {
  const ModelSpec spec = residual();
  const ModelGraph g = resolve_graph(spec);
  EXPECT_FALSE(g.is_chain());
  EXPECT_EQ(g.inputs[2], (std::vector<int>{0, 1}));
  EXPECT_EQ(g.readers[0], (std::vector<int>{1, 2}));
  const ShapeTable t = infer_shapes(spec, Policy::mixed_bfloat16);
  EXPECT_EQ(t.layers[2].output_shape, (Shape{8, 8, 4}));
  EXPECT_EQ(t.layers[2].inputs, (std::vector<int>{0, 1}));
  EXPECT_EQ(t.layers[2].flops, 8 * 8 * 4);  // one add per element
  EXPECT_EQ(t.layers[2].compute, DType::bf16);
  EXPECT_EQ(t.output_shape, (Shape{3}));
  EXPECT_EQ(t.order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(ModelGraph, FileOrderNeedNotBeRunOrder) {
  ModelSpec spec = residual();
  // conv_b before conv_a in the file: it reads conv_a, so it runs after it.
  std::swap(spec.layers[0], spec.layers[1]);
  spec.layers[0].inputs = {"conv_a"};
  spec.layers[1].inputs = {"input"};
  const ShapeTable t = infer_shapes(spec);
  EXPECT_EQ(t.order, (std::vector<int>{1, 0, 2, 3, 4}));
}

TEST(ModelGraph, ConcatenateJoinsAlongTheAxisAndChecksTheOthers) {
  ModelSpec spec;
  spec.input_shape = {8, 8, 3};
  spec.layers = {named(conv(5, {1, 1}, {1, 1}, Padding::valid), "left", {"input"}),
                 named(conv(7, {1, 1}, {1, 1}, Padding::valid), "right", {"input"}),
                 named(merge(LayerType::Concatenate, {"left", "right"}), "cat"),
                 simple(LayerType::Flatten), dense(2)};
  const ShapeTable t = infer_shapes(spec);
  EXPECT_EQ(t.layers[2].output_shape, (Shape{8, 8, 12}));
  spec.layers[2].axis = 1;  // rows: the channels then disagree
  EXPECT_NE(error_of(spec).find("layer 2 (Concatenate) 'cat': concatenates 8x8x5 from 'left' "
                                "and 8x8x7 from 'right': its inputs must agree on every axis "
                                "but axis 1"),
            std::string::npos)
      << error_of(spec);
  spec.layers[2].axis = 4;
  EXPECT_NE(error_of(spec).find("axis 4 is out of range"), std::string::npos) << error_of(spec);
  spec.layers[2].axis = 0;
  EXPECT_NE(error_of(spec).find("axis 0 is the batch"), std::string::npos) << error_of(spec);
}

TEST(ModelGraph, EveryBrokenRuleNamesTheLayerAndTheEdge) {
  // Inputs of two shapes: the issue's example message.
  ModelSpec shapes;
  shapes.input_shape = {32, 32, 3};
  shapes.layers = {named(conv(64, {3, 3}, {1, 1}, Padding::same), "conv_7"),
                   named(pool(LayerType::MaxPooling2D, {2, 2}, {2, 2}, Padding::valid), "pool_2"),
                   named(merge(LayerType::Add, {"conv_7", "pool_2"}), "add_3"),
                   simple(LayerType::Flatten), dense(2)};
  EXPECT_NE(error_of(shapes).find("layer 2 (Add) 'add_3': adds 32x32x64 from 'conv_7' to "
                                  "16x16x64 from 'pool_2'"),
            std::string::npos)
      << error_of(shapes);

  ModelSpec spec = residual();
  spec.layers[2].inputs = {"conv_a", "conv_c"};
  EXPECT_NE(error_of(spec).find("layer 2 (Add) 'add': reads 'conv_c', but no layer has that name"),
            std::string::npos)
      << error_of(spec);

  spec = residual();
  spec.layers[1].name = "conv_a";
  EXPECT_NE(error_of(spec).find("layer 1 (Conv2D) 'conv_a': the name 'conv_a' is already layer "
                                "0's"),
            std::string::npos)
      << error_of(spec);

  spec = residual();
  spec.layers[0].name = "input";
  EXPECT_NE(error_of(spec).find("the name 'input' is the model's input's"), std::string::npos)
      << error_of(spec);

  spec = residual();
  spec.layers[2].inputs = {"conv_a"};
  EXPECT_NE(error_of(spec).find("layer 2 (Add) 'add': reads 2 or more layers, got 1"),
            std::string::npos)
      << error_of(spec);

  spec = residual();
  spec.layers[2].inputs.clear();
  EXPECT_NE(error_of(spec).find("name them in \"inputs\""), std::string::npos) << error_of(spec);

  spec = residual();
  spec.layers[1].inputs = {"conv_a", "add"};  // a Conv2D reads one layer
  EXPECT_NE(error_of(spec).find("layer 1 (Conv2D) 'conv_b': reads 1 layer, got 2"),
            std::string::npos)
      << error_of(spec);

  spec = residual();
  spec.layers[0].inputs = {"add"};  // conv_a -> conv_b -> add -> conv_a
  EXPECT_NE(error_of(spec).find("layers read each other in a cycle: 'add' -> 'conv_a' -> "
                                "'add'"),
            std::string::npos)
      << error_of(spec);

  spec = residual();
  spec.layers.insert(spec.layers.begin() + 2, named(dense(4), "dangling", {"conv_b"}));
  EXPECT_NE(error_of(spec).find("layer 2 (Dense) 'dangling': its output reaches nothing"),
            std::string::npos)
      << error_of(spec);

  spec = residual();
  spec.layers[3].inputs = {"dense_out"};
  spec.layers[4].name = "dense_out";
  spec.layers[4].inputs = {"add"};
  EXPECT_NE(error_of(spec).find("is the model's output (the last layer), but layer 3 reads it"),
            std::string::npos)
      << error_of(spec);

  spec = residual();
  spec.layers[2].type = LayerType::Subtract;
  spec.layers[2].inputs = {"conv_a", "conv_b", "conv_a"};
  EXPECT_NE(error_of(spec).find("reads 2 layers, got 3"), std::string::npos) << error_of(spec);
}

TEST(ModelGraph, AGraphFileReadsAndWritesItsEdges) {
  const std::string text = R"({"name": "r", "input": {"shape": [6]}, "layers": [
      {"type": "Dense", "name": "a", "units": 4},
      {"type": "Dense", "name": "b", "units": 4, "inputs": ["input"]},
      {"type": "Concatenate", "name": "cat", "inputs": ["a", "b"], "axis": 1},
      {"type": "Dense", "units": 2}]})";
  const ModelSpec spec = parse_model_json(text, "r.json");
  EXPECT_EQ(spec.layers[1].inputs, (std::vector<std::string>{"input"}));
  EXPECT_EQ(spec.layers[2].axis, 1);
  EXPECT_EQ(parse_model_json(to_json(spec)), spec);
  EXPECT_EQ(infer_shapes(spec).layers[2].output_shape, (Shape{8}));
  EXPECT_THROW(parse_model_json(R"({"input": {"shape": [6]}, "layers": [
      {"type": "Dense", "units": 4, "inputs": "a"}]})"),
               SpecError);
  EXPECT_THROW(parse_model_json(R"({"input": {"shape": [6]}, "layers": [
      {"type": "Add", "inputs": [], "units": 3}]})"),
               SpecError);
}

}  // namespace
}  // namespace mixlab
