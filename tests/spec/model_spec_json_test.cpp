// to_json: the file format it writes, defaults left out, and parse_model_json(to_json(s)) == s.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <span>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "engine/core/error.h"
#include "engine/spec/model_spec.h"
#include "engine/spec/shape_inference.h"
#include "tests/spec/example_specs.h"

namespace mixlab {
namespace {

void expect_round_trip(const ModelSpec& spec) {
  for (int indent : {2, 0, 4, -1}) {
    const std::string text = to_json(spec, indent);
    ModelSpec back;
    ASSERT_NO_THROW(back = parse_model_json(text)) << text;
    EXPECT_EQ(back, spec) << "indent " << indent << ":\n" << text;
    EXPECT_EQ(to_json(back, indent), text);  // and writing is stable
  }
}

TEST(ModelJson, WritesTheFileFormat) {
  // The brief's fashion-cnn; fields at their defaults (strides, padding 'valid', linear, ...)
  // are left out, an equal kernel as one integer, one layer per line.
  EXPECT_EQ(to_json(test::fashion_cnn_spec()),
            R"({
  "name": "fashion-cnn",
  "input": {"shape": [28, 28, 1]},
  "layers": [
    {"type": "Rescaling", "scale": 0.00392156862745098},
    {"type": "Conv2D", "filters": 16, "kernel_size": 3, "padding": "same", "activation": "relu"},
    {"type": "MaxPooling2D"},
    {"type": "Flatten"},
    {"type": "Dense", "units": 128, "activation": "relu"},
    {"type": "Dense", "units": 10},
    {"type": "Activation", "activation": "softmax", "dtype": "float32"}
  ]
}
)");
  EXPECT_EQ(
      to_json(test::fashion_mlp_spec(), -1),
      R"({"name":"fashion-mlp","input":{"shape":[28,28,1]},"layers":[{"type":"Rescaling","scale":0.00392156862745098},{"type":"Flatten"},{"type":"Dense","units":128,"activation":"relu"},{"type":"Dense","units":10},{"type":"Activation","activation":"softmax","dtype":"float32"}]})");
}

TEST(ModelJson, DefaultsAreLeftOut) {
  ModelSpec spec;
  spec.name = "model";
  spec.input_shape = {8, 8, 3};
  spec.layers = {test::conv2d(4, {2, 2}), test::max_pool(2), test::flatten(), test::dense(3),
                 test::rescaling(2.0)};
  const std::string text = to_json(spec);
  for (const char* key : {"\"name\"", "\"loss\"", "\"strides\"", "\"padding\"", "\"activation\"",
                          "\"use_bias\"", "\"pool_size\"", "\"offset\"", "\"dtype\""}) {
    EXPECT_EQ(text.find(key), std::string::npos) << key << " in\n" << text;
  }
  // Required fields are always written, even at a Keras-like value.
  EXPECT_NE(text.find("\"kernel_size\": 2"), std::string::npos) << text;
  EXPECT_NE(text.find("\"scale\": 2.0"), std::string::npos) << text;
  ModelSpec d;
  d.input_shape = {4};
  d.layers = {test::dropout(0.0), test::activation(ActivationFn::linear), test::dense(2)};
  const std::string dtext = to_json(d);
  EXPECT_NE(dtext.find("\"rate\": 0.0"), std::string::npos) << dtext;
  EXPECT_NE(dtext.find("\"activation\": \"linear\""), std::string::npos) << dtext;
  expect_round_trip(spec);
  expect_round_trip(d);
}

TEST(ModelJson, NonDefaultsAreWritten) {
  ModelSpec spec;
  spec.name = "m";
  spec.input_shape = {9, 9, 2};
  spec.loss = LossKind::categorical_crossentropy;
  LayerSpec conv = test::conv2d(4, {3, 2}, Padding::same, ActivationFn::tanh);
  conv.strides = {2, 1};
  conv.use_bias = false;
  conv.name = "conv";
  LayerSpec pool = test::max_pool(3);
  pool.strides = {1, 1};
  pool.padding = Padding::same;
  LayerSpec scale = test::rescaling(0.5);
  scale.offset = -1;
  spec.layers = {scale, conv, pool, test::flatten(), test::dense(2)};
  const std::string text = to_json(spec);
  for (const char* piece :
       {R"("name": "m")", R"("loss": "categorical_crossentropy")", R"("offset": -1.0)",
        R"("name": "conv")", R"("kernel_size": [3, 2])", R"("strides": [2, 1])",
        R"("padding": "same")", R"("activation": "tanh")", R"("use_bias": false)",
        R"("pool_size": 3, "strides": 1, "padding": "same")"}) {
    EXPECT_NE(text.find(piece), std::string::npos) << piece << " not in\n" << text;
  }
  expect_round_trip(spec);
}

TEST(ModelJson, PoolingStridesWrittenOnlyWhenNotThePoolSize) {
  LayerSpec pool = test::max_pool(3);  // strides 3 = pool_size: Keras's None
  ModelSpec spec;
  spec.input_shape = {9, 9, 1};
  spec.layers = {pool, test::flatten()};
  EXPECT_EQ(to_json(spec).find("strides"), std::string::npos) << to_json(spec);
  spec.layers[0].strides = {2, 2};  // equal to the default pool size, but not to this pool's
  EXPECT_NE(to_json(spec).find("\"strides\": 2"), std::string::npos) << to_json(spec);
  expect_round_trip(spec);
}

// Keras's noise_shape: null for None, written back so, and checked against the input.
TEST(ModelJson, DropoutNoiseShapeRoundTripsAndMustFitItsInput) {
  const ModelSpec spec = parse_model_json(R"({"input": {"shape": [4, 4, 3]}, "layers": [
      {"type": "Dropout", "rate": 0.2, "noise_shape": [null, 1, 1, 1]},
      {"type": "Flatten"}, {"type": "Dense", "units": 2}]})");
  EXPECT_EQ(spec.layers[0].noise_shape, (std::vector<std::int64_t>{-1, 1, 1, 1}));
  EXPECT_NE(to_json(spec).find(R"("noise_shape": [null, 1, 1, 1])"), std::string::npos)
      << to_json(spec);
  expect_round_trip(spec);
  ModelSpec wrong = spec;
  wrong.layers[0].noise_shape = {-1, 1, 2};
  try {
    infer_shapes(wrong);
    FAIL() << "noise_shape [null, 1, 2] accepted for 4x4x3";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("noise_shape [null, 1, 2] does not fit its input 4x4x3"),
              std::string::npos)
        << e.what();
  }
}

