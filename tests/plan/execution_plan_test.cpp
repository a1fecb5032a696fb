// The execution plan (engine/plan): one lowering for both backends, where their rules differ
// only as LoweringRules say; the loss head; parameter slots with Keras's glorot fans, aligned;
// the buffers and their memory by purpose; and the CPU executor allocating what the plan says.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_executor.h"
#include "engine/core/error.h"
#include "engine/plan/execution_plan.h"
#include "tests/spec/example_specs.h"

namespace mixlab {
namespace {

using test::activation;
using test::conv2d;
using test::dense;
using test::dropout;
using test::flatten;
using test::max_pool;
using test::rescaling;

constexpr LoweringRules kCuda{.dense_fuses_relu = true, .elementwise_same_dtype = true};

std::vector<PlanOp> ops_of(const ExecutionPlan& plan) {
  std::vector<PlanOp> ops;
  for (const PlanNode& n : plan.nodes) ops.push_back(n.op);
  return ops;
}

ModelSpec mixed_mlp() {
  ModelSpec spec;
  spec.name = "plan-mlp";
  spec.input_shape = {4, 4, 1};
  spec.layers = {rescaling(1.0 / 255), flatten(), dense(8, ActivationFn::relu), dropout(0.5),
                 dense(3), activation(ActivationFn::softmax, true)};
  return spec;
}

TEST(ExecutionPlan, OneLoweringTheBackendsDifferOnlyByTheirRules) {
  const ModelSpec spec = mixed_mlp();
  const ShapeTable table = infer_shapes(spec, Policy::mixed_float16);
  const ExecutionPlan cpu = build_plan(spec, table, 8, OptimizerConfig{}, cpu::kCpuLowering);
  const ExecutionPlan cuda = build_plan(spec, table, 8, OptimizerConfig{}, kCuda);
  using O = PlanOp;
  // The CPU's elementwise nodes convert as they read: the Rescaling takes float32 and writes
  // float16, the final float32 softmax reads float16, and its Dense's ReLU is a node of its own.
  EXPECT_EQ(ops_of(cpu), (std::vector<PlanOp>{O::rescaling, O::flatten, O::dense, O::activation,
                                               O::dropout, O::dense, O::activation}));
  // CUDA casts before the Rescaling and the softmax, and fuses the ReLU into the matmul.
  EXPECT_EQ(ops_of(cuda), (std::vector<PlanOp>{O::cast, O::rescaling, O::flatten, O::dense,
                                                O::dropout, O::dense, O::cast, O::activation}));
  EXPECT_EQ(cuda.nodes[3].activation, ActivationFn::relu);
  EXPECT_EQ(cpu.nodes[2].activation, ActivationFn::linear);
  EXPECT_EQ(cpu.nodes.back().in_dtype, DType::f16);
  EXPECT_EQ(cpu.nodes.back().out_dtype, DType::f32);
  EXPECT_EQ(cuda.nodes.back().in_dtype, DType::f32);
  // The loss reads the softmax's logits.
  EXPECT_EQ(cpu.head, LossHead::softmax_crossentropy);
  EXPECT_EQ(cuda.head, LossHead::softmax_crossentropy);
  // Layer -> last node, and where backward may stop.
  EXPECT_EQ(cpu.layer_last_node, (std::vector<int>{0, 1, 3, 4, 5, 6}));
  EXPECT_EQ(cuda.layer_last_node, (std::vector<int>{1, 2, 3, 4, 5, 7}));
  EXPECT_EQ(cpu.first_param_node, 2);
  EXPECT_EQ(cuda.first_param_node, 3);
  EXPECT_EQ(cpu.nodes[2].label, "layer 2 (Dense)");
  EXPECT_EQ(cuda.nodes[0].label, "layer 0 (Rescaling) cast");
}

TEST(ExecutionPlan, TheLossHeadFollowsTheLastLayerAndTheLoss) {
  ModelSpec spec = mixed_mlp();
  spec.layers.back() = activation(ActivationFn::sigmoid);
  spec.loss = LossKind::binary_crossentropy;
  const auto plan = [&](const ModelSpec& s) {
    return build_plan(s, infer_shapes(s), 4, OptimizerConfig{}, cpu::kCpuLowering);
  };
  EXPECT_EQ(plan(spec).head, LossHead::sigmoid_binary);
  spec.loss = LossKind::sparse_categorical_crossentropy;
  EXPECT_EQ(plan(spec).head, LossHead::crossentropy_probabilities);
  spec.layers.pop_back();
  spec.loss = LossKind::binary_crossentropy;
  EXPECT_EQ(plan(spec).head, LossHead::binary_probabilities);
}

TEST(ExecutionPlan, SlotsCarryKerasFansAndAlignedOffsets) {
  ModelSpec spec;
  spec.name = "plan-convnet";
  spec.input_shape = {8, 8, 3};
  spec.layers = {conv2d(5, {3, 2}), max_pool(2), flatten(), dense(7)};
  const ShapeTable table = infer_shapes(spec);
  const ExecutionPlan plan = build_plan(spec, table, 2, default_optimizer(OptimizerKind::adam));
  ASSERT_EQ(plan.params.size(), 4u);
  const PlanSlot& conv = plan.params[0];
  EXPECT_EQ(conv.kind, ParamKind::kernel);
  EXPECT_EQ(conv.count, 3 * 2 * 3 * 5);
  EXPECT_EQ(conv.fan_in, 3 * 2 * 3);
  EXPECT_EQ(conv.fan_out, 3 * 2 * 5);
  EXPECT_EQ(plan.params[1].kind, ParamKind::bias);
  EXPECT_EQ(plan.params[1].count, 5);
  const PlanSlot& dense_kernel = plan.params[2];
  EXPECT_EQ(dense_kernel.fan_in, 3 * 3 * 5);
  EXPECT_EQ(dense_kernel.fan_out, 7);
  std::int64_t expected_offset = 0;
  for (const PlanSlot& s : plan.params) {
    EXPECT_EQ(s.offset, expected_offset);
    EXPECT_EQ(s.offset % kSlotAlignFloats, 0);
    expected_offset += (s.count + kSlotAlignFloats - 1) / kSlotAlignFloats * kSlotAlignFloats;
  }
  EXPECT_EQ(plan.param_floats, expected_offset);
  EXPECT_EQ(plan.nodes[0].params, (std::vector<int>{0, 1}));
  EXPECT_EQ(plan.optimizer_states, 2);  // Adam: m and v
}

TEST(ExecutionPlan, MemoryByPurposeFromTheBuffers) {
  const ModelSpec spec = test::cifar10_mlp_spec();
  const int batch = 32;
  const ShapeTable f32_table = infer_shapes(spec, Policy::float32);
  const ShapeTable f16_table = infer_shapes(spec, Policy::mixed_float16);
  const OptimizerConfig sgd = default_optimizer(OptimizerKind::sgd);
  const ExecutionPlan f32 = build_plan(spec, f32_table, batch, sgd);
  const ExecutionPlan f16 = build_plan(spec, f16_table, batch, sgd);
  const MemoryPlan m32 = f32.memory();
  const MemoryPlan m16 = f16.memory();
  // float32 masters and gradients the same under both policies; 16-bit copies only mixed.
  EXPECT_EQ(m32.parameter_bytes, f32.param_floats * 4);
  EXPECT_GE(f32.param_floats, f32_table.params_total);
  EXPECT_EQ(m16.parameter_bytes, m32.parameter_bytes);
  EXPECT_EQ(m32.gradient_bytes, m32.parameter_bytes);
  EXPECT_EQ(m32.weight_copy_bytes, 0);
  EXPECT_EQ(m16.weight_copy_bytes, f16.param_floats * 2);
  EXPECT_EQ(m32.optimizer_bytes, 0);  // plain SGD keeps no state
  // Activations: the float32 input and every node's output at the batch, in its dtype, by
  // hand. float32: the Flatten is a view; each Dense and its activation a tensor each.
  EXPECT_EQ(m32.activation_bytes, batch * 4 * (3072 + 3000 + 3000 + 1000 + 1000 + 10 + 10));
  // mixed_float16: the Flatten becomes the cast to float16; the last sigmoid is float32.
  EXPECT_EQ(m16.activation_bytes,
            batch * (3072 * 4 + 3072 * 2 + (3000 + 3000 + 1000 + 1000 + 10) * 2 + 10 * 4));
  EXPECT_LT(m16.activation_bytes, m32.activation_bytes);
  EXPECT_EQ(m16.total(), m16.parameter_bytes + m16.weight_copy_bytes + m16.gradient_bytes +
                             m16.optimizer_bytes + m16.activation_bytes + m16.workspace_bytes);
  EXPECT_THROW(build_plan(spec, f32_table, 0, sgd), ConfigError);
  EXPECT_THROW(build_plan(spec, f32_table, Policy::mixed_float16, batch, sgd, {}), ConfigError);
}

// The CPU allocates the plan's buffers (its emulated 16-bit tensors in float32) and lays out the
// parameters as oneDNN wants them: never less than the plan's parameters and activations.
TEST(ExecutionPlan, TheCpuExecutorAllocatesThePlan) {
  const ModelSpec spec = mixed_mlp();
  for (const Policy p : {Policy::float32, Policy::mixed_float16, Policy::mixed_bfloat16}) {
    SCOPED_TRACE(std::string(to_string(p)));
    const ShapeTable table = infer_shapes(spec, p);
    ExecutorOptions options;
    options.policy = p;
    options.batch_size = 16;
    const MemoryPlan planned =
        build_plan(spec, table, 16, options.optimizer, cpu::kCpuLowering).memory();
    const MemoryPlan got = make_cpu_backend(1)->compile(spec, table, options)->memory_plan();
    for (const MemoryPurpose purpose :
         {MemoryPurpose::parameters, MemoryPurpose::activations, MemoryPurpose::optimizer}) {
      EXPECT_GE(got.bytes(purpose), planned.bytes(purpose)) << to_string(purpose);
    }
    if (p == Policy::float32) {
      EXPECT_EQ(got.activation_bytes, planned.activation_bytes);
    }
  }
}

// A pointwise Conv2D (1x1 kernel, stride 1, one group) is a Dense over its pixels, which
// mixed_float8's GPU runs on the FP8 GEMMs; a larger window, a stride, a depthwise 1x1 or a
// SeparableConv2D's depthwise part is not.
TEST(ExecutionPlan, PointwiseConvolutionsAreTheOnesThatAreDenseOverThePixels) {
  const ModelSpec spec = parse_model_json(R"({"name": "pw", "input": {"shape": [8, 8, 16]},
      "layers": [
      {"type": "Conv2D", "filters": 32, "kernel_size": 1},
      {"type": "Conv2D", "filters": 32, "kernel_size": 1, "padding": "same"},
      {"type": "Conv2D", "filters": 32, "kernel_size": 3, "padding": "same"},
      {"type": "Conv2D", "filters": 32, "kernel_size": 1, "strides": 2},
      {"type": "DepthwiseConv2D", "kernel_size": 1},
      {"type": "SeparableConv2D", "filters": 16, "kernel_size": 3, "padding": "same"},
      {"type": "Flatten"}, {"type": "Dense", "units": 16}]})");
  const ShapeTable table = infer_shapes(spec, Policy::mixed_float8);
  const ExecutionPlan plan = build_plan(spec, table, 4, OptimizerConfig{}, kCuda);
  std::vector<std::string> pointwise;
  for (const PlanNode& node : plan.nodes) {
    if (node.op == PlanOp::conv2d && pointwise_conv(plan, node)) pointwise.push_back(node.label);
    if (node.op == PlanOp::conv2d && node.layer < 4) {
      EXPECT_TRUE(node.fp8) << node.label;
    }
  }
  EXPECT_EQ(pointwise, (std::vector<std::string>{"layer 0 (Conv2D)", "layer 1 (Conv2D)",
                                                 "layer 5 (SeparableConv2D) pointwise"}));
}

}  // namespace
}  // namespace mixlab
