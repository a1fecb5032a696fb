// infer_shapes: shapes, parameter groups, FLOPs and activation bytes, with numbers derived by hand
// in the comments; Keras's parameter counts and 'same' padding; errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "engine/core/error.h"
#include "engine/spec/shape_inference.h"
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

// One expected row of a shape table.
struct Row {
  Shape output;
  std::int64_t params;
  std::int64_t flops;
  std::int64_t bytes_f32;  // activation bytes under the float32 policy
};

void expect_table(const ShapeTable& table, const std::vector<Row>& rows) {
  ASSERT_EQ(table.layers.size(), rows.size());
  Shape input = table.input_shape;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const LayerInfo& info = table.layers[i];
    SCOPED_TRACE("layer " + std::to_string(i) + " (" + std::string(to_string(info.type)) + ")");
    EXPECT_EQ(info.index, static_cast<int>(i));
    EXPECT_EQ(info.input_shape, input);
    EXPECT_EQ(info.output_shape, rows[i].output);
    EXPECT_EQ(info.param_count, rows[i].params);
    std::int64_t group_sum = 0;
    for (const ParamGroup& g : info.params) group_sum += g.count();
    EXPECT_EQ(group_sum, info.param_count);
    EXPECT_EQ(info.flops, rows[i].flops);
    EXPECT_EQ(info.activation_bytes, rows[i].bytes_f32);
    EXPECT_EQ(info.compute, DType::f32);
    input = info.output_shape;
  }
  EXPECT_EQ(table.output_shape, rows.back().output);
}

std::int64_t bytes_total(const ShapeTable& t) {
  std::int64_t sum = 0;
  for (const LayerInfo& info : t.layers) sum += info.activation_bytes;
  return sum;
}

TEST(ShapeTable, FashionMlp) {
  const ShapeTable t = infer_shapes(test::fashion_mlp_spec());
  expect_table(t, {
                      // 28*28*1 = 784 elements; 2 FLOPs each; 784*4 bytes
                      {{28, 28, 1}, 0, 1568, 3136},
                      {{784}, 0, 0, 3136},
                      // 784*128 + 128 = 100,480 params; 2*784*128 + 128 (bias) + 128 (relu)
                      {{128}, 100480, 200960, 512},
                      // 128*10 + 10 = 1,290; 2*1280 + 10 (bias), linear
                      {{10}, 1290, 2570, 40},
                      // softmax: 3 per element
                      {{10}, 0, 30, 40},
                  });
  EXPECT_EQ(t.params_total, 101770);  // Keras's summary for this model: 101,770
  EXPECT_EQ(t.flops_total, 1568 + 200960 + 2570 + 30);
  EXPECT_EQ(t.activation_bytes_total, 3136 + 3136 + 512 + 40 + 40);  // 6,864
  EXPECT_EQ(t.activation_bytes_total, bytes_total(t));
}

TEST(ShapeTable, FashionCnn) {
  const ShapeTable t = infer_shapes(test::fashion_cnn_spec());
  expect_table(t, {
                      {{28, 28, 1}, 0, 1568, 3136},
                      // same padding keeps 28x28; 28*28*16 = 12,544 outputs;
                      // params 3*3*1*16 + 16 = 160; FLOPs 2*12544*9 + 12544 + 12544 = 250,880
                      {{28, 28, 16}, 160, 250880, 50176},
                      // 14*14*16 = 3,136 outputs, 4 FLOPs each
                      {{14, 14, 16}, 0, 12544, 12544},
                      {{3136}, 0, 0, 12544},
                      // 3136*128 + 128 = 401,536; 2*401,408 + 128 + 128 = 803,072
                      {{128}, 401536, 803072, 512},
                      {{10}, 1290, 2570, 40},
                      {{10}, 0, 30, 40},
                  });
  const LayerInfo& conv = t.layers[1];
  // pad_total = (28-1)*1 + 3 - 28 = 2: one each side.
  EXPECT_EQ(conv.pad_top, 1);
  EXPECT_EQ(conv.pad_bottom, 1);
  EXPECT_EQ(conv.pad_left, 1);
  EXPECT_EQ(conv.pad_right, 1);
  ASSERT_EQ(conv.params.size(), 2u);
  EXPECT_EQ(conv.params[0].kind, ParamKind::kernel);
  EXPECT_EQ(conv.params[0].shape, (Shape{3, 3, 1, 16}));
  EXPECT_EQ(conv.params[1].kind, ParamKind::bias);
  EXPECT_EQ(conv.params[1].shape, (Shape{16}));
  EXPECT_EQ(t.params_total, 402986);  // 160 + 401,536 + 1,290, as Keras's summary
  EXPECT_EQ(t.flops_total, 1070664);  // 1568 + 250880 + 12544 + 803072 + 2570 + 30
  EXPECT_EQ(t.activation_bytes_total, 78992);
}

