// The plan of a graph (issue 27): nodes read the nodes their layer's inputs end in, merges get a
// cast per input in another dtype, and the backward schedule sums a branch point's gradients and
// reuses gradient buffers once their tensor's producer has read them. A chain's plan keeps the
// two gradient buffers it always had.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "engine/plan/execution_plan.h"
#include "engine/spec/shape_inference.h"
#include "resources/builtin_models.h"
#include "tests/cpu/layers.h"

namespace mixlab {
namespace {

using namespace test_layers;

ModelSpec residual() {
  ModelSpec spec = residual_convnet({6, 6, 2});
  spec.layers.push_back(activation(ActivationFn::softmax, true));
  return spec;
}

int node_of_layer(const ExecutionPlan& plan, int layer) {
  return plan.layer_last_node[static_cast<std::size_t>(layer)];
}

TEST(GraphPlan, NodesReadTheirLayersInputsAndTheBranchPointSumsItsGradients) {
  const ModelSpec spec = residual();
  const ExecutionPlan plan =
      build_plan(spec, infer_shapes(spec), 4, OptimizerConfig{}, LoweringRules{});
  const int conv_a = node_of_layer(plan, 0), conv_b = node_of_layer(plan, 1);
  const int add = node_of_layer(plan, 2);
  const PlanNode& merge_node = plan.nodes[static_cast<std::size_t>(add)];
  ASSERT_EQ(merge_node.op, PlanOp::merge);
  EXPECT_EQ(merge_node.merge, MergeOp::add);
  ASSERT_EQ(merge_node.inputs.size(), 2U);
  EXPECT_EQ(merge_node.inputs[0].node, conv_a);
  EXPECT_EQ(merge_node.inputs[1].node, conv_b);
  // conv_b's input is conv_a's activation node's output: conv_a is read twice (by conv_b and
  // the add). Backward reaches it from the add first (written), then from conv_b (added).
  const PlanNode& conv_b_node = plan.nodes[static_cast<std::size_t>(conv_b)];
  EXPECT_EQ(conv_b_node.input(), conv_a);
  EXPECT_FALSE(merge_node.inputs[0].accumulate);
  EXPECT_TRUE(conv_b_node.inputs[0].accumulate);
  EXPECT_GE(plan.grad_scratch, 0);
  // Every node from the first Conv2D on runs backward; the first Conv2D needs no input gradient.
  for (const PlanNode& n : plan.nodes) EXPECT_TRUE(n.backward) << n.label;
  EXPECT_FALSE(plan.nodes.front().inputs[0].grad);
  EXPECT_EQ(plan.input_grad, -1);
  // Live at once during the add's backward: its own gradient and its two inputs' (then the
  // scratch): four buffers, each the largest tensor.
  EXPECT_EQ(plan.gradient_buffers, 4);
  std::int64_t gradient_bytes = 0;
  for (const PlanBuffer& b : plan.buffers) {
    if (b.role == BufferRole::activation_gradient) gradient_bytes += b.bytes();
  }
  EXPECT_EQ(gradient_bytes, 4 * plan.max_tensor_elements * 4);
}

TEST(GraphPlan, AChainKeepsTwoGradientBuffersAndNoScratch) {
  ModelSpec spec;
  spec.input_shape = {5};
  spec.layers = {dense(8, ActivationFn::relu), dense(8), dense(3),
                 activation(ActivationFn::softmax)};
  const ExecutionPlan plan = build_plan(spec, infer_shapes(spec), 2, OptimizerConfig{});
  EXPECT_EQ(plan.gradient_buffers, 2);
  EXPECT_EQ(plan.grad_scratch, -1);
  for (std::size_t k = 1; k < plan.nodes.size(); ++k) {
    EXPECT_EQ(plan.nodes[k].input(), static_cast<int>(k) - 1);
  }
  // A fused softmax head: the loss reads the last Dense.
  EXPECT_EQ(plan.loss_node, static_cast<int>(plan.nodes.size()) - 2);
}

TEST(GraphPlan, AMergeCastsEachInputToItsDtypeAndTheInputGradientIsPlannedWhenAsked) {
  ModelSpec spec;
  spec.input_shape = {6};
  LayerSpec f32_branch = dense(4);
  f32_branch.force_float32 = true;
  spec.layers = {named(dense(4), "low", {"input"}), named(f32_branch, "high", {"input"}),
                 named(merge(LayerType::Concatenate, {"low", "high"}), "cat"), dense(2)};
  const ShapeTable table = infer_shapes(spec, Policy::mixed_bfloat16);
  const ExecutionPlan plan = build_plan(spec, table, 2, OptimizerConfig{}, LoweringRules{}, true);
  const PlanNode& cat = plan.nodes[static_cast<std::size_t>(node_of_layer(plan, 2))];
  ASSERT_EQ(cat.op, PlanOp::merge);
  EXPECT_EQ(cat.merge, MergeOp::concatenate);
  EXPECT_EQ(cat.axis, 0);
  EXPECT_EQ(cat.out_dtype, DType::bf16);
  // The float32 branch reaches the bfloat16 merge through a cast of its own.
  const PlanNode& cast = plan.nodes[static_cast<std::size_t>(cat.inputs[1].node)];
  EXPECT_EQ(cast.op, PlanOp::cast);
  EXPECT_EQ(cast.in_dtype, DType::f32);
  EXPECT_EQ(cast.out_dtype, DType::bf16);
  // Both Dense layers read the batch: its gradient is planned, the second reader's added.
  EXPECT_GE(plan.input_grad, 0);
  int accumulated = 0;
  for (const PlanNode& n : plan.nodes) {
    for (const PlanInput& in : n.inputs) {
      if (in.node == kPlanInput) accumulated += in.accumulate ? 1 : 0;
    }
  }
  EXPECT_EQ(accumulated, 1);
}

// The CUDA lowering fuses each plain ReLU into the BatchNormalization or Add it alone reads:
// resnet20's 10 BatchNormalization + ReLU pairs (the stem's and each block's first) and 9 Add +
// ReLU pairs lose their activation node; a BatchNormalization read by an Add keeps its output.
// The CPU lowering fuses nothing.
TEST(GraphPlan, CudaFusesReluIntoBatchNormalizationAndAdd) {
  const ModelSpec spec = parse_model_json(*builtin_model_json("resnet20"), "resnet20");
  for (const Policy policy : {Policy::float32, Policy::mixed_float16}) {
    const ShapeTable table = infer_shapes(spec, policy);
    const ExecutionPlan cpu = build_plan(spec, table, 8, OptimizerConfig{}, kCpuLowering);
    const ExecutionPlan cuda = build_plan(spec, table, 8, OptimizerConfig{}, kCudaLowering);
    EXPECT_EQ(std::count(cpu.layer_fused.begin(), cpu.layer_fused.end(), true), 0);
    int bn_relu = 0, add_relu = 0;
    for (std::size_t li = 0; li < spec.layers.size(); ++li) {
      const LayerSpec& layer = spec.layers[li];
      const int node = cuda.layer_last_node[li];
      const PlanNode& n = cuda.nodes[static_cast<std::size_t>(node)];
      if (!cuda.layer_fused[li]) {
        if (layer.type == LayerType::BatchNormalization || layer.type == LayerType::Add) {
          EXPECT_EQ(n.activation, ActivationFn::linear) << n.label;
        }
        continue;
      }
      // The ReLU that reads it ends in the same node, which carries the activation.
      ASSERT_EQ(n.activation, ActivationFn::relu) << n.label;
      EXPECT_EQ(n.layer, static_cast<int>(li));
      const auto reader =
          std::find_if(table.layers.begin(), table.layers.end(), [&](const LayerInfo& info) {
            return info.inputs == std::vector<int>{static_cast<int>(li)};
          });
      ASSERT_NE(reader, table.layers.end());
      EXPECT_EQ(cuda.layer_last_node[static_cast<std::size_t>(reader - table.layers.begin())],
                node);
      (layer.type == LayerType::BatchNormalization ? bn_relu : add_relu) += 1;
    }
    EXPECT_EQ(bn_relu, 10);
    EXPECT_EQ(add_relu, 9);
    LoweringRules unfused = kCudaLowering;
    unfused.fuse_relu = false;
    const ExecutionPlan apart = build_plan(spec, table, 8, OptimizerConfig{}, unfused);
    EXPECT_EQ(apart.nodes.size() - cuda.nodes.size(), 19U) << to_string(policy);
    // Without the ReLUs' outputs the activations take less memory.
    const auto activation_bytes = [](const ExecutionPlan& plan) {
      std::int64_t bytes = 0;
      for (const PlanBuffer& b : plan.buffers)
        if (b.role == BufferRole::node_output) bytes += b.bytes();
      return bytes;
    };
    EXPECT_LT(activation_bytes(cuda), activation_bytes(apart));
  }
}

}  // namespace
}  // namespace mixlab
