// The execution plan: a validated model lowered once, for every backend, into the nodes a
// backend runs, the parameter groups it trains and the buffers it allocates, each with its
// shape, dtype, byte size and purpose (ggml keeps building a graph apart from running it).
// Device-free: an executor creates one node per planned node and allocates; the plan's memory
// is known before anything compiles (the editor's totals, mixlab-cli inspect).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/precision.h"
#include "engine/ops/activation.h"
#include "engine/ops/loss.h"
#include "engine/ops/optimizer.h"
#include "engine/spec/model_spec.h"
#include "engine/spec/shape_inference.h"

namespace mixlab {

// What a part of an executor's allocation holds.
enum class MemoryPurpose : std::uint8_t {
  parameters,     // float32 master weights and biases
  weight_copies,  // 16-bit (or re-laid-out) copies the layers compute with
  gradients,      // parameter gradients
  optimizer,      // optimizer state
  activations,    // layer outputs kept for backward, at the batch size
  workspace,      // activation gradients, the loss, labels, scratch, library workspaces
};
std::string_view to_string(MemoryPurpose purpose);

// Bytes by purpose: of a plan (before any library has chosen its workspaces and layouts) or of
// an executor's single allocation.
struct MemoryPlan {
  std::int64_t parameter_bytes = 0;
  std::int64_t weight_copy_bytes = 0;
  std::int64_t gradient_bytes = 0;
  std::int64_t optimizer_bytes = 0;
  std::int64_t activation_bytes = 0;
  std::int64_t workspace_bytes = 0;
  std::int64_t total() const {
    return parameter_bytes + weight_copy_bytes + gradient_bytes + optimizer_bytes +
           activation_bytes + workspace_bytes;
  }
  void add(MemoryPurpose purpose, std::int64_t bytes);
  std::int64_t bytes(MemoryPurpose purpose) const;
};

enum class PlanOp : std::uint8_t {
  dense,
  conv2d,      // Conv2D, and DepthwiseConv2D (a grouped convolution: the layer says which)
  pooling,     // MaxPooling2D / AveragePooling2D (the layer says which)
  flatten,     // the output is the input's buffer seen with another shape
  cast,        // into out_dtype (a Flatten whose dtype changes is one too)
  activation,  // an Activation layer, or the non-linearity after a Dense / Conv2D
  rescaling,
  dropout,
  merge,  // Add, Subtract, Multiply, Average, Maximum, Concatenate: two or more inputs
  // BatchNormalization: float32 statistics and affine transform whatever the tensors' dtype;
  // training normalizes by the batch's statistics and updates the moving ones (the node's
  // moving_mean / moving_variance slots, which the optimizer leaves alone).
  batch_norm,
  zero_padding,  // ZeroPadding2D (LayerInfo's pad_* fields)
  // Normalization: (x - mean) / max(sqrt(variance), 1e-7) per channel, with constants from the
  // layer (engine/ops/normalization.h); nothing to train.
  normalization,
  // Embedding: the rows of its table for the batch's token ids (float32 whole numbers; an id
  // outside [0, input_dim) reads the nearest row, the trainer refuses such data first). Backward
  // adds each position's gradient to its token's row; the ids get none.
  embedding,
  // LayerNormalization: each row of the last axis by its own float32 mean and variance, then
  // gamma and beta (float32), whatever the tensors' dtype.
  layer_norm,
  // PositionEmbedding: the first `steps` rows of its table, the same for every sample. Its input
  // gives only the shape and gets no gradient.
  position_embedding,
  // MultiHeadAttention's core on its three projections (inputs: queries, keys, values, each
  // (steps, heads * dim)): per head, scores = q k^T written in the layer's dtype (Keras 3 on
  // TensorFlow computes ops.dot_product_attention's einsum so: float16 may overflow here), then in
  // float32 scaled by 1/sqrt(key_dim), masked (causal), softmax; the weights rounded to the
  // layer's dtype times the values. Output (steps, heads * value_dim).
  attention,
};
std::string_view to_string(PlanOp op);
// The op reads only its input's values as ids or its shape: no gradient flows to the input.
constexpr bool blocks_input_gradient(PlanOp op) {
  return op == PlanOp::embedding || op == PlanOp::position_embedding;
}

enum class MergeOp : std::uint8_t { add, subtract, multiply, average, maximum, concatenate };
std::string_view to_string(MergeOp op);

// Where a node's input is not another node's output: the batch.
inline constexpr int kPlanInput = -1;

// One input of a node, and what the backward pass does for it.
struct PlanInput {
  int node = kPlanInput;  // the node it reads (kPlanInput: the batch)
  bool grad = false;      // backward computes the gradient for this input
  // The input's gradient buffer already holds an earlier reader's gradient: this node's is
  // added to it (the executor writes it into ExecutionPlan::grad_scratch first, then adds).
  bool accumulate = false;
};

// Whether `policy` runs a layer's matmuls in FP8 (PlanNode::fp8): mixed_float8, a Dense,
// MultiHeadAttention (its projections) or Conv2D computing in bfloat16, not kept out of FP8
// ("dtype": "bfloat16").
bool fp8_layer(Policy policy, const LayerSpec& layer, DType compute);

struct PlanNode {
  PlanOp op = PlanOp::cast;
  int layer = 0;  // the Keras layer it belongs to
  DType in_dtype = DType::f32;  // the first input's (all inputs of a merge share it)
  DType out_dtype = DType::f32;
  Shape in_shape;   // per sample, the first input's
  Shape out_shape;  // per sample
  std::vector<PlanInput> inputs;  // in the layer's order; one but for a merge
  // activation: the function; dense: relu when fused into the matmul (LoweringRules).
  ActivationFn activation = ActivationFn::linear;
  ReluArgs relu;  // activation relu: Keras's ReLU layer's max_value, negative_slope, threshold
  MergeOp merge = MergeOp::add;  // merge: which
  int axis = 0;                  // merge concatenate: the axis of the per-sample shape (0-based)
  int groups = 1;  // conv2d: the convolution's groups (DepthwiseConv2D: the input channels)
  // dense / conv2d under mixed_float8: its matmuls read their input and kernel in scaled E4M3
  // and its output's gradient in E5M2 (or E4M3): Dense, attention's projections and Conv2D, in
  // bfloat16 (not kept in float32 or out of FP8 by "dtype": "bfloat16").
  bool fp8 = false;
  // attention: heads, their query/key and value sizes, the causal mask
  int heads = 0, key_dim = 0, value_dim = 0;
  bool causal = false;
  std::vector<int> params;  // dense / conv2d: its kernel (then bias) in ExecutionPlan::params
  std::string label;       // "layer 3 (Dense)", "layer 3 (Dense) cast"
  // Backward: the node runs when a gradient reaches it that something needs (its own
  // parameters, or a node with parameters, or the batch when its gradient is wanted, upstream).
  bool backward = false;
  int grad = -1;  // the activation-gradient buffer that holds d(output) while backward runs
  bool aliases_input() const { return op == PlanOp::flatten; }
  int input() const { return inputs.front().node; }  // the one input of a node that is no merge
};

// A trainable parameter group, at `offset` floats into the flat master, gradient and
// optimizer-state arrays (and 16-bit copies), aligned to kSlotAlignFloats.
struct PlanSlot {
  int layer = 0;
  int node = 0;
  ParamKind kind = ParamKind::kernel;
  // Dense (in, units); Conv2D (kh, kw, in, filters); DepthwiseConv2D (kh, kw, in, multiplier);
  // bias and BatchNormalization's (n)
  Shape keras_shape;
  std::int64_t count = 0;
  std::int64_t fan_in = 0, fan_out = 0;  // glorot_uniform's (kernels)
  // The layer's: f32 reads the master, 16 bits its copy (BatchNormalization's are f32).
  DType compute = DType::f32;
  std::int64_t offset = 0;
};

// 128 floats: every slot, and its 16-bit copy, starts 256-byte aligned (what cuBLASLt's bias
// epilogue and vectorised kernels want).
inline constexpr std::int64_t kSlotAlignFloats = 128;

// What a planned buffer is for (executors bind it by its role).
enum class BufferRole : std::uint8_t {
  input,                // (batch, input shape) float32
  labels,               // (batch, positions) int32
  node_output,          // (batch, node's output shape) in its dtype; index: the node
  activation_gradient,  // (max tensor elements) float32; index 0 or 1, used in turn
  loss_rows,            // (batch, positions, classes) float32
  masters,              // (param floats) float32
  parameter_gradients,  // (param floats) float32
  weight_copies,        // (param floats) in the policy's 16-bit type
  optimizer_state,      // (param floats) float32; index: the state array
};

// A buffer every backend allocates.
struct PlanBuffer {
  BufferRole role = BufferRole::input;
  int index = 0;
  MemoryPurpose purpose = MemoryPurpose::workspace;
  std::int64_t elements = 0;
  std::int64_t element_bytes = 4;  // 2 for a 16-bit tensor; labels are int32
  std::int64_t bytes() const { return elements * element_bytes; }
  std::string name() const;  // "output of node 3", "activation gradient 0", ...
};

// Where backends differ in lowering (their kernels' abilities); the rest is the plan's.
struct LoweringRules {
  bool dense_fuses_relu = false;  // cuBLASLt's relu epilogue: no activation node after
  // Elementwise kernels read and write one dtype: a cast before Dropout, Activation and
  // Rescaling when the input's differs (the CPU's nodes convert as they read).
  bool elementwise_same_dtype = false;
  // A plain ReLU that alone reads a BatchNormalization or an Add, right after it in the same
  // dtype, runs in that node's kernel (node.activation relu) and has no node of its own: one
  // pass over memory less each way (the CUDA kernels; Keras's Conv-BN-ReLU and residual Add).
  bool fuse_relu = false;
};

// How each backend lowers, here so that the doctor's cost model plans as the backend would.
// The CPU: its elementwise nodes convert as they read, and a Dense layer's activation is a node
// of its own. CUDA: ReLU in cuBLASLt's epilogue; a cast before every elementwise kernel whose
// input is in another dtype.
inline constexpr LoweringRules kCpuLowering{.dense_fuses_relu = false,
                                            .elementwise_same_dtype = false};
inline constexpr LoweringRules kCudaLowering{
    .dense_fuses_relu = true, .elementwise_same_dtype = true, .fuse_relu = true};

struct ExecutionPlan {
  Policy policy = Policy::float32;
  int batch = 0;
  LossKind loss = LossKind::sparse_categorical_crossentropy;
  LossHead head = LossHead::crossentropy_probabilities;
  Shape input_shape;
  // The classes of each label (the output's last axis) and the labels per sample: 1, or the
  // steps of a (steps, classes) output (a label per step). The loss rows are batch * positions
  // rows of `classes` values; the loss is their mean, as Keras's.
  std::int64_t classes = 0;
  std::int64_t positions = 1;
  std::vector<PlanNode> nodes;       // in the order they run: each after the nodes it reads
  std::vector<int> layer_last_node;  // Keras layer -> its last node
  // Keras layer -> true when its output is never stored: the ReLU that reads it is fused into
  // its last node (LoweringRules::fuse_relu), whose output is the ReLU's.
  std::vector<bool> layer_fused;
  int first_param_node = -1;         // the first node with parameters; -1: none
  int output_node = -1;              // the model's output (the last node)
  int loss_node = -1;                // the node whose output the loss reads: a fused head's logits
  // The backward schedule's float32 activation-gradient buffers (each max_tensor_elements, at
  // least 2): a node's gradient buffer lives from its first reader's backward to its own, and
  // is reused after (a chain needs 2); grad_scratch is the one a node writes into when its
  // gradient is added to an earlier reader's; input_grad holds the batch's gradient when it is
  // wanted. Backward runs from the output node down (its gradient seeded by OpAccess), or from
  // loss_node when the loss head is fused (the loss seeds it), taking nodes with `backward`.
  int gradient_buffers = 0;
  int grad_scratch = -1;
  int input_grad = -1;
  std::vector<PlanSlot> params;  // (Qt reserves the word "slots")
  std::int64_t param_floats = 0;  // of the flat arrays, alignment included
  int optimizer_states = 0;       // float32 arrays the size of the masters (Adam 2, momentum 1)
  DType copy_dtype = DType::f32;  // the policy's 16-bit copy; f32: layers read the masters

