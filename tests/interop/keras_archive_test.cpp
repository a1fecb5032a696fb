// .keras archives: the weights of model.weights.h5 become a run's starting weights, checked
// against the spec's shapes; a broken archive is one named error; load_model_source() tells the
// three formats apart by content; and an executor starts from the imported weights.
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>

#include "engine/backend/backend.h"
#include "engine/backend/op_access.h"
#include "engine/core/error.h"
#include "engine/interop/keras_model.h"
#include "resources/builtin_models.h"
#include "tests/interop/keras_files.h"

namespace mixlab {
namespace {

using test::H5Dataset;
using test::keras3_layer;
using test::keras3_sequential;

// Input 4 -> Dense 3 relu (kernel (4, 3), bias (3)) -> Dense 2 without bias (kernel (3, 2)).
// Keras 3 files their weights by class ("layers/dense", "layers/dense_1"), not by layer name.
const std::string kConfig = keras3_sequential(
    {keras3_layer("InputLayer", R"("batch_shape": [null, 4], "dtype": "float32",
                                 "name": "input_layer")"),
     keras3_layer("Dense", R"("name": "hidden", "units": 3, "activation": "relu")"),
     keras3_layer("Dense", R"("name": "dense", "units": 2, "use_bias": false)")});

std::vector<float> iota(std::size_t n, float from) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

std::vector<H5Dataset> good_weights() {
  return {{"layers/dense/vars/0", {4, 3}, iota(12, 0.0f)},
          {"layers/dense/vars/1", {3}, iota(3, 100.0f)},
          {"layers/dense_1/vars/0", {3, 2}, iota(6, -3.0f)}};
}

// A .keras archive of kConfig with `weights`.
std::filesystem::path write_archive(const test::TempDir& dir, const std::vector<H5Dataset>& weights,
                                    const std::string& name = "m.keras") {
  test::write_h5(dir / "w.h5", weights);
  const auto path = dir / name;
  test::write_zip(path, {{"config.json", kConfig},
                         {"metadata.json", R"({"keras_version": "3.12.0"})"},
                         {"model.weights.h5", test::read_bytes(dir / "w.h5")}});
  return path;
}

std::string error_of(const std::filesystem::path& path) {
  try {
    load_model_source(path);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(KerasArchive, WeightsBecomeTheStartingWeightsInKerasLayout) {
  const test::TempDir dir;
  const ImportedModel model = load_model_source(write_archive(dir, good_weights()));
  EXPECT_EQ(model.format, "Keras 3 archive (.keras)");
  ASSERT_TRUE(model.weights);
  EXPECT_EQ(model.weights->origin, "m.keras");
  ASSERT_EQ(model.weights->layers.size(), 2U);
  EXPECT_EQ(model.weights->layers[0].layer, 0);
  EXPECT_EQ(model.weights->layers[0].kernel, iota(12, 0.0f));
  EXPECT_EQ(model.weights->layers[0].bias, iota(3, 100.0f));
  EXPECT_EQ(model.weights->layers[1].layer, 1);
  EXPECT_EQ(model.weights->layers[1].kernel, iota(6, -3.0f));
  EXPECT_TRUE(model.weights->layers[1].bias.empty());

  // A CPU executor starts from them: the same values come back in Keras's layout.
  const ShapeTable table = infer_shapes(model.spec);
  ExecutorOptions options;
  options.batch_size = 2;
  options.initial_weights = model.weights;
  const auto executor = make_cpu_backend(1)->compile(model.spec, table, options);
  EXPECT_EQ(executor->ops().read_parameter(0, ParamKind::kernel), iota(12, 0.0f));
  EXPECT_EQ(executor->ops().read_parameter(0, ParamKind::bias), iota(3, 100.0f));
  EXPECT_EQ(executor->ops().read_parameter(1, ParamKind::kernel), iota(6, -3.0f));
  // Forward: x = (1, 0, 0, 0) gives relu(kernel row 0 + bias) = (100, 102, 104), then
  // (100, 102, 104) . kernel columns.
  const std::vector<float> x = {1, 0, 0, 0, 0, 0, 0, 0};
  const std::vector<std::int32_t> labels = {0, 0};
  executor->load_batch(x, labels, 2);
  executor->ops().forward(Phase::eval, 0);
  const std::vector<float> y = executor->ops().read_output();
  EXPECT_FLOAT_EQ(y[0], 100.0f * -3 + 102.0f * -1 + 104.0f * 1);
  EXPECT_FLOAT_EQ(y[1], 100.0f * -2 + 102.0f * 0 + 104.0f * 2);
}

// A model.quantize("float8") model (Keras 3.12's config and variables, as the archive of
// `keras.Sequential([...]); model.layers[0].quantize("float8")` holds them): mixed_float8, the
// quantized Dense in FP8 and the unquantized one kept out ("dtype": "bfloat16"); the kernels
// and biases imported, and the six scale and history variables carried into a run whose
// --fp8-history is as long as theirs (started afresh, saying so, in one whose is not).
TEST(KerasArchive, AFloat8QuantizedModelIsMixedFloat8WithItsUnquantizedLayersKeptOut) {
  const std::string float8 = R"({"module": "keras.dtype_policies", "class_name":
      "QuantizedFloat8DTypePolicy", "config": {"mode": "float8", "source_name":
      "mixed_bfloat16", "amax_history_length": 1024}, "registered_name": null})";
  const std::string bf16 = R"({"module": "keras", "class_name": "DTypePolicy", "config":
      {"name": "mixed_bfloat16"}, "registered_name": null})";
  const std::string config = keras3_sequential(
      {keras3_layer("InputLayer", R"("batch_shape": [null, 4], "dtype": "float32",
                                   "name": "input_layer")"),
       keras3_layer("Dense",
                    R"("name": "hidden", "units": 3, "activation": "relu", "dtype": )" + float8),
       keras3_layer("Dense",
                    R"("name": "head", "units": 2, "use_bias": false, "dtype": )" + bf16)});
  std::vector<H5Dataset> weights = good_weights();
  // Scales 2^-3, 2^-5, 2^-7 (input, kernel, gradient; exact in bfloat16) and histories whose
  // largest amaxes are 3, 5 and 7.
  const float saved_scales[] = {0.125f, 0.03125f, 0.0078125f}, saved_amax[] = {3, 5, 7};
  for (int v = 2; v < 8; ++v) {
    const bool history = v % 2 == 1;
    const int t = (v - 2) / 2;
    std::vector<float> values(history ? 1024 : 1, history ? 0.5f : saved_scales[t]);
    if (history) values[10] = saved_amax[t];
    weights.push_back(
        {"layers/dense/vars/" + std::to_string(v),
         history ? std::vector<unsigned long long>{1024} : std::vector<unsigned long long>{},
         values});
  }
  const test::TempDir dir;
  test::write_h5(dir / "w.h5", weights);
  test::write_zip(dir / "q.keras", {{"config.json", config},
                                    {"metadata.json", R"({"keras_version": "3.12.0"})"},
                                    {"model.weights.h5", test::read_bytes(dir / "w.h5")}});
  const ImportedModel m = load_model_source(dir / "q.keras");
  ASSERT_EQ(m.policy, Policy::mixed_float8);
  EXPECT_FALSE(m.spec.layers[0].force_bfloat16);
  EXPECT_TRUE(m.spec.layers[1].force_bfloat16);
  ASSERT_NE(m.weights, nullptr);
  EXPECT_EQ(m.weights->layers.at(0).kernel, iota(12, 0.0f));
  ASSERT_EQ(m.weights->layers.at(0).fp8.size(), 3u);
  EXPECT_EQ(m.weights->layers.at(0).fp8[1].scale, saved_scales[1]);
  EXPECT_EQ(m.weights->layers.at(0).fp8[2].amax_history.at(10), saved_amax[2]);
  EXPECT_TRUE(m.weights->layers.at(1).fp8.empty());
  EXPECT_TRUE(std::any_of(m.warnings.begin(), m.warnings.end(), [](const std::string& w) {
    return w.find("a run continues from their FP8 scales and amax histories") != std::string::npos;
  }));
  // Trained here it reports FP8 tensors for the quantized layer only, its first step with the
  // saved scales, and the scales it makes for the next from the saved histories (Keras's recipe:
  // the history before the step's own amax), as the run's notes say.
  const auto first_step = [&](int history) {
    ExecutorOptions options;
    options.initial_weights = m.weights;
    options.policy = Policy::mixed_float8;
    options.fp8.history = history;
    auto exec =
        make_cpu_backend(1)->compile(m.spec, infer_shapes(m.spec, Policy::mixed_float8), options);
    const std::vector<std::int32_t> labels = {0, 1};
    exec->load_batch(std::vector<float>(8, 0.5f), labels, 2);
    exec->launch_step(Phase::train, 0);
    return std::pair{exec->finish_step(), exec->notes()};
  };
  const auto [r, notes] = first_step(1024);
  ASSERT_EQ(r.fp8.size(), 3u);
  for (std::size_t t = 0; t < 3; ++t) {
    EXPECT_EQ(r.fp8[t].layer, 0);
    EXPECT_EQ(r.fp8[t].scale, saved_scales[t]) << "tensor " << t;
    const float top = fp8_max(t == 2 ? Fp8Format::e5m2 : Fp8Format::e4m3);
    EXPECT_EQ(r.fp8[t].next_scale, fp8_next_scale(saved_amax[t], saved_scales[t], top, 0))
        << "tensor " << t;
  }
  EXPECT_EQ(notes,
            std::vector<std::string>{"FP8 scales and amax histories from q.keras (1 layer)"});
  // A run with another history length starts them afresh (Keras's scale 1) and says why.
  const auto [afresh, afresh_notes] = first_step(16);
  ASSERT_EQ(afresh.fp8.size(), 3u);
  for (const Fp8TensorStep& t : afresh.fp8) EXPECT_EQ(t.scale, 1.0f);
  ASSERT_EQ(afresh_notes.size(), 1u);
  EXPECT_EQ(afresh_notes[0],
            "FP8 scales and amax histories of layer 0 started afresh: q.keras keeps 1024 steps of "
            "history, the run 16 (--fp8-history 1024 carries them)");