TEST(ShapeTable, Cifar10Mlp) {
  const ShapeTable t = infer_shapes(test::cifar10_mlp_spec());
  expect_table(t, {
                      // 32*32*3 = 3,072
                      {{3072}, 0, 0, 12288},
                      // 3072*3000 + 3000 = 9,219,000; 2*9,216,000 + 3000 + 3000 = 18,438,000
                      {{3000}, 9219000, 18438000, 12000},
                      // 3000*1000 + 1000 = 3,001,000; 2*3,000,000 + 1000 + 1000 = 6,002,000
                      {{1000}, 3001000, 6002000, 4000},
                      // 1000*10 + 10 = 10,010; 2*10,000 + 10 = 20,010
                      {{10}, 10010, 20010, 40},
                      // sigmoid: 1 per element
                      {{10}, 0, 10, 40},
                  });
  EXPECT_EQ(t.params_total, 12230010);  // Keras: 12,230,010
  EXPECT_EQ(t.flops_total, 24460020);
  EXPECT_EQ(t.activation_bytes_total, 28368);
  const LayerInfo& fc1 = t.layers[1];
  ASSERT_EQ(fc1.params.size(), 2u);
  EXPECT_EQ(fc1.params[0].kind, ParamKind::kernel);
  EXPECT_EQ(fc1.params[0].shape, (Shape{3072, 3000}));  // Keras layout (in, units)
  EXPECT_EQ(fc1.params[1].kind, ParamKind::bias);
  EXPECT_EQ(fc1.params[1].shape, (Shape{3000}));
}

TEST(ShapeTable, Cifar100Convnet) {
  const ShapeTable t = infer_shapes(test::cifar100_convnet_spec());
  expect_table(t, {
                      // 32*32*3 = 3,072
                      {{32, 32, 3}, 0, 6144, 12288},
                      // valid 4x4: 32-4+1 = 29; 29*29*64 = 53,824 outputs;
                      // 4*4*3*64 + 64 = 3,136; 2*53824*48 + 53824 = 5,220,928 (linear)
                      {{29, 29, 64}, 3136, 5220928, 215296},
                      // floor((29-2)/2)+1 = 14; 14*14*64 = 12,544 outputs * 4
                      {{14, 14, 64}, 0, 50176, 50176},
                      // 13*13*32 = 5,408; 2*2*64*32 + 32 = 8,224; 2*5408*256 + 5408 = 2,774,304
                      {{13, 13, 32}, 8224, 2774304, 21632},
                      // floor((13-2)/2)+1 = 6; 6*6*32 = 1,152 * 4
                      {{6, 6, 32}, 0, 4608, 4608},
                      {{1152}, 0, 0, 4608},
                      // 1152*4096 + 4096 = 4,722,688; 2*4,718,592 + 4096 + 4096 = 9,445,376
                      {{4096}, 4722688, 9445376, 16384},
                      // 4096*4096 + 4096 = 16,781,312; 2*16,777,216 + 8192 = 33,562,624
                      {{4096}, 16781312, 33562624, 16384},
                      {{4096}, 16781312, 33562624, 16384},
                      {{4096}, 16781312, 33562624, 16384},
                      // 1 FLOP per element
                      {{4096}, 0, 4096, 16384},
                      // 4096*100 + 100 = 409,700; 2*409,600 + 100 = 819,300
                      {{100}, 409700, 819300, 400},
                      {{100}, 0, 300, 400},
                  });
  EXPECT_EQ(t.params_total, 55487684);  // Keras: 55,487,684
  EXPECT_EQ(t.flops_total, 119013104);
  EXPECT_EQ(t.activation_bytes_total, 391328);
  for (int i : {1, 3}) {
    EXPECT_EQ(t.layers[static_cast<std::size_t>(i)].pad_top +
                  t.layers[static_cast<std::size_t>(i)].pad_bottom +
                  t.layers[static_cast<std::size_t>(i)].pad_left +
                  t.layers[static_cast<std::size_t>(i)].pad_right,
              0);  // valid padding
  }
}

TEST(ShapeTable, MixedPrecisionHalvesActivationsExceptFloat32Layers) {
  for (Policy policy : {Policy::mixed_float16, Policy::mixed_bfloat16}) {
    SCOPED_TRACE(std::string(to_string(policy)));
    const DType half = policy == Policy::mixed_float16 ? DType::f16 : DType::bf16;
    for (const ModelSpec& spec : {test::fashion_mlp_spec(), test::fashion_cnn_spec(),
                                  test::cifar10_mlp_spec(), test::cifar100_convnet_spec()}) {
      SCOPED_TRACE(spec.name);
      const ShapeTable f32 = infer_shapes(spec, Policy::float32);
      const ShapeTable mixed = infer_shapes(spec, policy);
      ASSERT_EQ(f32.layers.size(), mixed.layers.size());
      for (std::size_t i = 0; i < f32.layers.size(); ++i) {
        const bool forced = spec.layers[i].force_float32;
        EXPECT_EQ(mixed.layers[i].compute, forced ? DType::f32 : half) << i;
        EXPECT_EQ(mixed.layers[i].activation_bytes,
                  forced ? f32.layers[i].activation_bytes : f32.layers[i].activation_bytes / 2)
            << i;
        // The policy changes dtypes, nothing else.
        EXPECT_EQ(mixed.layers[i].output_shape, f32.layers[i].output_shape);
        EXPECT_EQ(mixed.layers[i].flops, f32.layers[i].flops);
        EXPECT_EQ(mixed.layers[i].param_count, f32.layers[i].param_count);
      }
      EXPECT_EQ(mixed.params_total, f32.params_total);
      EXPECT_EQ(mixed.flops_total, f32.flops_total);
    }
  }
  // By hand: everything but the float32 output activation is halved.
  EXPECT_EQ(infer_shapes(test::fashion_mlp_spec(), Policy::mixed_float16).activation_bytes_total,
            (3136 + 3136 + 512 + 40) / 2 + 40);  // 3,452
  EXPECT_EQ(infer_shapes(test::fashion_cnn_spec(), Policy::mixed_float16).activation_bytes_total,
            (78992 - 40) / 2 + 40);  // 39,516
  EXPECT_EQ(infer_shapes(test::cifar10_mlp_spec(), Policy::mixed_bfloat16).activation_bytes_total,
            (28368 - 40) / 2 + 40);  // 14,204
  EXPECT_EQ(
      infer_shapes(test::cifar100_convnet_spec(), Policy::mixed_float16).activation_bytes_total,
      (391328 - 400) / 2 + 400);  // 195,864
}

