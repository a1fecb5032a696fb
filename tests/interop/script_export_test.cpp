// export_script(): the Keras and PyTorch scripts carry the model's layers and the run's settings.
// Golden-free: each test looks for the lines that matter (a layer call, a setting) and, for the
// PyTorch layout switches, their order. That the scripts run is tests/keras's (label `keras`).
#include "engine/interop/script_export.h"
#include "engine/spec/model_spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "tests/test_paths.h"

namespace mixlab {
namespace {

ModelSpec builtin(const std::string& name) {
  return load_model_file(std::filesystem::path(mixlab::test::source_dir()) / "resources" /
                         "models" / (name + ".json"));
}

RunConfig fashion_config(Policy policy = Policy::float32) {
  RunConfig config;
  config.precision = policy;
  config.loss_scale = LossScaleConfig::keras_default(policy);
  config.dataset = parse_dataset_spec("fashion-mnist");
  return config;
}

std::string script(ScriptKind kind, const ModelSpec& spec, const RunConfig& config,
                   std::int64_t steps = 7) {
  return export_script(kind, spec, config, ScriptOptions{steps});
}

// The lines appear in this order (each after the previous one).
void expect_in_order(const std::string& text, const std::vector<std::string>& lines) {
  std::size_t at = 0;
  for (const std::string& line : lines) {
    const std::size_t found = text.find(line, at);
    ASSERT_NE(found, std::string::npos)
        << "missing (after offset " << at << "): " << line << "\n--- script ---\n"
        << text;
    at = found + line.size();
  }
}

void expect_has(const std::string& text, const std::string& line) {
  EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "\n--- script ---\n"
                                                << text;
}

void expect_lacks(const std::string& text, const std::string& line) {
  EXPECT_EQ(text.find(line), std::string::npos) << "unexpected: " << line;
}

const std::vector<std::string> kBuiltins = {"fashion-mlp", "fashion-cnn", "cifar10-mlp",
                                            "cifar100-convnet"};

TEST(ScriptExport, EveryBuiltinAndPolicyGivesBothScripts) {
  for (const std::string& name : kBuiltins) {
    const ModelSpec spec = builtin(name);
    const ShapeTable table = infer_shapes(spec);
    for (const Policy policy : {Policy::float32, Policy::mixed_float16, Policy::mixed_bfloat16}) {
      SCOPED_TRACE(name + " " + std::string(to_string(policy)));
      const RunConfig config = fashion_config(policy);
      for (const ScriptKind kind : {ScriptKind::keras, ScriptKind::pytorch}) {
        const std::string text = script(kind, spec, config);
        expect_has(text, "MODEL_NAME = \"" + name + "\"\n");
        expect_has(text, "POLICY = \"" + std::string(to_string(policy)) + "\"");
        expect_has(text, "PARAMS = " + std::to_string(table.params_total) + "  #");
        expect_has(text, "LOSS = \"sparse_categorical_crossentropy\"\n");
        expect_has(text, "STEPS = 7\n");
        expect_has(text, "def report(step_ms, loss, accuracy):");
        expect_has(text, "median step ms: ");
        expect_has(text, "if __name__ == \"__main__\":\n    main()\n");
        // Keras's default: a dynamic loss scale under mixed_float16 only.
        expect_has(text, policy == Policy::mixed_float16 ? "LOSS_SCALE = \"dynamic\"\n"
                                                         : "LOSS_SCALE = \"none\"\n");
      }
    }
  }
}

// mixed_float8 is Keras's float8 training (mixed_bfloat16, then model.quantize("float8"));
// PyTorch's autocast has none, and that export is refused with the way out.
TEST(ScriptExport, MixedFloat8IsKerasQuantizeAndNotPytorch) {
  const ModelSpec spec = builtin("fashion-mlp");
  const RunConfig config = fashion_config(Policy::mixed_float8);
  const std::string text = script(ScriptKind::keras, spec, config);
  expect_has(text, "POLICY = \"mixed_float8\"");
  expect_in_order(text, {"keras.mixed_precision.set_dtype_policy(\"mixed_bfloat16\" if POLICY == "
                         "\"mixed_float8\" else POLICY)",
                         "model = build_model()", "if POLICY == \"mixed_float8\":",
                         "quantize_float8(model)", "model.compile("});
  expect_has(text, "model.quantize(\"float8\")");  // quantize_float8's way with nothing kept
  try {
    script(ScriptKind::pytorch, spec, config);
    ADD_FAILURE() << "a PyTorch script under mixed_float8";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("PyTorch's autocast has no FP8"), std::string::npos)
        << e.what();
  }
}

// Layers MixLab keeps out of FP8 ("dtype": "bfloat16", or a Dense kept in float32) are marked
// for the script's quantize_float8(), which leaves them unquantized.
TEST(ScriptExport, LayersKeptOutOfFp8AreMarkedForKeras) {
  const ModelSpec spec = parse_model_json(R"({"name": "k", "input": {"shape": [8]}, "layers": [
      {"type": "Dense", "units": 16, "activation": "relu", "dtype": "bfloat16"},
      {"type": "Dense", "units": 16, "activation": "relu"},
      {"type": "Dense", "units": 4, "dtype": "float32"},
      {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})",
                                          "test");
  const std::string text = script(ScriptKind::keras, spec, fashion_config(Policy::mixed_float8));
  expect_in_order(
      text, {"out_of_fp8(keras.layers.Dense(16, activation=\"relu\")),",
             "keras.layers.Dense(16, activation=\"relu\"),",
             "out_of_fp8(keras.layers.Dense(4, dtype=\"float32\")),",
             "keras.layers.Activation(\"softmax\", dtype=\"float32\"),", "quantize_float8(model)"});
  expect_lacks(text, "out_of_fp8(keras.layers.Activation");
  expect_lacks(
      text,
      "out_of_fp8(keras.layers.Dense(16, activation=\"relu\")),\n        keras.layers.Dense(4");
}

