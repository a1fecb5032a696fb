// mixlab-cli with Keras files, as a user runs it: every command that takes MODEL takes Keras
// JSON and .keras archives (the file's policy and weights reach the run), `export` writes each
// format, `predict` prints the outputs of the starting weights, and bad input is one named
// error with exit code 2.
#include <nlohmann/json.hpp>

#include "engine/interop/keras_model.h"
#include "tests/cli/cli_support.h"
#include "tests/interop/keras_files.h"

namespace {

using mixlab::test::keras3_layer;
using mixlab_cli_test::run_cli;

// A 2-class model on 4x4x1 synthetic images: Flatten -> Dense 3 relu -> Dense 2 softmax.
std::string config_json(const std::string& policy) {
  return mixlab::test::keras3_sequential(
      {keras3_layer("InputLayer", R"("batch_shape": [null, 4, 4, 1], "name": "input_layer")"),
       keras3_layer("Flatten", R"("name": "flatten")"),
       keras3_layer("Dense", R"("name": "hidden", "units": 3, "activation": "relu")"),
       keras3_layer("Dense", R"("name": "out", "units": 2, "activation": "softmax")")},
      policy);
}

class KerasCli : public ::testing::Test {
 protected:
  mixlab::test::TempDir dir_;
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Weights all set to `kernel` (kernels) and 0 (biases).
  std::string write_archive(const std::string& name, const std::string& policy, float kernel) {
    mixlab::test::write_h5(
        dir_ / "w.h5",
        {{"layers/dense/vars/0", {16, 3}, std::vector<float>(48, kernel)},
         {"layers/dense/vars/1", {3}, std::vector<float>(3, 0.0f)},
         {"layers/dense_1/vars/0", {3, 2}, {kernel, -kernel, kernel, -kernel, kernel, -kernel}},
         {"layers/dense_1/vars/1", {2}, std::vector<float>(2, 0.0f)}});
    mixlab::test::write_zip(dir_ / name,
                            {{"config.json", config_json(policy)},
                             {"model.weights.h5", mixlab::test::read_bytes(dir_ / "w.h5")}});
    return path(name);
  }
};

constexpr const char* kData = "--dataset synthetic:4x4x1:2:64";

TEST_F(KerasCli, PredictStartsFromTheArchivesWeights) {
  const std::string model = write_archive("m.keras", "float32", 0.01f);
  const auto r = run_cli("predict " + model + " " + kData + " --count 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["format"], "Keras 3 archive (.keras)");
  EXPECT_EQ(out["weights"], "m.keras");
  ASSERT_EQ(out["outputs"].size(), 3U);
  // Every pixel >= 0 and every hidden kernel 0.01 > 0: the hidden units are equal and >= 0, so
  // the logits are (+s, -s) and softmax gives class 0 at least one half.
  for (const auto& row : out["outputs"]) {
    ASSERT_EQ(row.size(), 2U);
    EXPECT_GE(row[0].get<double>(), 0.5);
    EXPECT_NEAR(row[0].get<double>() + row[1].get<double>(), 1.0, 1e-6);
  }
  // The archive's weights, whatever the seed; without weights (the JSON alone) the seed's.
  const auto seeded = run_cli("predict " + model + " " + kData + " --count 3 --json --seed 7");
  ASSERT_EQ(seeded.exit_code, 0) << seeded.err;
  EXPECT_EQ(nlohmann::json::parse(seeded.out)["outputs"], out["outputs"]);
  std::ofstream(dir_ / "m.json") << config_json("float32");
  const auto json1 = run_cli("predict " + path("m.json") + " " + kData + " --count 3 --json");
  const auto json7 =
      run_cli("predict " + path("m.json") + " " + kData + " --count 3 --json --seed 7");
  ASSERT_EQ(json1.exit_code, 0) << json1.err;
  EXPECT_TRUE(nlohmann::json::parse(json1.out)["weights"].is_null());
  EXPECT_NE(nlohmann::json::parse(json1.out)["outputs"],
            nlohmann::json::parse(json7.out)["outputs"]);
}

TEST_F(KerasCli, TrainTakesTheFilesPolicyUnlessTheCommandLineGivesOne) {
  const std::string model = write_archive("mixed.keras", "mixed_bfloat16", 0.01f);
  auto r = run_cli("train --model " + model + " " + kData + " --steps 3 --no-store --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["precision"], "mixed_bfloat16");
  EXPECT_EQ(out["status"], "finished");
  // Recorded with a note that says where the starting weights came from.
  const std::string db = path("runs.sqlite");
  r = run_cli("train --model " + model + " " + kData + " --steps 2 --db " + db + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("runs show " + nlohmann::json::parse(r.out)["run_id"].dump() + " --db " + db +
              " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["note"], "starting weights from mixed.keras") << r.out;
  r = run_cli("train --model " + model + " " + kData +
              " --steps 3 --no-store --json --precision float32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["precision"], "float32");
  // inspect and doctor read Keras files too.
  r = run_cli("inspect " + model + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["params_total"], 16 * 3 + 3 + 3 * 2 + 2);
  EXPECT_EQ(out["precision"], "mixed_bfloat16");
}

// train takes MODEL as its argument, as inspect, doctor, export and predict do; --model stays
// (sweeps and scripts use it), and the model given twice is one named error.
TEST_F(KerasCli, TrainTakesTheModelAsItsArgumentOrAsModel) {
  const std::string model = write_archive("m.keras", "mixed_bfloat16", 0.01f);
  auto r = run_cli("train " + model + " " + kData + " --steps 2 --no-store --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["precision"], "mixed_bfloat16");
  EXPECT_EQ(nlohmann::json::parse(r.out)["model"], "sequential");
  r = run_cli("train fashion-mlp --dataset synthetic:28x28x1:10:64 --steps 2 --no-store --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["model"], "fashion-mlp");
  r = run_cli("train " + model + " --model fashion-mlp " + kData + " --steps 2 --no-store");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not both"), std::string::npos) << r.err;
  r = run_cli("train " + model + " " + model + " " + kData + " --steps 2 --no-store");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give one model"), std::string::npos) << r.err;
}

TEST_F(KerasCli, ExportWritesEveryFormat) {
  auto r =
      run_cli("export fashion-cnn --to keras-json --precision mixed_float16 -o " + path("fc.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string keras_json = mixlab::test::read_bytes(dir_ / "fc.json");
  const mixlab::ImportedModel back = mixlab::import_keras_json(keras_json);
  EXPECT_EQ(back.policy, mixlab::Policy::mixed_float16);
  // Keras JSON back to MixLab's: the built-in's layers.
  r = run_cli("export " + path("fc.json") + " --to mixlab");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(mixlab::parse_model_json(r.out).layers.size(), 7U);
  r = run_cli("export fashion-cnn --to pytorch --batch-size 64 --steps 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("import torch"), std::string::npos);
  r = run_cli("export fashion-cnn --to keras --precision mixed_float16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("mixed_float16"), std::string::npos);
}

TEST_F(KerasCli, ExportTakesARecordedRunsSettings) {
  const std::string db = path("runs.sqlite");
  auto r = run_cli(
      "train --model fashion-mlp --dataset synthetic:28x28x1:10:64"
      " --batch-size 24 --optimizer sgd --steps 2 --db " +
      db + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto id = nlohmann::json::parse(r.out)["run_id"].get<std::int64_t>();
  r = run_cli("export --run " + std::to_string(id) + " --db " + db + " --to pytorch");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("24"), std::string::npos);
  EXPECT_NE(r.out.find("SGD"), std::string::npos);
  r = run_cli("export --run 999 --db " + db + " --to pytorch");
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(KerasCli, BadInputIsOneNamedError) {
  struct Case {
    std::string args;
    std::string message;
  };
  mixlab::test::write_zip(dir_ / "noconfig.keras", {{"metadata.json", "{}"}});
  std::ofstream(dir_ / "lambda.json")
      << mixlab::test::keras3_sequential({keras3_layer("Lambda", R"("name": "scale")")});
  for (const Case& c : {
           Case{"inspect " + path("noconfig.keras"), "it has no config.json"},
           Case{"train --model " + path("lambda.json") + " --steps 1 --no-store",
                "layer 0 'scale' (Lambda)"},
           Case{"export fashion-mlp --to onnx",
                "--to must be keras-json, keras, pytorch or mixlab"},
           Case{"export fashion-mlp --to mixlab --batch-size 8", "apply to --to keras"},
           Case{"predict fashion-mlp --count 0", "--count' must be between 1 and 65536"},
       }) {
    const auto r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
}

}  // namespace