// ---- Keras 'same' padding: out = ceil(in/s), pad_total = max((out-1)*s + k - in, 0),
// ---- top/left = pad_total/2, bottom/right the rest.

LayerInfo single_conv(Shape input, Size2 kernel, Size2 strides, Padding padding) {
  ModelSpec spec;
  spec.input_shape = std::move(input);
  LayerSpec c = conv2d(2, kernel, padding);
  c.strides = strides;
  spec.layers = {c, flatten()};
  return infer_shapes(spec).layers[0];
}

void expect_pads(const LayerInfo& info, int top, int bottom, int left, int right) {
  EXPECT_EQ(info.pad_top, top);
  EXPECT_EQ(info.pad_bottom, bottom);
  EXPECT_EQ(info.pad_left, left);
  EXPECT_EQ(info.pad_right, right);
}

TEST(SamePadding, OddInputStride2) {
  // in 7, k 3, s 2: out ceil(7/2) = 4; pad_total = 3*2 + 3 - 7 = 2 -> 1 / 1
  const LayerInfo info = single_conv({7, 7, 1}, {3, 3}, {2, 2}, Padding::same);
  EXPECT_EQ(info.output_shape, (Shape{4, 4, 2}));
  expect_pads(info, 1, 1, 1, 1);
}

TEST(SamePadding, EvenInputStride2PadsMoreAtBottomRight) {
  // in 8, k 3, s 2: out 4; pad_total = 3*2 + 3 - 8 = 1 -> 0 / 1 (TensorFlow's asymmetry)
  const LayerInfo info = single_conv({8, 8, 1}, {3, 3}, {2, 2}, Padding::same);
  EXPECT_EQ(info.output_shape, (Shape{4, 4, 2}));
  expect_pads(info, 0, 1, 0, 1);
}

TEST(SamePadding, EvenKernelStride1) {
  // in 5, k 4, s 1: out 5; pad_total = 4*1 + 4 - 5 = 3 -> 1 / 2
  const LayerInfo info = single_conv({5, 5, 3}, {4, 4}, {1, 1}, Padding::same);
  EXPECT_EQ(info.output_shape, (Shape{5, 5, 2}));
  expect_pads(info, 1, 2, 1, 2);
  // params 4*4*3*2 + 2 = 98; FLOPs 2*(5*5*2)*(4*4*3) + 50 = 4,850
  EXPECT_EQ(info.param_count, 98);
  EXPECT_EQ(info.flops, 4850);
}

TEST(SamePadding, StrideLargerThanKernelNeedsNoPadding) {
  // in 8, k 1, s 2: out 4; (4-1)*2 + 1 - 8 = -1 -> 0
  const LayerInfo info = single_conv({8, 8, 1}, {1, 1}, {2, 2}, Padding::same);
  EXPECT_EQ(info.output_shape, (Shape{4, 4, 2}));
  expect_pads(info, 0, 0, 0, 0);
}

TEST(SamePadding, RowsAndColumnsIndependently) {
  // rows: in 7, k 3, s 2 -> out 4, pad 1/1; cols: in 8, k 3, s 2 -> out 4, pad 0/1
  const LayerInfo info = single_conv({7, 8, 1}, {3, 3}, {2, 2}, Padding::same);
  EXPECT_EQ(info.output_shape, (Shape{4, 4, 2}));
  expect_pads(info, 1, 1, 0, 1);
  // rows: in 9, k 5, s 3 -> out 3, pad_total 2*3 + 5 - 9 = 2 -> 1/1; cols: in 9, k 2, s 1 -> out
  // 9, pad_total 1 -> 0/1
  const LayerInfo info2 = single_conv({9, 9, 1}, {5, 2}, {3, 1}, Padding::same);
  EXPECT_EQ(info2.output_shape, (Shape{3, 9, 2}));
  expect_pads(info2, 1, 1, 0, 1);
}

TEST(SamePadding, Pooling) {
  // MaxPooling2D(2) same on 7: out ceil(7/2) = 4; pad_total = 3*2 + 2 - 7 = 1 -> 0 / 1
  ModelSpec spec;
  spec.input_shape = Shape{7, 7, 3};
  LayerSpec pool = max_pool(2);
  pool.padding = Padding::same;
  spec.layers = {pool, flatten()};
  const LayerInfo info = infer_shapes(spec).layers[0];
  EXPECT_EQ(info.output_shape, (Shape{4, 4, 3}));
  expect_pads(info, 0, 1, 0, 1);
  EXPECT_EQ(info.flops, 4 * 4 * 3 * 4);  // window size per output element
  // The same pool with valid padding drops the last row and column: floor((7-2)/2)+1 = 3.
  spec.layers[0].padding = Padding::valid;
  const LayerInfo valid = infer_shapes(spec).layers[0];
  EXPECT_EQ(valid.output_shape, (Shape{3, 3, 3}));
  expect_pads(valid, 0, 0, 0, 0);
}

