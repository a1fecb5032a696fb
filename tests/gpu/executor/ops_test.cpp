// The CUDA executor against the CPU executor, op by op, forward and backward, under every
// policy: each layer type alone (and a small convnet whose every activation is compared), with
// the CPU's parameters written into the CUDA executor, the same batch and the same output
// gradient. The CPU backend is checked against float64 references in tests/cpu/ops_test.cpp; here
// it is the reference.
//
// Data: random values on coarse grids (inputs k/32 in [-2, 2], parameters k/64 in [-0.75, 0.75],
// output gradients k/32 in [-1, 1]). Such values are exact in float16, bfloat16 and TF32, and
// their products and sums of a few thousand are exact in float32 whatever the order, so that a
// Dense or Conv2D's pre-activation is the same on both backends in every policy: a ReLU never
// flips on a rounding difference (which would move a whole gradient row), and what differs is
// what each backend really rounds: 16-bit outputs, transcendental functions, averages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/op_access.h"
#include "engine/core/error.h"
#include "engine/plan/execution_plan.h"
#include "engine/spec/shape_inference.h"
#include "tests/cpu/layers.h"
#include "tests/gpu/executor/gpu_test_support.h"

namespace mixlab {
namespace {

using namespace test_layers;
using gpu_test::expect_tensors_close;
using gpu_test::PolicyCase;

constexpr int kBatch = 8;
constexpr std::uint64_t kSeed = 11;
constexpr std::uint64_t kStep = 5;

struct OpCase {
  std::string name;
  std::vector<std::int64_t> input;
  std::vector<LayerSpec> layers;  // one layer, or a small model
  // Attention's kernels: the unfused (cuBLASLt and MixLab's softmax) or cuDNN's fused, asked for
  // by name so that each case runs the path it names (auto would pick either).
  AttentionKernels attention = AttentionKernels::unfused;
};

std::vector<OpCase> cases() {
  using A = ActivationFn;
  using LT = LayerType;
  const Padding valid = Padding::valid, same = Padding::same;
  return {
      {"DenseLinear", {7}, {dense(5)}},
      {"DenseRelu", {6}, {dense(4, A::relu)}},
      {"DenseSigmoid", {6}, {dense(3, A::sigmoid)}},
      {"DenseTanh", {5}, {dense(3, A::tanh)}},
      {"DenseGelu", {5}, {dense(4, A::gelu)}},
      {"DenseSoftmax", {6}, {dense(4, A::softmax)}},
      {"DenseNoBias", {6}, {dense(3, A::linear, false)}},
      {"DenseReluNoBias", {6}, {dense(5, A::relu, false)}},
      {"DenseOnLastAxis", {2, 3, 4}, {dense(3)}},
      {"DenseWideRelu", {256}, {dense(128, A::relu)}},  // tensor-core sized
      {"Conv2DValid", {6, 5, 2}, {conv(3, {3, 3}, {1, 1}, valid)}},
      {"Conv2DValidStride2", {7, 8, 3}, {conv(4, {3, 3}, {2, 2}, valid)}},
      {"Conv2DSame3", {6, 6, 2}, {conv(3, {3, 3}, {1, 1}, same)}},
      {"Conv2DSameStride2", {7, 6, 3}, {conv(4, {3, 3}, {2, 2}, same)}},
      // Even kernels under 'same' pad one more row/column at the bottom/right (TensorFlow).
      {"Conv2DSameEven2", {5, 5, 2}, {conv(3, {2, 2}, {1, 1}, same)}},
      {"Conv2DSameEven4", {6, 7, 3}, {conv(4, {4, 4}, {1, 1}, same, A::relu)}},
      {"Conv2DSameEven4Stride2", {7, 8, 2}, {conv(3, {4, 4}, {2, 2}, same)}},
      {"Conv2DSameRectRelu", {5, 5, 2}, {conv(2, {2, 3}, {1, 1}, same, A::relu)}},
      {"Conv2DNoBias", {5, 4, 2}, {conv(2, {2, 2}, {1, 1}, valid, A::linear, false)}},
      {"Conv2DWide", {8, 8, 16}, {conv(32, {3, 3}, {1, 1}, same, A::relu)}},
      {"MaxPool2", {6, 6, 3}, {pool(LT::MaxPooling2D, {2, 2}, {2, 2}, valid)}},
      {"MaxPool3Stride1", {5, 6, 2}, {pool(LT::MaxPooling2D, {3, 3}, {1, 1}, valid)}},
      {"MaxPool3SameStride2", {7, 7, 2}, {pool(LT::MaxPooling2D, {3, 3}, {2, 2}, same)}},
      {"MaxPool2SameStride1", {5, 4, 2}, {pool(LT::MaxPooling2D, {2, 2}, {1, 1}, same)}},
      {"AvgPool2", {6, 4, 2}, {pool(LT::AveragePooling2D, {2, 2}, {2, 2}, valid)}},
      {"AvgPool3SameStride2", {7, 5, 2}, {pool(LT::AveragePooling2D, {3, 3}, {2, 2}, same)}},
      {"AvgPool2SameStride1", {5, 4, 2}, {pool(LT::AveragePooling2D, {2, 2}, {1, 1}, same)}},
      {"AvgPool3SameStride1", {5, 5, 3}, {pool(LT::AveragePooling2D, {3, 3}, {1, 1}, same)}},
      {"GlobalAvgPool", {5, 4, 3}, {global_pool(LT::GlobalAveragePooling2D)}},
      {"GlobalMaxPool", {4, 6, 2}, {global_pool(LT::GlobalMaxPooling2D)}},
      {"GlobalAvgPoolKeepdims", {3, 3, 4}, {global_pool(LT::GlobalAveragePooling2D, true)}},
      // Sequences (issue 29): (steps, features).
      {"DenseOnSequence", {4, 6}, {dense(3, A::relu)}},
      {"GlobalAvgPool1D", {5, 3}, {global_pool(LT::GlobalAveragePooling1D)}},
      {"GlobalMaxPool1DKeepdims", {3, 4}, {global_pool(LT::GlobalMaxPooling1D, true)}},
      {"SequenceClassifier",
       {6, 8},
       {dense(5, A::relu), global_pool(LT::GlobalAveragePooling1D), dense(3, A::softmax)}},
      {"ActivationRelu", {10}, {activation(A::relu)}},
      {"ActivationSigmoid", {10}, {activation(A::sigmoid)}},
      {"ActivationTanh", {10}, {activation(A::tanh)}},
      {"ActivationGelu", {10}, {activation(A::gelu)}},
      {"ActivationSoftmax", {7}, {activation(A::softmax)}},
      {"ActivationSoftmaxFloat32", {7}, {activation(A::softmax, true)}},
      {"ActivationLinear", {10}, {activation(A::linear)}},
      {"ActivationSilu", {10}, {activation(A::silu)}},
      {"ActivationHardSigmoid", {10}, {activation(A::hard_sigmoid)}},
      {"ActivationHardSilu", {10}, {activation(A::hard_silu)}},
      {"ActivationElu", {10}, {activation(A::elu)}},
      {"ActivationRelu6", {10}, {activation(A::relu6)}},
      {"ActivationLeakyRelu", {10}, {activation(A::leaky_relu)}},
      {"ReLUMaxValue", {4, 3, 2}, {relu(1.3)}},
      {"ReLUAllArguments", {12}, {relu(1.3, 0.2, 0.3)}},
      {"ZeroPadding", {3, 4, 2}, {zero_padding({1, 2, 0, 1})}},
      {"DepthwiseValid", {5, 6, 3}, {depthwise({3, 3}, {1, 1}, valid)}},
      {"DepthwiseSameStride2Multiplier2", {7, 6, 2}, {depthwise({3, 3}, {2, 2}, same, 2, A::relu)}},
      {"DepthwiseNoBias", {4, 5, 3}, {depthwise({2, 3}, {1, 1}, same, 1, A::linear, false)}},
      {"DepthwiseWide", {8, 8, 32}, {depthwise({3, 3}, {1, 1}, same)}},
      {"SeparableSame", {5, 6, 3}, {separable(4, {3, 3}, {1, 1}, same, 1, A::relu)}},
      {"SeparableStride2Multiplier2NoBias",
       {7, 6, 2},
       {separable(3, {3, 3}, {2, 2}, valid, 2, A::linear, false)}},
      {"BatchNorm", {3, 2, 4}, {batch_norm()}},
      {"BatchNormOnFeatures", {5}, {batch_norm()}},
      {"BatchNormNoScaleNoCenter", {2, 2, 3}, {batch_norm(false, false)}},
      {"BatchNormWide", {4, 4, 64}, {batch_norm()}},
      // The CUDA plan fuses a ReLU into the BatchNormalization or Add it alone reads
      // (LoweringRules::fuse_relu); the CPU's runs it as a node of its own.
      {"BatchNormReluFused",
       {3, 4, 8},
       {batch_norm(), activation(A::relu), simple(LT::Flatten), dense(3)}},
      {"BatchNormReLULayerFused", {6}, {batch_norm(false, true), relu(INFINITY)}},
      {"AddReluFused",
       {5, 5, 3},
       {named(conv(4, {3, 3}, {1, 1}, same), "a"), named(conv(4, {1, 1}, {1, 1}, valid), "b"),
        merge(LT::Add, {"a", "b"}), activation(A::relu), simple(LT::Flatten), dense(3)}},
      // A ResNet basic block and a MobileNetV2 inverted residual, every activation compared.
      {"ResNetBlock",
       {6, 6, 4},
       {conv(4, {3, 3}, {1, 1}, same, A::linear, false), batch_norm(),
        named(activation(A::relu), "r1"), conv(4, {3, 3}, {1, 1}, same, A::linear, false),
        named(batch_norm(), "bn2"), merge(LT::Add, {"r1", "bn2"}), activation(A::relu),
        global_pool(LT::GlobalAveragePooling2D), dense(3)}},
      {"MobileNetBlock",
       {6, 6, 4},
       {named(conv(8, {1, 1}, {1, 1}, valid, A::linear, false), "expand"), batch_norm(), relu(6.0),
        zero_padding({0, 1, 0, 1}), depthwise({3, 3}, {2, 2}, valid, 1, A::linear, false),
        batch_norm(), relu(6.0), conv(4, {1, 1}, {1, 1}, valid, A::linear, false), batch_norm(),
        simple(LT::Flatten), dense(3)}},
      {"Rescaling", {9}, {rescaling(0.5, -1.25)}},
      {"NormalizationPerChannel",
       {3, 2, 4},
       {normalization({0.5, -0.25, 0.0, 2.0}, {4.0, 0.3, 4e-4, 0.01})}},
      {"NormalizationScalar", {5}, {normalization({0.75}, {2.5})}},
      {"Dropout", {40}, {dropout(0.3)}},
      {"DropoutPerSample", {4, 4, 3}, {noise_dropout(0.5, {-1, 1, 1, 1}), simple(LT::Flatten)}},
      // EfficientNet's squeeze-and-excitation: HxWxC times its 1x1xC gate (broadcast), and the
      // broadcast input first in an Add.
      {"SqueezeExcite",
       {4, 4, 6},
       {named(conv(6, {3, 3}, {1, 1}, same), "a", {"input"}),
        global_pool(LT::GlobalAveragePooling2D, true), conv(2, {1, 1}, {1, 1}, valid, A::silu),
        named(conv(6, {1, 1}, {1, 1}, valid, A::sigmoid), "gate"),
        merge(LT::Multiply, {"a", "gate"}), simple(LT::Flatten), dense(3)}},
      {"BroadcastAddFirst",
       {3, 3, 4},
       {named(global_pool(LT::GlobalMaxPooling2D, true), "g", {"input"}),
        named(rescaling(0.5, 0.25), "r", {"input"}), merge(LT::Add, {"g", "r"}),
        simple(LT::Flatten), dense(3)}},
      {"DropoutSpatial", {4, 4, 3}, {dropout(0.5), simple(LT::Flatten)}},
      {"Flatten", {2, 3, 4}, {simple(LT::Flatten)}},
      {"ReshapeToImage",
       {24},
       {reshape({2, -1, 4}), conv(3, {1, 1}, {1, 1}, valid), simple(LT::Flatten), dense(3)}},
      // Graphs (issue 27): a residual Add, each elementwise merge of two Dense branches of the
      // batch, and a channel Concatenate.
      {"ResidualAdd",
       {6, 6, 3},
       {named(conv(4, {3, 3}, {1, 1}, same, A::relu), "a"),
        named(conv(4, {3, 3}, {1, 1}, same), "b"), merge(LT::Add, {"a", "b"}), simple(LT::Flatten),
        dense(5)}},
      {"MergeSubtract",
       {6},
       {named(dense(4), "a", {"input"}), named(dense(4), "b", {"input"}),
        merge(LT::Subtract, {"a", "b"})}},
      {"MergeMultiply",
       {6},
       {named(dense(4), "a", {"input"}), named(dense(4), "b", {"input"}),
        merge(LT::Multiply, {"a", "b"})}},
      {"MergeAverage",
       {6},
       {named(dense(4), "a", {"input"}), named(dense(4), "b", {"input"}),
        merge(LT::Average, {"a", "b"})}},
      {"MergeMaximum",
       {6},
       {named(dense(4), "a", {"input"}), named(dense(4), "b", {"input"}),
        merge(LT::Maximum, {"a", "b"})}},
      {"ConcatChannels",
       {5, 5, 2},
       {named(conv(3, {1, 1}, {1, 1}, valid), "a", {"input"}),
        named(conv(5, {1, 1}, {1, 1}, valid, A::relu), "b", {"input"}),
        merge(LT::Concatenate, {"a", "b"}), simple(LT::Flatten), dense(4)}},
      // Sequence layers (issue 29): LayerNormalization (a row per position; a warp per row),
      // Embedding of token ids (repeated ids: the atomic scatter-add), PositionEmbedding, and a
      // small language model's layers, its (steps, vocabulary) output compared as it is.
      {"LayerNorm", {4, 6}, {layer_norm()}},
      {"LayerNormWide", {5, 160}, {layer_norm(true, true, 1e-5)}},
      {"LayerNormNoScaleNoCenter", {3, 7}, {layer_norm(false, false)}},
      {"Embedding", {6}, {embedding(11, 8)}},
      {"PositionEmbedding", {4, 3}, {position_embedding(6)}},
      {"TokenModel",
       {8},
       {named(embedding(13, 16), "tokens"), named(position_embedding(8), "positions"),
        merge(LT::Add, {"tokens", "positions"}), layer_norm(), dense(32, A::gelu), dense(13)}},
      // MultiHeadAttention: its projections (Dense nodes of the plan) and the attention core
      // (cuBLASLt's strided-batched products a head at a time, with head views off 16 bytes
      // here, and the float32 softmax between them), and a pre-norm decoder block.
      {"SelfAttention", {6, 8}, {attention(2, 4)}},
      {"CausalAttentionValueDimOutput", {9, 12}, {attention(3, 4, true, 6, 10)}},
      // cuDNN's fused attention (16-bit policies from compute capability 8.0; head dims a
      // multiple of 8): the scores stay in float32 inside it where the unfused path rounds them
      // to the layer's dtype, within the chain's 16-bit tolerance.
      {"FusedSelfAttention", {16, 32}, {attention(2, 16)}, AttentionKernels::fused},
      {"FusedCausalAttentionValueDim",
       {24, 32},
       {attention(4, 8, true, 16, 24)},
       AttentionKernels::fused},
      {"DecoderBlock",
       {12},
       {named(embedding(40, 16), "tokens"), named(position_embedding(12), "positions"),
        named(merge(LT::Add, {"tokens", "positions"}), "x0"), layer_norm(),
        named(attention(4, 4, true), "attn"), named(merge(LT::Add, {"x0", "attn"}), "x1"),
        layer_norm(), dense(32, A::gelu), named(dense(16), "down"), merge(LT::Add, {"x1", "down"}),
        dense(40)}},
      // The PRODUCT.md convnet's layer kinds in one small model, every activation compared.
      {"SmallConvnet",
       {8, 8, 3},
       {rescaling(0.25), conv(8, {4, 4}, {1, 1}, valid),
        pool(LT::MaxPooling2D, {2, 2}, {2, 2}, valid), conv(8, {2, 2}, {1, 1}, same, A::relu),
        pool(LT::AveragePooling2D, {2, 2}, {2, 2}, valid), simple(LT::Flatten), dense(16, A::relu),
        dropout(0.2), dense(5), activation(A::softmax, true)}},
  };
}

ModelSpec model_of(const OpCase& c) {
  ModelSpec spec;
  spec.name = c.name;
  spec.input_shape = c.input;
  spec.layers = c.layers;
  if (c.layers.size() == 1 && needs_flatten(c.layers[0], c.input.size())) {
    spec.layers.push_back(simple(LayerType::Flatten));
  }
  return spec;
}

// n values k / denominator with |k| <= limit * denominator.
std::vector<float> grid_values(std::size_t n, std::mt19937_64& rng, int denominator, double limit) {
  const int k_max = static_cast<int>(limit * denominator);
  std::uniform_int_distribution<int> dist(-k_max, k_max);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(dist(rng)) / static_cast<float>(denominator);
  return v;
}

// n distinct values, each exact in bfloat16 (8 significant bits), so that a max-pooling window
// has one maximum in every policy and backward routes its gradient to the same element.
std::vector<float> distinct_values(std::size_t n, std::mt19937_64& rng) {
  std::vector<float> all;
  for (int e = -3; e <= 3; ++e)
    for (int m = 0; m < 128; ++m)
      for (float sign : {1.0f, -1.0f}) all.push_back(sign * std::ldexp(1.0f + m / 128.0f, e));
  std::shuffle(all.begin(), all.end(), rng);
  EXPECT_LE(n, all.size()) << "a pooling case too large for distinct bfloat16 values";
  all.resize(std::min(n, all.size()));
  return all;
}

// The model's first layer reads token ids (an Embedding) or only the input's shape (a
// PositionEmbedding): the input gets no gradient.
bool reads_ids(const OpCase& c) {
  return c.layers.front().type == LayerType::Embedding;
}
bool input_gradient_flows(const OpCase& c) {
  return !reads_ids(c) && c.layers.front().type != LayerType::PositionEmbedding;
}
int vocabulary(const OpCase& c) {
  return c.layers.front().input_dim;
}

bool has_max_pooling(const OpCase& c) {
  return std::any_of(c.layers.begin(), c.layers.end(), [](const LayerSpec& l) {
    return l.type == LayerType::MaxPooling2D || l.type == LayerType::GlobalMaxPooling2D;
  });
}

bool has_attention(const OpCase& c) {
  return std::any_of(c.layers.begin(), c.layers.end(),
                     [](const LayerSpec& l) { return l.type == LayerType::MultiHeadAttention; });
}

// The chain's tolerance, but 4x TF32's for attention: the core's six products read operands
// (queries, keys, weights, their gradients) that the grid values' exactness in TF32 does not
// reach, and the tensor cores may truncate them to 10 bits (a bias toward zero that sums do not
// average out, up to 2^-10 a product) where the CPU has no TF32; a float32 simulation of the
// two cases (both roundings of the operands, five seeds) put the errors at up to 2.44e-3.
double tolerance_of(const OpCase& c, const PolicyCase& p) {
  const double tol = gpu_test::chain_tolerance(p, c.layers.size());
  return p.tf32 && has_attention(c) ? 4 * tol : tol;
}

// A key bias shifts every score of a query's row alike, which the softmax ignores: its gradient
// is zero but for rounding, on both backends with different noise, so no relative comparison
// holds. Both must be that small beside the key kernel's gradient (a wrong softmax backward,
// whose rows no longer sum to zero, makes it as large).
void expect_zero_but_rounding(std::span<const float> got, std::span<const float> want,
                              std::span<const float> sibling, double tol, const std::string& what) {
  const auto norm = [](std::span<const float> v) {
    double sum = 0;
    for (float x : v) sum += static_cast<double>(x) * x;
    return std::sqrt(sum);
  };
  const double bound = tol * norm(sibling);
  EXPECT_LE(norm(got), bound) << what << " (CUDA): zero but rounding, beside the key kernel's";
  EXPECT_LE(norm(want), bound) << what << " (CPU): zero but rounding, beside the key kernel's";
}

ExecutorOptions options_for(const PolicyCase& p,
                            AttentionKernels attention = AttentionKernels::unfused) {
  ExecutorOptions o;
  o.attention = attention;
  o.policy = p.policy;
  o.tf32 = p.tf32;
  o.batch_size = kBatch;
  o.seed = kSeed;
  o.input_gradient = true;
  o.optimizer = default_optimizer(OptimizerKind::sgd);
  return o;
}

class CudaOp : public ::testing::TestWithParam<std::tuple<OpCase, PolicyCase>> {};

TEST_P(CudaOp, ForwardAndBackwardMatchTheCpu) {
  MIXLAB_SKIP_WITHOUT_CUDA();
  const auto& [c, p] = GetParam();
  MIXLAB_SKIP_REFUSED_POLICY(p.policy);
  const ModelSpec spec = model_of(c);
  const ShapeTable table = infer_shapes(spec, p.policy);
  const double tol = tolerance_of(c, p);
  const bool each_element = c.layers.size() == 1;  // a chain: the norms (expect_tensors_close)
  if (c.attention == AttentionKernels::fused) {
    if (p.policy == Policy::float32) GTEST_SKIP() << "cuDNN's fused attention takes 16-bit inputs";
    if (compute_capability_value(gpu_test::cuda_backend().device()) < 8.0) {
      GTEST_SKIP() << "cuDNN's fused attention needs compute capability 8.0";
    }
    if (gpu_test::on_cudasim()) GTEST_SKIP() << "cudasim's cuDNN has no engine for a graph";
  }
  auto cpu = gpu_test::cpu_backend().compile(spec, table, options_for(p));
  // Fused asked for by name: a shape cuDNN refuses fails here, saying why.
  auto gpu = gpu_test::cuda_backend().compile(spec, table, options_for(p, c.attention));

  std::mt19937_64 rng(1234);
  const auto n_in = static_cast<std::size_t>(kBatch * num_elements(table.input_shape));
  std::vector<float> x =
      has_max_pooling(c) ? distinct_values(n_in, rng) : grid_values(n_in, rng, 32, 2.0);
  if (reads_ids(c)) {  // token ids, each repeated in the batch
    for (std::size_t i = 0; i < n_in; ++i) x[i] = static_cast<float>((i * 5) % vocabulary(c));
  }
  for (std::size_t i = 0; i < table.layers.size(); ++i) {
    const int layer = static_cast<int>(i);
    for (const ParamGroup& g : table.layers[i].params) {
      const auto values = grid_values(static_cast<std::size_t>(g.count()), rng, 64, 0.75);
      cpu->ops().write_parameter(layer, g.kind, values);
      gpu->ops().write_parameter(layer, g.kind, values);
      EXPECT_EQ(gpu->ops().read_parameter(layer, g.kind), values)
          << "layer " << i << " " << to_string(g.kind) << ": written and read back differ";
    }
  }
  // A label per sample, or per step of a (steps, classes) output (a language model's).
  const std::vector<std::int32_t> labels(
      static_cast<std::size_t>(kBatch * table.label_positions()), 0);
  cpu->load_batch(x, labels, kBatch);
  gpu->load_batch(x, labels, kBatch);
  cpu->ops().forward(Phase::train, kStep);
  gpu->ops().forward(Phase::train, kStep);

  expect_tensors_close(gpu->ops().read_output(), cpu->ops().read_output(), tol, "output",
                       each_element);
  // The layers whose ReLU the CUDA plan fuses keep no output of their own there (the ReLU's
  // output, compared, is their node's).
  const ExecutionPlan cuda_plan =
      build_plan(spec, table, kBatch, options_for(p).optimizer, kCudaLowering, true);
  for (std::size_t i = 0; i < table.layers.size(); ++i) {
    const int layer = static_cast<int>(i);
    if (cuda_plan.layer_fused[i]) {
      EXPECT_THROW(gpu->ops().read_activation(layer), ConfigError);
    } else {
      expect_tensors_close(gpu->ops().read_activation(layer), cpu->ops().read_activation(layer),
                           tol,
                           "activation of layer " + std::to_string(i) + " (" +
                               std::string(to_string(spec.layers[i].type)) + ")",
                           each_element);
    }
    // BatchNormalization's moving statistics, updated by the training forward.
    for (const ParamGroup& g : table.layers[i].params) {
      if (is_trainable(g.kind)) continue;
      expect_tensors_close(
          gpu->ops().read_parameter(layer, g.kind), cpu->ops().read_parameter(layer, g.kind), tol,
          "layer " + std::to_string(i) + " " + std::string(to_string(g.kind)), true);
    }
  }

  const auto n_out = static_cast<std::size_t>(kBatch * num_elements(table.output_shape));
  const std::vector<float> dy = grid_values(n_out, rng, 32, 1.0);
  cpu->ops().set_output_gradient(dy);
  gpu->ops().set_output_gradient(dy);
  cpu->ops().backward();
  gpu->ops().backward();
  if (input_gradient_flows(c)) {
    expect_tensors_close(gpu->ops().read_input_gradient(), cpu->ops().read_input_gradient(), tol,
                         "input gradient", each_element);
  }
  for (std::size_t i = 0; i < table.layers.size(); ++i) {
    const int layer = static_cast<int>(i);
    for (const ParamGroup& g : table.layers[i].params) {
      const std::string what =
          "layer " + std::to_string(i) + " " + std::string(to_string(g.kind)) + " gradient";
      if (g.kind == ParamKind::key_bias) {
        expect_zero_but_rounding(gpu->ops().read_gradient(layer, g.kind),
                                 cpu->ops().read_gradient(layer, g.kind),
                                 cpu->ops().read_gradient(layer, ParamKind::key_kernel), tol, what);
        continue;
      }
      expect_tensors_close(gpu->ops().read_gradient(layer, g.kind),
                           cpu->ops().read_gradient(layer, g.kind), tol, what, each_element);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layers, CudaOp,
                         ::testing::Combine(::testing::ValuesIn(cases()),
                                            ::testing::ValuesIn(gpu_test::all_policies())),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + "_" + std::get<1>(info.param).name;
                         });

// Dropout's mask comes from a counter-based hash of (seed, layer, step, element) on both
// backends: the same seed and step drop the same elements, another step drops others.
TEST(CudaDropout, SameSeedAndStepGiveTheCpuMaskAndAnotherStepAnother) {
  MIXLAB_SKIP_WITHOUT_CUDA();
  ModelSpec spec;
  spec.name = "dropout";
  spec.input_shape = {1000};
  spec.layers = {dropout(0.4)};
  const ShapeTable table = infer_shapes(spec);
  const PolicyCase p = gpu_test::all_policies()[0];
  auto cpu = gpu_test::cpu_backend().compile(spec, table, options_for(p));
  auto gpu = gpu_test::cuda_backend().compile(spec, table, options_for(p));
  const std::vector<float> ones(static_cast<std::size_t>(kBatch) * 1000, 1.0f);
  const std::vector<std::int32_t> labels(kBatch, 0);
  cpu->load_batch(ones, labels, kBatch);
  gpu->load_batch(ones, labels, kBatch);
  cpu->ops().forward(Phase::train, kStep);
  gpu->ops().forward(Phase::train, kStep);
  const std::vector<float> want = cpu->ops().read_output();
  const std::vector<float> got = gpu->ops().read_output();
  ASSERT_EQ(got.size(), want.size());
  std::size_t dropped = 0, differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    dropped += want[i] == 0.0f;
    differ += (got[i] == 0.0f) != (want[i] == 0.0f);
  }
  EXPECT_EQ(differ, 0u) << "elements dropped on one backend only";
  EXPECT_NEAR(static_cast<double>(dropped) / static_cast<double>(want.size()), 0.4, 0.03);
  gpu->ops().forward(Phase::train, kStep + 1);
  std::size_t moved = 0;
  const std::vector<float> next = gpu->ops().read_output();
  for (std::size_t i = 0; i < next.size(); ++i) moved += (next[i] == 0.0f) != (got[i] == 0.0f);
  EXPECT_GT(moved, next.size() / 10) << "the next step's mask should differ";
  gpu->ops().forward(Phase::eval, kStep);
  EXPECT_EQ(gpu->ops().read_output(), ones) << "evaluation must not drop anything";
}

// The trainer runs the same seed on both backends and compares their losses (train_test.cpp):
// that needs the same initial weights (Keras glorot_uniform from the seed, zero biases).
TEST(CudaInit, SameSeedGivesTheCpuInitialParameters) {
  MIXLAB_SKIP_WITHOUT_CUDA();
  const OpCase c = cases().back();  // SmallConvnet (a copy: cases() returns a temporary)
  const ModelSpec spec = model_of(c);
  for (const PolicyCase& p : gpu_test::all_policies()) {
    SCOPED_TRACE(p.name);
    if (!gpu_test::policy_refused_here(p.policy).empty()) continue;
    const ShapeTable table = infer_shapes(spec, p.policy);
    auto cpu = gpu_test::cpu_backend().compile(spec, table, options_for(p));
    auto gpu = gpu_test::cuda_backend().compile(spec, table, options_for(p));
    int groups = 0;
    for (std::size_t i = 0; i < table.layers.size(); ++i) {
      for (const ParamGroup& g : table.layers[i].params) {
        const int layer = static_cast<int>(i);
        EXPECT_EQ(gpu->ops().read_parameter(layer, g.kind), cpu->ops().read_parameter(layer, g.kind))
            << "layer " << i << " " << to_string(g.kind);
        ++groups;
      }
    }
    EXPECT_EQ(groups, 8);  // 2 Conv2D + 2 Dense, kernel and bias each
  }
}

}  // namespace
}  // namespace mixlab