  // The buffers every backend allocates: the input batch, labels, each node's output (but a
  // Flatten's), the float32 activation-gradient buffers of the backward schedule, the loss rows,
  // the flat parameter arrays. Backends add their own (library workspaces, re-laid-out weights).
  std::vector<PlanBuffer> buffers;
  std::int64_t max_tensor_elements = 0;  // the largest input or node output, per batch

  // The plan's memory by purpose. An executor's is this plus what its libraries add (workspaces,
  // re-laid-out weights), and more where it emulates a 16-bit type in float32 (the CPU).
  MemoryPlan memory() const;
  // The node's input and output elements at the batch size.
  std::int64_t in_elements(int node) const;
  std::int64_t out_elements(int node) const;
};

// The convolution a conv2d node runs, as a Conv2D or DepthwiseConv2D layer of its own shapes:
// the node's layer itself, or one of a SeparableConv2D's two parts (the depthwise one without a
// bias; the 1x1 pointwise one with the layer's bias). Activations are nodes of their own.
struct ConvPart {
  LayerSpec layer;
  LayerInfo info;
};
ConvPart conv_part(const LayerSpec& layer, const LayerInfo& info, const PlanNode& node);

// Whether a conv2d node is a Dense over its pixels: a 1x1 kernel, one group, the output's
// height and width the input's (so stride 1 and no padding). mixed_float8's GPU runs such a
// Conv2D as a Dense on the FP8 GEMMs (its Keras kernel (1, 1, in, filters) is Dense's
// (in, units)); a larger kernel stays on cuDNN in bfloat16 (the doctor says why).
bool pointwise_conv(const ExecutionPlan& plan, const PlanNode& node);

// Lowers a validated model (its shape table, which records the policy) for a batch size and an
// optimizer, its layers in the table's order. `input_gradient`: the backward schedule also
// computes the batch's gradient (tests). Throws ConfigError for a batch size below 1, or a table
// of another model.
ExecutionPlan build_plan(const ModelSpec& spec, const ShapeTable& table, int batch,
                         const OptimizerConfig& optimizer, const LoweringRules& rules = {},
                         bool input_gradient = false);
// The same for an executor asked to run `policy`: the table must have been inferred under it.
ExecutionPlan build_plan(const ModelSpec& spec, const ShapeTable& table, Policy policy, int batch,
                         const OptimizerConfig& optimizer, const LoweringRules& rules,
                         bool input_gradient = false);

}  // namespace mixlab