TEST(ValidPadding, OutputSizes) {
  // floor((7-3)/2)+1 = 3
  EXPECT_EQ(single_conv({7, 7, 1}, {3, 3}, {2, 2}, Padding::valid).output_shape, (Shape{3, 3, 2}));
  // kernel as large as the input: 1x1
  EXPECT_EQ(single_conv({5, 4, 1}, {5, 4}, {1, 1}, Padding::valid).output_shape, (Shape{1, 1, 2}));
  // floor((8-3)/3)+1 = 2 rows; floor((8-1)/1)+1 = 8 cols
  EXPECT_EQ(single_conv({8, 8, 1}, {3, 1}, {3, 1}, Padding::valid).output_shape, (Shape{2, 8, 2}));
}

// ---- per-layer rules ----

TEST(LayerRules, DenseOnRank3AppliesToLastAxis) {
  ModelSpec spec;
  spec.input_shape = Shape{4, 5, 6};
  spec.layers = {dense(7, ActivationFn::relu), flatten(), dense(3)};
  const ShapeTable t = infer_shapes(spec);
  const LayerInfo& d = t.layers[0];
  EXPECT_EQ(d.output_shape, (Shape{4, 5, 7}));
  ASSERT_EQ(d.params.size(), 2u);
  EXPECT_EQ(d.params[0].shape, (Shape{6, 7}));
  EXPECT_EQ(d.params[1].shape, (Shape{7}));
  EXPECT_EQ(d.param_count, 6 * 7 + 7);  // 49, as Keras
  // 20 positions * 2*6*7 + 140 (bias) + 140 (relu) = 1,960
  EXPECT_EQ(d.flops, 1960);
  EXPECT_EQ(d.activation_bytes, 4 * 5 * 7 * 4);
  EXPECT_EQ(t.layers[1].output_shape, (Shape{140}));
  EXPECT_EQ(t.layers[2].param_count, 140 * 3 + 3);
}

TEST(LayerRules, NoBiasDropsTheBiasGroup) {
  ModelSpec spec;
  spec.input_shape = Shape{6, 6, 2};
  LayerSpec c = conv2d(3, {3, 3});
  c.use_bias = false;
  LayerSpec d = dense(5);
  d.use_bias = false;
  spec.layers = {c, flatten(), d};
  const ShapeTable t = infer_shapes(spec);
  ASSERT_EQ(t.layers[0].params.size(), 1u);
  EXPECT_EQ(t.layers[0].params[0].kind, ParamKind::kernel);
  EXPECT_EQ(t.layers[0].param_count, 3 * 3 * 2 * 3);
  EXPECT_EQ(t.layers[0].flops, 2 * (4 * 4 * 3) * (3 * 3 * 2));  // no bias add
  ASSERT_EQ(t.layers[2].params.size(), 1u);
  EXPECT_EQ(t.layers[2].params[0].shape, (Shape{48, 5}));
  EXPECT_EQ(t.layers[2].flops, 2 * 48 * 5);
  EXPECT_EQ(t.params_total, 54 + 240);
}

TEST(LayerRules, ActivationCosts) {
  // Per element: linear 0, relu/sigmoid/tanh 1, softmax 3, gelu 8; fused or on their own.
  const std::pair<ActivationFn, int> costs[] = {
      {ActivationFn::linear, 0}, {ActivationFn::relu, 1},    {ActivationFn::sigmoid, 1},
      {ActivationFn::tanh, 1},   {ActivationFn::softmax, 3}, {ActivationFn::gelu, 8}};
  for (auto [fn, cost] : costs) {
    SCOPED_TRACE(std::string(to_string(fn)));
    ModelSpec spec;
    spec.input_shape = Shape{4};
    spec.layers = {dense(10, fn), activation(fn)};
    const ShapeTable t = infer_shapes(spec);
    EXPECT_EQ(t.layers[0].flops, 2 * 4 * 10 + 10 + 10 * cost);
    EXPECT_EQ(t.layers[1].flops, 10 * cost);
    ModelSpec conv;
    conv.input_shape = Shape{3, 3, 1};
    conv.layers = {conv2d(2, {2, 2}, Padding::valid, fn), flatten()};
    // 2x2x2 = 8 outputs, 4 MACs each
    EXPECT_EQ(infer_shapes(conv).layers[0].flops, 2 * 8 * 4 + 8 + 8 * cost);
  }
}

TEST(LayerRules, ElementwiseAndPooling) {
  ModelSpec spec;
  spec.input_shape = Shape{9, 9, 2};
  LayerSpec avg = max_pool(3);
  avg.type = LayerType::AveragePooling2D;
  LayerSpec max = max_pool(2);
  max.strides = {1, 1};
  spec.layers = {rescaling(0.5), dropout(0.5), avg, max, flatten(), activation(ActivationFn::relu)};
  const ShapeTable t = infer_shapes(spec);
  EXPECT_EQ(t.layers[0].flops, 2 * 162);  // Rescaling: 2 per element of 9*9*2 = 162
  EXPECT_EQ(t.layers[1].flops, 162);      // Dropout: 1 per element
  EXPECT_EQ(t.layers[1].output_shape, (Shape{9, 9, 2}));
  EXPECT_EQ(t.layers[2].output_shape, (Shape{3, 3, 2}));
  EXPECT_EQ(t.layers[2].flops, 18 * 9);  // 3*3*2 outputs, window 9
  // pool 2 stride 1 valid on 3: 2
  EXPECT_EQ(t.layers[3].output_shape, (Shape{2, 2, 2}));
  EXPECT_EQ(t.layers[3].flops, 8 * 4);
  EXPECT_EQ(t.layers[4].output_shape, (Shape{8}));
  EXPECT_EQ(t.layers[4].flops, 0);
  EXPECT_EQ(t.output_shape, (Shape{8}));
}