TEST(ScriptExport, KerasLayersAreKerasCalls) {
  const std::string text =
      script(ScriptKind::keras, builtin("fashion-cnn"), fashion_config(Policy::mixed_float16));
  expect_in_order(text, {
                            "keras.Input(shape=INPUT_SHAPE),",
                            "keras.layers.Rescaling(0.00392156862745098),",
                            "keras.layers.Conv2D(16, (3, 3), strides=(1, 1), padding=\"same\", "
                            "activation=\"relu\"),",
                            "keras.layers.MaxPooling2D((2, 2), strides=(2, 2), padding=\"valid\"),",
                            "keras.layers.Flatten(),",
                            "keras.layers.Dense(128, activation=\"relu\"),",
                            "keras.layers.Dense(10),",
                            "keras.layers.Activation(\"softmax\", dtype=\"float32\"),",
                            "], name=MODEL_NAME)",
                        });
  expect_has(text, "INPUT_SHAPE = (28, 28, 1)");
  expect_has(text,
             "keras.mixed_precision.set_dtype_policy(\"mixed_bfloat16\" if POLICY == "
             "\"mixed_float8\" else POLICY)");
  expect_has(text, "keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=INITIAL_SCALE");
  expect_has(text, "INITIAL_SCALE = 32768.0\n");
  expect_has(text, "GROWTH_INTERVAL = 2000\n");
  expect_has(text, "model.train_on_batch(");
  expect_lacks(text, "import torch");
}

// Normalization's statistics are Python float lists in both scripts: Keras's layer with them,
// and the PyTorch script's KerasNormalization on the channels-last layout; without them, Keras's
// before-adapt state spelled out (0 and 1) and None for the PyTorch module.
TEST(ScriptExport, NormalizationCarriesItsStatistics) {
  const ModelSpec spec = parse_model_json(R"({"name": "n", "input": {"shape": [28, 28, 1]},
      "layers": [{"type": "Normalization", "mean": 0.5, "variance": 0.25},
                 {"type": "Conv2D", "filters": 4, "kernel_size": 3},
                 {"type": "Normalization"}, {"type": "Flatten"}, {"type": "Dense", "units": 10},
                 {"type": "Activation", "activation": "softmax"}]})");
  const std::string keras = script(ScriptKind::keras, spec, fashion_config());
  expect_in_order(keras, {"keras.layers.Normalization(axis=-1, mean=[0.5], variance=[0.25]),",
                          "keras.layers.Conv2D(",
                          "keras.layers.Normalization(axis=-1, mean=[0.0], variance=[1.0]),"});
  const std::string torch = script(ScriptKind::pytorch, spec, fashion_config());
  expect_in_order(torch, {"KerasNormalization([0.5], [0.25]),", "ToNCHW()", "nn.Conv2d(",
                          "ToNHWC()", "KerasNormalization(None, None),"});
  expect_has(torch, "class KerasNormalization(nn.Module):");
}