TEST(ModelJson, ExampleModelsRoundTrip) {
  for (const ModelSpec& spec : {test::fashion_mlp_spec(), test::fashion_cnn_spec(),
                                test::cifar10_mlp_spec(), test::cifar100_convnet_spec()}) {
    SCOPED_TRACE(spec.name);
    expect_round_trip(spec);
  }
}

TEST(ModelJson, EveryFieldSetRoundTrips) {
  ModelSpec spec;
  // Quotes, backslash, UTF-8 (control characters are refused: ModelFile.ControlCharacters...).
  spec.name = "every \"field\" \\ set \xc3\xbc";
  spec.input_shape = {31, 17, 5};
  spec.loss = LossKind::binary_crossentropy;
  LayerSpec r = test::rescaling(1.0 / 3);
  r.offset = -0.1;
  r.name = "scale";
  r.force_float32 = true;
  LayerSpec c = test::conv2d(7, {5, 3}, Padding::same, ActivationFn::gelu);
  c.strides = {3, 2};
  c.use_bias = false;
  c.name = "conv";
  c.force_float32 = true;
  LayerSpec m = test::max_pool(3);
  m.pool_size = {3, 2};
  m.strides = {1, 2};
  m.padding = Padding::same;
  m.name = "max";
  m.force_float32 = true;
  LayerSpec a = m;
  a.type = LayerType::AveragePooling2D;
  a.name = "avg";
  LayerSpec f = test::flatten();
  f.name = "flat";
  f.force_float32 = true;
  LayerSpec dr = test::dropout(0.9999999999999999);  // largest double below 1
  dr.name = "drop";
  dr.force_float32 = true;
  LayerSpec d = test::dense(2147483647, ActivationFn::sigmoid);
  d.use_bias = false;
  d.name = "dense";
  d.force_float32 = true;
  LayerSpec act = test::activation(ActivationFn::relu, true);
  act.name = "act";
  spec.layers = {r, c, m, a, f, dr, d, act};
  expect_round_trip(spec);
}