TEST(LayerRules, FlattenOfAFlatInputIsIdentity) {
  ModelSpec spec;
  spec.input_shape = Shape{12};
  spec.layers = {flatten(), dense(2)};
  EXPECT_EQ(infer_shapes(spec).layers[0].output_shape, (Shape{12}));
}

TEST(LayerRules, HelpersAndNames) {
  EXPECT_EQ(format_shape({28, 28, 1}), "28x28x1");
  EXPECT_EQ(format_shape({10}), "10");
  EXPECT_EQ(format_shape({}), "()");
  EXPECT_EQ(num_elements({28, 28, 1}), 784);
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(to_string(ParamKind::kernel), "kernel");
  EXPECT_EQ(to_string(ParamKind::bias), "bias");
  EXPECT_EQ((ParamGroup{ParamKind::kernel, {3, 3, 1, 16}}.count()), 144);
}

// ---- errors ----

std::string shape_error(const ModelSpec& spec, Policy policy = Policy::float32) {
  try {
    infer_shapes(spec, policy);
  } catch (const SpecError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

#define EXPECT_CONTAINS(haystack, needle)                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "expected to find: " << (needle) << "\n               in: " << (haystack)

// Issue 27's layers: the shape errors name the layer and what does not fit.
TEST(ShapeErrors, NewLayersNameWhatDoesNotFit) {
  const auto error = [](const char* layer) {
    return shape_error(
        parse_model_json(std::string(R"({"input": {"shape": [8, 8, 3]}, "layers": [)") + layer +
                         R"(, {"type": "Flatten"}, {"type": "Dense", "units": 2}]})"));
  };
  EXPECT_EQ(error(R"({"type": "BatchNormalization", "axis": 1})"),
            "layer 0 (BatchNormalization): axis 1 of input 8x8x3: MixLab normalizes the last axis "
            "(-1) only, Keras's default");
  EXPECT_EQ(error(R"({"type": "DepthwiseConv2D", "kernel_size": 9})"),
            "layer 0 (DepthwiseConv2D): kernel_size 9x9 does not fit input 8x8x3 with padding "
            "'valid'");
  EXPECT_EQ(error(R"({"type": "SeparableConv2D", "filters": 4, "kernel_size": [3, 9]})"),
            "layer 0 (SeparableConv2D): kernel_size 3x9 does not fit input 8x8x3 with padding "
            "'valid'");
  EXPECT_EQ(error(R"({"type": "Reshape", "target_shape": [5, -1]})"),
            "layer 0 (Reshape): target_shape [5, -1] does not hold the 192 values of input 8x8x3");
  EXPECT_EQ(error(R"({"type": "Normalization", "mean": [1, 2], "variance": [1, 1]})"),
            "layer 0 (Normalization): mean has 2 values for the 3 channels of input 8x8x3: give "
            "one value, or one per channel");
  EXPECT_EQ(error(R"({"type": "Normalization", "axis": 2})"),
            "layer 0 (Normalization): axis 2 of input 8x8x3: MixLab normalizes the last axis (-1) "
            "only, Keras's default");
  // Nothing to train; a subtraction and a division per element.
  const ShapeTable norm = infer_shapes(parse_model_json(R"({"input": {"shape": [8, 8, 3]},
      "layers": [{"type": "Normalization", "mean": [1, 2, 3], "variance": 4}, {"type": "Flatten"},
                 {"type": "Dense", "units": 2}]})"));
  EXPECT_EQ(norm.layers[0].output_shape, (Shape{8, 8, 3}));
  EXPECT_TRUE(norm.layers[0].params.empty());
  EXPECT_EQ(norm.layers[0].flops, 2 * 8 * 8 * 3);
  // The separable layer's parameters and FLOPs: the depthwise kernel, the 1x1 one, the bias.
  const ModelSpec sep = parse_model_json(R"({"input": {"shape": [8, 8, 3]}, "layers": [
      {"type": "SeparableConv2D", "filters": 4, "kernel_size": 3, "depth_multiplier": 2},
      {"type": "Flatten"}, {"type": "Dense", "units": 2}]})");
  const ShapeTable table = infer_shapes(sep);
  const LayerInfo& info = table.layers[0];
  EXPECT_EQ(info.output_shape, (Shape{6, 6, 4}));
  ASSERT_EQ(info.params.size(), 3U);
  EXPECT_EQ(info.params[1].kind, ParamKind::pointwise_kernel);
  EXPECT_EQ(info.param_count, 3 * 3 * 3 * 2 + 6 * 4 + 4);
  EXPECT_EQ(info.flops, 2 * 36 * 6 * 9 + 2 * 36 * 4 * 6 + 36 * 4);
}