TEST(ScriptExport, OptimizerHyperparameters) {
  RunConfig config = fashion_config();
  const ModelSpec spec = builtin("fashion-mlp");
  std::string text = script(ScriptKind::keras, spec, config);
  expect_has(text, "OPTIMIZER = \"adam\"\n");
  expect_has(text, "LEARNING_RATE = 0.001\n");
  expect_has(text, "BETA_1 = 0.9\n");
  expect_has(text, "BETA_2 = 0.999\n");
  expect_has(text, "EPSILON = 1e-07\n");
  expect_has(text, "keras.optimizers.Adam(learning_rate=LEARNING_RATE, beta_1=BETA_1");

  config.optimizer = default_optimizer(OptimizerKind::sgd);
  config.optimizer.momentum = 0.9;
  config.optimizer.nesterov = true;
  config.optimizer.learning_rate = 0.05;
  config.batch_size = 64;
  config.seed = 7;
  for (const ScriptKind kind : {ScriptKind::keras, ScriptKind::pytorch}) {
    text = script(kind, spec, config);
    expect_has(text, "OPTIMIZER = \"sgd\"\n");
    expect_has(text, "LEARNING_RATE = 0.05\n");
    expect_has(text, "MOMENTUM = 0.9\n");
    expect_has(text, "NESTEROV = True\n");
    expect_has(text, "BATCH_SIZE = 64\n");
    expect_has(text, "SEED = 7\n");
    expect_lacks(text, "BETA_1 =");
  }
  expect_has(text, "torch.optim.SGD(parameters, lr=LEARNING_RATE, momentum=MOMENTUM");
}

TEST(ScriptExport, LossScaleSettings) {
  const ModelSpec spec = builtin("fashion-mlp");
  RunConfig config = fashion_config(Policy::mixed_float16);
  config.loss_scale = LossScaleConfig::fixed(1024.0);
  std::string text = script(ScriptKind::pytorch, spec, config);
  expect_has(text, "LOSS_SCALE = \"fixed\"\n");
  expect_has(text, "INITIAL_SCALE = 1024.0\n");
  expect_has(text, "torch.amp.GradScaler(DEVICE, **kwargs)");
  expect_has(text, "scaler.update(INITIAL_SCALE if LOSS_SCALE == \"fixed\" else None)");
  expect_has(text, "\"mixed_float16\": torch.float16");

  // No scaling asked for under mixed_float16: Keras must not add its own.
  config.loss_scale = LossScaleConfig::none();
  text = script(ScriptKind::keras, spec, config);
  expect_has(text, "LOSS_SCALE = \"none\"\n");
  expect_has(text, "compile_args[\"auto_scale_loss\"] = False");

  config.loss_scale = *parse_loss_scale("dynamic:65536");
  text = script(ScriptKind::keras, spec, config);
  expect_has(text, "LOSS_SCALE = \"dynamic\"\n");
  expect_has(text, "INITIAL_SCALE = 65536.0\n");
}