TEST(ModelJson, DoublesRoundTripExactly) {
  for (double value : {1.0 / 255, 0.1, 1.0 / 3, 2.0 / 3, 1e-300, 5e-324, 2.2250738585072014e-308,
                       1.7976931348623157e308, -1.7976931348623157e308, 123456789.123456789,
                       0.30000000000000004, -0.0, 1e21, 1e22, 9007199254740993.0}) {
    ModelSpec spec;
    spec.input_shape = {4};
    spec.layers = {test::rescaling(value), test::dense(2)};
    spec.layers[0].offset = -value;
    const ModelSpec back = parse_model_json(to_json(spec));
    EXPECT_EQ(std::memcmp(&back.layers[0].scale, &value, sizeof value), 0)
        << value << " came back as " << back.layers[0].scale << "\n"
        << to_json(spec);
    EXPECT_EQ(back.layers[0].offset, -value);
  }
}

TEST(ModelJson, RandomSpecsRoundTrip) {
  // Specs with random types and fields (each type setting only the fields it has, as the
  // parser does): every one must come back equal.
  std::mt19937 rng(20240601);
  const auto pick = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  const auto size2 = [&] { return Size2{pick(1, 6), pick(1, 6)}; };
  const auto real = [&rng] {
    return std::uniform_real_distribution<double>(-1e3, 1e3)(rng) *
           std::pow(10.0, std::uniform_int_distribution<int>(-30, 30)(rng));
  };
  const std::string name_chars = "ab_- \"\\/~\xc3\xa9";
  const auto random_name = [&] {
    std::string name;
    for (int i = pick(0, 5); i > 0; --i) {
      const int c = pick(0, static_cast<int>(name_chars.size()) - 2);
      if (name_chars[static_cast<std::size_t>(c)] == '\xc3') {
        name += "\xc3\xa9";  // whole UTF-8 sequences only
      } else {
        name += name_chars[static_cast<std::size_t>(c)];
      }
    }
    return name;
  };
  const std::span<const ActivationFn> all_fns = all_activations();
  const auto fn = [&] {
    return all_fns[static_cast<std::size_t>(pick(0, static_cast<int>(all_fns.size()) - 1))];
  };
  for (int n = 0; n < 300; ++n) {
    ModelSpec spec;
    spec.name = pick(0, 3) == 0 ? "model" : random_name();
    if (pick(0, 1) == 0) {
      spec.input_shape = {pick(1, 64)};
    } else {
      spec.input_shape = {pick(1, 64), pick(1, 64), pick(1, 8)};
    }
    spec.loss = static_cast<LossKind>(pick(0, 2));
    for (int i = pick(1, 8); i > 0; --i) {
      LayerSpec l;
      // The one-input types of a stack.
      constexpr LayerType kStackTypes[] = {LayerType::Dense,
                                           LayerType::Conv2D,
                                           LayerType::MaxPooling2D,
                                           LayerType::AveragePooling2D,
                                           LayerType::Flatten,
                                           LayerType::Dropout,
                                           LayerType::Activation,
                                           LayerType::Rescaling,
                                           LayerType::GlobalAveragePooling2D,
                                           LayerType::GlobalMaxPooling2D,
                                           LayerType::GlobalAveragePooling1D,
                                           LayerType::GlobalMaxPooling1D,
                                           LayerType::ReLU,
                                           LayerType::BatchNormalization,
                                           LayerType::ZeroPadding2D,
                                           LayerType::DepthwiseConv2D,
                                           LayerType::Reshape,
                                           LayerType::SeparableConv2D,
                                           LayerType::Normalization,
                                           LayerType::Embedding,
                                           LayerType::LayerNormalization,
                                           LayerType::PositionEmbedding,
                                           LayerType::MultiHeadAttention};
      l.type = kStackTypes[pick(0, static_cast<int>(std::size(kStackTypes)) - 1)];
      switch (l.type) {
        case LayerType::Dense:
          l.units = pick(1, 5000);
          l.activation = fn();
          l.use_bias = pick(0, 1) == 1;
          break;
        case LayerType::Conv2D:
          l.filters = pick(1, 512);
          l.kernel_size = size2();
          l.strides = size2();
          l.padding = static_cast<Padding>(pick(0, 1));
          l.activation = fn();
          l.use_bias = pick(0, 1) == 1;
          break;
        case LayerType::MaxPooling2D:
        case LayerType::AveragePooling2D:
          l.pool_size = size2();
          l.strides = pick(0, 1) == 0 ? l.pool_size : size2();
          l.padding = static_cast<Padding>(pick(0, 1));
          break;
        case LayerType::Dropout:
          l.rate = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
          break;
        case LayerType::Activation:
          l.activation = fn();
          break;
        case LayerType::Rescaling:
          l.scale = real();
          l.offset = pick(0, 1) == 0 ? 0.0 : real();
          break;
        case LayerType::GlobalAveragePooling2D:
        case LayerType::GlobalMaxPooling2D:
        case LayerType::GlobalAveragePooling1D:
        case LayerType::GlobalMaxPooling1D:
          l.keepdims = pick(0, 1) == 1;
          break;
        case LayerType::ReLU:
          l.max_value = pick(0, 1) == 0 ? INFINITY : std::abs(real());
          l.negative_slope = pick(0, 1) == 0 ? 0.0 : std::abs(real());
          l.threshold = pick(0, 1) == 0 ? 0.0 : std::abs(real());
          break;
        case LayerType::BatchNormalization:
          l.axis = pick(0, 1) == 0 ? -1 : 3;
          l.momentum =
              pick(0, 1) == 0 ? 0.99 : std::uniform_real_distribution<double>(0.0, 1.0)(rng);
          l.epsilon = pick(0, 1) == 0 ? 1e-3 : std::abs(real()) + 1e-9;
          l.center = pick(0, 1) == 1;
          l.scale_gamma = pick(0, 1) == 1;
          break;
        case LayerType::ZeroPadding2D:
          l.zero_padding = {pick(0, 5), pick(0, 5), pick(0, 5), pick(0, 5)};
          break;
        case LayerType::Embedding:
          l.input_dim = pick(1, 70000);
          l.output_dim = pick(1, 1024);
          break;
        case LayerType::LayerNormalization:
          l.axis = pick(0, 1) == 0 ? -1 : 2;
          l.epsilon = pick(0, 1) == 0 ? 1e-3 : std::abs(real()) + 1e-9;
          l.center = pick(0, 1) == 1;
          l.scale_gamma = pick(0, 1) == 1;
          break;
        case LayerType::PositionEmbedding:
          l.sequence_length = pick(1, 4096);
          break;
        case LayerType::MultiHeadAttention:
          l.num_heads = pick(1, 16);
          l.key_dim = pick(1, 256);
          l.value_dim = pick(0, 1) == 0 ? 0 : pick(1, 256);
          l.output_dim = pick(0, 1) == 0 ? 0 : pick(1, 512);
          l.use_bias = pick(0, 1) == 1;
          l.causal = pick(0, 1) == 1;
          break;
        case LayerType::Normalization:
          if (pick(0, 1) == 1) {
            for (int c = pick(1, 4); c > 0; --c) {
              l.mean.push_back(real());
              l.variance.push_back(std::abs(real()));
            }
          }
          break;
        case LayerType::DepthwiseConv2D:
        case LayerType::SeparableConv2D:
          if (l.type == LayerType::SeparableConv2D) l.filters = pick(1, 512);
          l.kernel_size = size2();
          l.strides = size2();
          l.padding = static_cast<Padding>(pick(0, 1));
          l.depth_multiplier = pick(1, 4);
          l.activation = fn();
          l.use_bias = pick(0, 1) == 1;
          break;
        case LayerType::Reshape:
          for (int d = pick(1, 3); d > 0; --d) {
            l.target_shape.push_back(d == 1 && pick(0, 1) == 0 ? -1 : pick(1, 64));  // one -1
          }
          break;
        case LayerType::Flatten:
        case LayerType::Add:
        case LayerType::Subtract:
        case LayerType::Multiply:
        case LayerType::Average:
        case LayerType::Maximum:
        case LayerType::Concatenate:
          break;  // not in kStackTypes
      }
      if (pick(0, 2) == 0) l.name = random_name();
      l.force_float32 = pick(0, 3) == 0;
      spec.layers.push_back(l);
    }
    const std::string text = to_json(spec, pick(-1, 3));
    ModelSpec back;
    ASSERT_NO_THROW(back = parse_model_json(text)) << text;
    ASSERT_EQ(back, spec) << text;
  }
}

TEST(ModelJson, NamesThatAreNotUtf8AreAnError) {
  ModelSpec spec = test::fashion_mlp_spec();
  spec.layers[1].name = "bad \xff byte";
  EXPECT_THROW(to_json(spec), SpecError);
}

}  // namespace
}  // namespace mixlab