TEST(ShapeErrors, KernelDoesNotFit) {
  // 16 -> conv 3: 14 -> pool 2: 7 -> conv 3: 5 -> conv 2: 4 -> conv 5 valid: does not fit.
  ModelSpec spec;
  spec.input_shape = Shape{16, 16, 3};
  spec.layers = {conv2d(32, {3, 3}), max_pool(2),       conv2d(32, {3, 3}),
                 conv2d(32, {2, 2}), conv2d(8, {5, 5}), flatten()};
  EXPECT_EQ(shape_error(spec),
            "layer 4 (Conv2D): kernel_size 5x5 does not fit input 4x4x32 with padding 'valid'");
  spec.layers[4].padding = Padding::same;  // with 'same' any kernel fits
  EXPECT_EQ(infer_shapes(spec).layers[4].output_shape, (Shape{4, 4, 8}));
  // Only one axis too small.
  spec.layers[4] = conv2d(8, {1, 5});
  EXPECT_EQ(shape_error(spec),
            "layer 4 (Conv2D): kernel_size 1x5 does not fit input 4x4x32 with padding 'valid'");
}

TEST(ShapeErrors, PoolDoesNotFit) {
  ModelSpec spec;
  spec.input_shape = Shape{2, 2, 4};
  spec.layers = {flatten()};
  spec.layers.insert(spec.layers.begin(), max_pool(3));
  EXPECT_EQ(shape_error(spec),
            "layer 0 (MaxPooling2D): pool_size 3x3 does not fit input 2x2x4 with padding 'valid'");
  spec.layers[0].type = LayerType::AveragePooling2D;
  EXPECT_EQ(shape_error(spec),
            "layer 0 (AveragePooling2D): pool_size 3x3 does not fit input "
            "2x2x4 with padding 'valid'");
}

TEST(ShapeErrors, ImageLayersOnAFlatInput) {
  ModelSpec spec;
  spec.input_shape = Shape{28, 28, 1};
  spec.layers = {rescaling(0.5), flatten(), conv2d(4, {3, 3}), flatten(), dense(10)};
  std::string msg = shape_error(spec);
  EXPECT_EQ(msg.rfind("layer 2 (Conv2D): needs an [H, W, C] input but gets 784 (rank 1)", 0), 0u)
      << msg;
  EXPECT_CONTAINS(msg, "remove the Flatten at layer 1");
  // No Flatten: the input itself is flat.
  spec.input_shape = Shape{784};
  spec.layers = {max_pool(2), flatten(), dense(10)};
  msg = shape_error(spec);
  EXPECT_EQ(msg.rfind("layer 0 (MaxPooling2D): needs an [H, W, C] input but gets 784 (rank 1)", 0),
            0u)
      << msg;
  EXPECT_CONTAINS(msg, "give the model's input shape as [H, W, C]");
}

TEST(ShapeErrors, OutputMustBeFlat) {
  ModelSpec spec;
  spec.input_shape = Shape{8, 8, 3};
  spec.layers = {conv2d(4, {3, 3}), dense(10)};
  const std::string msg = shape_error(spec);
  EXPECT_EQ(msg.rfind("layer 1 (Dense): the model's output 6x6x10 is not flat", 0), 0u) << msg;
  EXPECT_CONTAINS(msg, "sparse_categorical_crossentropy");
  EXPECT_CONTAINS(msg, "add Flatten and Dense");
  spec.layers = {activation(ActivationFn::softmax)};
  EXPECT_CONTAINS(shape_error(spec), "layer 0 (Activation): the model's output 8x8x3 is not flat");
}

TEST(ShapeErrors, InputAndEmptyModels) {
  ModelSpec spec;
  spec.input_shape = Shape{28, 0, 1};
  spec.layers = {flatten(), dense(2)};
  EXPECT_EQ(shape_error(spec), "input: shape 28x0x1 has a dimension out of range [1, 2147483647]");
  spec.input_shape = Shape{2, 28, 28, 1};
  EXPECT_EQ(shape_error(spec),
            "input: shape must be [features], [steps, features] or [H, W, C], got 4 dimensions");
  spec.input_shape = Shape{};
  EXPECT_EQ(shape_error(spec),
            "input: shape must be [features], [steps, features] or [H, W, C], got 0 dimensions");
  spec.input_shape = Shape{4};
  spec.layers.clear();
  EXPECT_EQ(shape_error(spec), "layers: the model has no layers");
}

// Sequences (issue 29): a (steps, features) input; Dense acts on the last axis, the 1D global
// poolings reduce the steps, and what needs an image says so.
TEST(ShapeInference, SequencesOfFeatures) {
  ModelSpec spec;
  spec.input_shape = Shape{28, 16};
  LayerSpec average;
  average.type = LayerType::GlobalAveragePooling1D;
  LayerSpec maximum;
  maximum.type = LayerType::GlobalMaxPooling1D;
  maximum.keepdims = true;
  spec.layers = {dense(8), average, dense(3)};
  ShapeTable t = infer_shapes(spec);
  EXPECT_EQ(t.layers[0].output_shape, (Shape{28, 8}));
  EXPECT_EQ(t.layers[0].param_count, 16 * 8 + 8);
  EXPECT_EQ(t.layers[1].output_shape, (Shape{8}));
  spec.layers = {dense(8), maximum, flatten(), dense(3)};
  t = infer_shapes(spec);
  EXPECT_EQ(t.layers[1].output_shape, (Shape{1, 8}));
  EXPECT_EQ(t.layers[2].output_shape, (Shape{8}));
  spec.layers = {conv2d(4, {3, 3}), flatten(), dense(3)};
  EXPECT_CONTAINS(shape_error(spec), "needs an [H, W, C] input but gets 28x16 (rank 2)");
  spec.input_shape = Shape{8, 8, 3};
  spec.layers = {average, dense(3)};
  EXPECT_CONTAINS(shape_error(spec),
                  "layer 0 (GlobalAveragePooling1D): needs a (steps, features) input but gets "
                  "8x8x3 (rank 3)");
  // A (steps, classes) output is a label per step under sparse crossentropy (a language
  // model's), and not flat for the other losses.
  spec.input_shape = Shape{28, 16};
  spec.layers = {dense(8)};
  t = infer_shapes(spec);
  EXPECT_EQ(t.classes(), 8);
  EXPECT_EQ(t.label_positions(), 28);
  spec.loss = LossKind::categorical_crossentropy;
  EXPECT_CONTAINS(shape_error(spec), "is not flat");
  spec.loss = LossKind::sparse_categorical_crossentropy;
  spec.input_shape = Shape{4, 4, 2};
  EXPECT_CONTAINS(shape_error(spec), "needs a (classes) output or a (steps, classes) one");
}