TEST(ScriptExport, TorchSwitchesLayoutAroundConvolutionsAndFlattensInKerasOrder) {
  const std::string text =
      script(ScriptKind::pytorch, builtin("fashion-cnn"), fashion_config(Policy::mixed_bfloat16));
  expect_in_order(text, {
                            "Rescaling(0.00392156862745098),",
                            "ToNCHW(),",
                            "nn.ZeroPad2d((1, 1, 1, 1)),",  // 'same' for a 3x3 kernel
                            "nn.Conv2d(1, 16, (3, 3), stride=(1, 1)),",
                            "nn.ReLU(),",
                            "nn.MaxPool2d((2, 2), stride=(2, 2)),",
                            "ToNHWC(),",
                            "nn.Flatten(),",
                            "nn.Linear(3136, 128),",
                            "nn.ReLU(),",
                            "nn.Linear(128, 10),",
                            "Float32(nn.Softmax(dim=-1)),",
                            "nn.init.xavier_uniform_(module.weight)",
                        });
  expect_has(text, "HEAD = \"softmax_crossentropy\"");
  expect_has(text, "\"mixed_bfloat16\": torch.bfloat16");
  expect_has(text, "model[:-1] if HEAD in");
  expect_lacks(text, "import keras");
}

TEST(ScriptExport, TorchLinearWidthsOfTheBuiltins) {
  std::string text = script(ScriptKind::pytorch, builtin("cifar100-convnet"), fashion_config());
  expect_in_order(
      text, {"ToNCHW(),", "nn.Conv2d(3, 64, (4, 4), stride=(1, 1)),",
             "nn.MaxPool2d((2, 2), stride=(2, 2)),", "nn.Conv2d(64, 32, (2, 2), stride=(1, 1)),",
             "ToNHWC(),", "nn.Flatten(),", "nn.Linear(1152, 4096),", "nn.Linear(4096, 4096),",
             "nn.Dropout(0.2),", "nn.Linear(4096, 100),", "Float32(nn.Softmax(dim=-1)),"});
  expect_lacks(text, "ZeroPad2d");

  // A final sigmoid under a categorical loss: the outputs are taken as probabilities.
  text = script(ScriptKind::pytorch, builtin("cifar10-mlp"), fashion_config());
  expect_in_order(text, {"nn.Flatten(),", "nn.Linear(3072, 3000),", "nn.Linear(3000, 1000),",
                         "nn.Linear(1000, 10),", "Float32(nn.Sigmoid()),"});
  expect_lacks(text, "ToNCHW(),");
  expect_has(text, "HEAD = \"crossentropy_probabilities\"");
}

TEST(ScriptExport, SamePaddingWithStridesIsKerasAsymmetric) {
  const ModelSpec spec = parse_model_json(R"({
    "name": "strided", "input": {"shape": [28, 28, 1]}, "loss": "binary_crossentropy",
    "layers": [
      {"type": "Conv2D", "filters": 4, "kernel_size": 3, "strides": 2, "padding": "same",
       "use_bias": false},
      {"type": "AveragePooling2D", "pool_size": 3, "strides": 2, "padding": "same"},
      {"type": "MaxPooling2D", "pool_size": 2, "strides": 1, "padding": "same"},
      {"type": "Dense", "units": 3, "activation": "gelu"},
      {"type": "Activation", "activation": "softmax"},
      {"type": "Flatten", "name": "flat \"x\""},
      {"type": "Dense", "units": 1, "activation": "sigmoid", "dtype": "float32"}]})");
  const std::string torch = script(ScriptKind::pytorch, spec, fashion_config());
  expect_in_order(torch, {
                             "ToNCHW(),",
                             "nn.ZeroPad2d((0, 1, 0, 1)),",  // 28 -> 14: the extra row below
                             "nn.Conv2d(1, 4, (3, 3), stride=(2, 2), bias=False),",
                             "AvgPool2dSame((3, 3), (2, 2), (0, 1, 0, 1)),",  // 14 -> 7
                             "nn.ConstantPad2d((0, 1, 0, 1), float(\"-inf\")),",
                             "nn.MaxPool2d((2, 2), stride=(1, 1)),",
                             "ToNHWC(),",  // Dense on an image works on its channels
                             "nn.Linear(4, 3),",
                             "nn.GELU(),",
                             "nn.Softmax(dim=-1),",
                             "nn.Flatten(),  # layer 5",
                             "Float32(nn.Linear(147, 1)),",
                             "Float32(nn.Sigmoid()),",
                         });
  expect_has(torch, "HEAD = \"sigmoid_binary\"");
  expect_has(torch, "LOSS = \"binary_crossentropy\"");

  const std::string keras = script(ScriptKind::keras, spec, fashion_config());
  expect_in_order(
      keras,
      {"keras.layers.Conv2D(4, (3, 3), strides=(2, 2), padding=\"same\", use_bias=False),",
       "keras.layers.AveragePooling2D((3, 3), strides=(2, 2), padding=\"same\"),",
       "keras.layers.MaxPooling2D((2, 2), strides=(1, 1), padding=\"same\"),",
       "keras.layers.Dense(3, activation=\"gelu\"),", "keras.layers.Activation(\"softmax\"),",
       "keras.layers.Flatten(name=\"flat \\\"x\\\"\"),",
       "keras.layers.Dense(1, activation=\"sigmoid\", dtype=\"float32\"),"});
}