  // Without its scale and history variables the quantized layer is named.
  weights.resize(good_weights().size() + 3);
  test::write_h5(dir / "w.h5", weights);
  test::write_zip(dir / "short.keras",
                  {{"config.json", config}, {"model.weights.h5", test::read_bytes(dir / "w.h5")}});
  const std::string error = error_of(dir / "short.keras");
  EXPECT_NE(error.find("layer 0 'hidden' is float8-quantized but lacks its scales and amax "
                       "histories (6 variables after its 2)"),
            std::string::npos)
      << error;
}

TEST(KerasArchive, WeightsOfTheWrongCountAreRefusedByTheExecutorNamingTheOrigin) {
  const ModelSpec spec = import_keras_json(kConfig).spec;
  auto weights = std::make_shared<ModelWeights>();
  weights->origin = "w.keras";
  LayerWeights layer;
  layer.kernel = iota(5, 0.0f);
  weights->layers.push_back(layer);
  ExecutorOptions options;
  options.initial_weights = weights;
  try {
    make_cpu_backend(1)->compile(spec, infer_shapes(spec), options);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("w.keras: starting weights: layer 0 kernel has 12 "
                                         "values, got 5"),
              std::string::npos)
        << e.what();
  }
}

TEST(KerasArchive, BrokenArchivesAreNamedErrors) {
  const test::TempDir dir;
  // Mis-shaped: the kernel transposed.
  auto weights = good_weights();
  weights[0].shape = {3, 4};
  std::string error = error_of(write_archive(dir, weights, "shape.keras"));
  EXPECT_NE(error.find("shape.keras (model.weights.h5): layer 0 'hidden' kernel: "
                       "layers/dense/vars/0 has shape (3, 4), the model needs (4, 3)"),
            std::string::npos)
      << error;
  // A missing bias.
  weights = good_weights();
  weights.erase(weights.begin() + 1);
  error = error_of(write_archive(dir, weights, "bias.keras"));
  EXPECT_NE(error.find("layer 0 'hidden' bias is missing (layers/dense/vars/1)"),
            std::string::npos)
      << error;
  // No weights at all for a layer.
  weights = good_weights();
  weights.pop_back();
  error = error_of(write_archive(dir, weights, "layer.keras"));
  EXPECT_NE(error.find("no weights for layer 1 'dense'"), std::string::npos) << error;
  // An extra variable.
  weights = good_weights();
  weights.push_back({"layers/dense_1/vars/1", {2}, iota(2, 0.0f)});
  error = error_of(write_archive(dir, weights, "extra.keras"));
  EXPECT_NE(error.find("layer 1 'dense' has more variables than its 1"), std::string::npos)
      << error;
  // Not HDF5.
  test::write_zip(dir / "noh5.keras",
                  {{"config.json", kConfig}, {"model.weights.h5", "definitely not hdf5"}});
  error = error_of(dir / "noh5.keras");
  EXPECT_NE(error.find("noh5.keras (model.weights.h5): not an HDF5 file"), std::string::npos)
      << error;
  // No config.json.
  test::write_zip(dir / "nocfg.keras", {{"metadata.json", "{}"}});
  error = error_of(dir / "nocfg.keras");
  EXPECT_NE(error.find("nocfg.keras: not a .keras archive: it has no config.json"),
            std::string::npos)
      << error;
  // No weights file while the model has parameters.
  test::write_zip(dir / "now.keras", {{"config.json", kConfig}});
  error = error_of(dir / "now.keras");
  EXPECT_NE(error.find("now.keras: the archive has no model.weights.h5"), std::string::npos)
      << error;
  // A truncated zip.
  const std::string whole = test::read_bytes(write_archive(dir, good_weights(), "t.keras"));
  std::ofstream(dir / "trunc.keras", std::ios::binary) << whole.substr(0, whole.size() / 2);
  error = error_of(dir / "trunc.keras");
  EXPECT_NE(error.find("trunc.keras: not a readable .keras archive"), std::string::npos) << error;
  // A .keras name on a text file.
  std::ofstream(dir / "text.keras") << "hello";
  error = error_of(dir / "text.keras");
  EXPECT_NE(error.find("text.keras: not a .keras archive (a .keras file is a zip file)"),
            std::string::npos)
      << error;
  // A layer error in config.json names the member.
  test::write_zip(
      dir / "lambda.keras",
      {{"config.json",
        keras3_sequential({keras3_layer("Lambda", R"("name": "l", "function": "x")")})}});
  error = error_of(dir / "lambda.keras");
  EXPECT_NE(error.find("lambda.keras (config.json): layer 0 'l' (Lambda)"), std::string::npos)
      << error;
}

TEST(KerasArchive, ModelSourceTellsTheFormatsApartByContent) {
  const test::TempDir dir;
  std::ofstream(dir / "mixlab.json") << *builtin_model_json("fashion-mlp");
  std::ofstream(dir / "keras.json") << kConfig;
  const auto archive = write_archive(dir, good_weights(), "archive.zip");
  EXPECT_EQ(load_model_source(dir / "mixlab.json").format, "MixLab JSON");
  EXPECT_FALSE(load_model_source(dir / "mixlab.json").weights);
  EXPECT_EQ(load_model_source(dir / "keras.json").format, "Keras 3 JSON");
  EXPECT_EQ(load_model_source(archive).format, "Keras 3 archive (.keras)");
  EXPECT_NE(error_of(dir / "missing.json").find("missing.json: cannot open model file"),
            std::string::npos);
}

}  // namespace
}  // namespace mixlab