TEST(ShapeInference, MultiHeadAttentionHasKerasParametersAndShapes) {
  ModelSpec spec;
  spec.input_shape = Shape{10, 16};
  LayerSpec mha;
  mha.type = LayerType::MultiHeadAttention;
  mha.num_heads = 4;
  mha.key_dim = 8;
  spec.layers = {mha, dense(3)};
  ShapeTable t = infer_shapes(spec);
  EXPECT_EQ(t.layers[0].output_shape, (Shape{10, 16}));
  // Keras: 3 x (16*4*8 + 4*8) + (4*8*16 + 16) = 1584 + 528
  EXPECT_EQ(t.layers[0].param_count, 3 * (16 * 32 + 32) + (32 * 16 + 16));
  ASSERT_EQ(t.layers[0].params.size(), 8u);
  EXPECT_EQ(t.layers[0].params[0].kind, ParamKind::query_kernel);
  EXPECT_EQ(t.layers[0].params[0].shape, (Shape{16, 4, 8}));
  EXPECT_EQ(t.layers[0].params[6].kind, ParamKind::kernel);
  EXPECT_EQ(t.layers[0].params[6].shape, (Shape{4, 8, 16}));
  mha.value_dim = 5;
  mha.output_dim = 7;
  mha.use_bias = false;
  spec.layers = {mha, dense(3)};
  t = infer_shapes(spec);
  EXPECT_EQ(t.layers[0].output_shape, (Shape{10, 7}));
  EXPECT_EQ(t.layers[0].param_count, 2 * 16 * 32 + 16 * 20 + 20 * 7);
  spec.input_shape = Shape{16};
  EXPECT_CONTAINS(shape_error(spec), "needs a (steps, features) input but gets 16 (rank 1)");
  spec.input_shape = Shape{10, 16};
  spec.layers[0].attention_dropout = 0.1;
  EXPECT_CONTAINS(shape_error(spec), "dropout 0.1 on the attention weights is not supported yet");
}

TEST(ShapeInference, TokensPositionsAndLayerNormalization) {
  ModelSpec spec;
  spec.input_shape = Shape{10};
  LayerSpec tokens;
  tokens.type = LayerType::Embedding;
  tokens.name = "tokens";
  tokens.input_dim = 100;
  tokens.output_dim = 12;
  LayerSpec positions;
  positions.type = LayerType::PositionEmbedding;
  positions.name = "positions";
  positions.sequence_length = 16;
  LayerSpec add;
  add.type = LayerType::Add;
  add.inputs = {"tokens", "positions"};
  LayerSpec norm;
  norm.type = LayerType::LayerNormalization;
  spec.layers = {tokens, positions, add, norm, dense(100)};
  const ShapeTable t = infer_shapes(spec, Policy::mixed_bfloat16);
  EXPECT_EQ(t.layers[0].output_shape, (Shape{10, 12}));
  ASSERT_EQ(t.layers[0].params.size(), 1u);
  EXPECT_EQ(t.layers[0].params[0].kind, ParamKind::embeddings);
  EXPECT_EQ(t.layers[0].params[0].shape, (Shape{100, 12}));
  EXPECT_EQ(t.layers[1].output_shape, (Shape{10, 12}));
  EXPECT_EQ(t.layers[1].params[0].shape, (Shape{16, 12}));  // its 16 positions, 10 used
  EXPECT_EQ(t.layers[3].param_count, 24);                   // gamma and beta
  EXPECT_EQ(t.layers[3].compute, DType::bf16);
  EXPECT_EQ(t.label_positions(), 10);
  EXPECT_EQ(t.params_total, 1200 + 192 + 24 + 12 * 100 + 100);

  // An Embedding reads the model's (steps) ids; a PositionEmbedding needs a vector for every step.
  spec.layers = {dense(4), tokens, dense(3)};
  spec.layers[1].inputs = {};
  EXPECT_CONTAINS(shape_error(spec),
                  "layer 1 (Embedding) 'tokens': reads token ids, so its input must be the "
                  "model's input of shape [steps], but it reads another layer's 4");
  spec.input_shape = Shape{10, 3};
  spec.layers = {tokens, flatten(), dense(3)};
  EXPECT_CONTAINS(shape_error(spec), "but it reads the model's input 10x3");
  spec.input_shape = Shape{20};
  spec.layers = {tokens, positions, add, dense(3)};
  EXPECT_CONTAINS(shape_error(spec),
                  "layer 1 (PositionEmbedding) 'positions': sequence_length 16 is shorter than "
                  "its input's 20 steps");
  norm.axis = 1;
  spec.input_shape = Shape{20, 4};
  spec.layers = {norm, flatten(), dense(3)};
  EXPECT_CONTAINS(shape_error(spec), "normalizes the last axis (-1) only");
  norm.axis = -1;
  norm.epsilon = 0.0;
  spec.layers = {norm, flatten(), dense(3)};
  EXPECT_CONTAINS(shape_error(spec), "epsilon 0 must be a finite number above 0");
}