TEST(ScriptExport, DatasetsAreReadFromTheSameFiles) {
  const ModelSpec spec = builtin("cifar10-mlp");
  RunConfig config = fashion_config();
  config.dataset = parse_dataset_spec("cifar10:/data/my \"cifar\"");
  std::string text = script(ScriptKind::keras, spec, config);
  expect_has(text, R"(DATASET = {"kind": "cifar10", "dir": "/data/my \"cifar\""})");
  expect_has(text, "[f\"data_batch_{i}.bin\" for i in range(1, 6)]");
  expect_has(text, "\"test_batch.bin\"");

  config.dataset = parse_dataset_spec("cifar100:/d");
  text = script(ScriptKind::pytorch, spec, config);
  expect_has(text, R"(DATASET = {"kind": "cifar100", "dir": "/d"})");
  expect_has(text, "_cifar(d, [\"train.bin\"], 2)");

  config.dataset = parse_dataset_spec("synthetic:32x32x3:10:256:5");
  text = script(ScriptKind::pytorch, spec, config);
  expect_has(
      text,
      R"(DATASET = {"kind": "synthetic", "shape": (32, 32, 3), "classes": 10, "train_size": 256, "seed": 5})");
  expect_has(text, "is not reproduced here");

  config.dataset = parse_dataset_spec("fashion-mnist");
  text = script(ScriptKind::keras, builtin("fashion-mlp"), config);
  expect_has(text,
             R"(DATASET = {"kind": "fashion-mnist", "dir": "/usr/share/datasets/fashion-mnist"})");
  expect_has(text, "\"train-images-idx3-ubyte\"");
  expect_has(text, "\"t10k-labels-idx1-ubyte\"");
}

TEST(ScriptExport, FlatInputModel) {
  const ModelSpec spec = parse_model_json(R"({
    "name": "flat", "input": {"shape": [784]}, "loss": "categorical_crossentropy",
    "layers": [{"type": "Dense", "units": 10, "activation": "softmax"}]})");
  const std::string torch = script(ScriptKind::pytorch, spec, fashion_config());
  expect_has(torch, "INPUT_SHAPE = (784,)");
  expect_in_order(torch, {"nn.Linear(784, 10),", "nn.Softmax(dim=-1),"});
  expect_lacks(torch, "ToNCHW(),");
  expect_has(torch, "HEAD = \"softmax_crossentropy\"");
  const std::string keras = script(ScriptKind::keras, spec, fashion_config());
  expect_has(keras, "return np.eye(OUTPUTS, dtype=np.float32)[labels]");
  expect_has(keras, "OUTPUTS = 10\n");
}

TEST(ScriptExport, RejectsBadOptionsAndSpecs) {
  const ModelSpec spec = builtin("fashion-mlp");
  EXPECT_THROW(script(ScriptKind::keras, spec, fashion_config(), 0), ConfigError);
  RunConfig config = fashion_config();
  config.batch_size = 0;
  EXPECT_THROW(script(ScriptKind::pytorch, spec, config), ConfigError);
  ModelSpec bad = spec;
  bad.layers.pop_back();
  bad.layers.erase(bad.layers.begin() + 1);  // no Flatten: the output is not flat
  EXPECT_THROW(script(ScriptKind::keras, bad, fashion_config()), SpecError);
}

}  // namespace
}  // namespace mixlab