TEST(ShapeErrors, ValuesOfSpecsBuiltInMemory) {
  // The editor builds specs without the parser; the same range checks apply.
  ModelSpec spec;
  spec.input_shape = Shape{8, 8, 3};
  spec.layers = {flatten(), dense(0)};
  EXPECT_EQ(shape_error(spec), "layer 1 (Dense): units 0 is out of range [1, 2147483647]");
  spec.layers = {conv2d(0, {3, 3}), flatten()};
  EXPECT_EQ(shape_error(spec), "layer 0 (Conv2D): filters 0 is out of range [1, 2147483647]");
  spec.layers = {conv2d(2, {0, 3}), flatten()};
  EXPECT_EQ(
      shape_error(spec),
      "layer 0 (Conv2D): kernel_size 0x3 is out of range: h and w must be in [1, 2147483647]");
  spec.layers = {conv2d(2, {3, 3}), flatten()};
  spec.layers[0].strides = {1, 0};  // would divide by zero
  EXPECT_EQ(shape_error(spec),
            "layer 0 (Conv2D): strides 1x0 is out of range: h and w must be in [1, 2147483647]");
  spec.layers = {max_pool(2), flatten()};
  spec.layers[0].strides = {0, 0};
  EXPECT_CONTAINS(shape_error(spec), "layer 0 (MaxPooling2D): strides 0x0 is out of range");
  spec.layers[0] = max_pool(2);
  spec.layers[0].pool_size = {-1, 2};
  EXPECT_CONTAINS(shape_error(spec), "layer 0 (MaxPooling2D): pool_size -1x2 is out of range");
  spec.layers = {flatten(), dropout(1.5)};
  EXPECT_EQ(shape_error(spec), "layer 1 (Dropout): rate 1.5 is out of range [0, 1)");
  spec.layers = {flatten(), dropout(std::nan(""))};
  EXPECT_CONTAINS(shape_error(spec), "layer 1 (Dropout): rate nan is out of range [0, 1)");
  spec.layers = {rescaling(std::numeric_limits<double>::infinity()), flatten()};
  EXPECT_EQ(shape_error(spec), "layer 0 (Rescaling): scale inf must be a finite number");
  spec.layers = {rescaling(1.0), flatten()};
  spec.layers[0].offset = std::nan("");
  EXPECT_EQ(shape_error(spec), "layer 0 (Rescaling): offset nan must be a finite number");
}

// The index the message names, as SpecError::layer() (the editor marks that row); -1 when the
// error is not about one layer.
int error_layer(const ModelSpec& spec) {
  try {
    infer_shapes(spec);
  } catch (const SpecError& e) {
    return e.layer();
  }
  ADD_FAILURE() << "no error";
  return -2;
}

TEST(ShapeErrors, CarryTheLayerIndex) {
  ModelSpec spec;
  spec.input_shape = Shape{28, 28, 1};
  spec.layers = {rescaling(0.5), flatten(), conv2d(4, {3, 3}), flatten(), dense(10)};
  EXPECT_EQ(error_layer(spec), 2);  // needs an image
  spec.layers = {conv2d(4, {3, 3}), max_pool(30), flatten(), dense(10)};
  EXPECT_EQ(error_layer(spec), 1);  // window does not fit
  spec.layers = {flatten(), dense(10), dropout(1.5)};
  EXPECT_EQ(error_layer(spec), 2);  // value checks
  spec.layers = {conv2d(4, {3, 3}), dense(10)};
  EXPECT_EQ(error_layer(spec), 1);  // output not flat: the last layer
  spec.input_shape = Shape{2147483647, 2147483647, 2147483647};
  spec.layers = {flatten(), dense(2)};
  EXPECT_EQ(error_layer(spec), 0);  // overflow inside a layer
  spec.input_shape = Shape{28, 28, 1, 1};
  EXPECT_EQ(error_layer(spec), -1);  // the input
  spec.input_shape = Shape{4};
  spec.layers.clear();
  EXPECT_EQ(error_layer(spec), -1);  // no layers
}

TEST(ShapeErrors, SizesThatOverflowAreErrorsNotUndefinedBehaviour) {
  ModelSpec spec;
  spec.input_shape = Shape{2147483647, 2147483647, 2147483647};
  spec.layers = {flatten(), dense(2)};
  EXPECT_CONTAINS(shape_error(spec), "layer 0 (Flatten): the model is too large");
  spec.input_shape = Shape{2147483647};
  spec.layers = {dense(2147483647), dense(2147483647), dense(2)};
  // 2^31 * 2^31 * 2 fits int64 only just; the next product does not.
  EXPECT_CONTAINS(shape_error(spec), "the model is too large");
}

}  // namespace
}  // namespace mixlab
