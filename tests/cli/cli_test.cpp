// mixlab-cli as a user runs it: exit codes, messages on stderr, --json objects, Ctrl+C.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs mixlab-cli with the arguments (a shell word list) and collects stdout, stderr, exit code.
Result run_cli(const std::string& args) {
  const fs::path dir = fs::temp_directory_path() / ("mixlab-cli-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "out").string(), err = (dir / "err").string();
  const std::string cmd = std::string(MIXLAB_CLI) + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream o(out), e(err);
  r.out.assign(std::istreambuf_iterator<char>(o), {});
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  return r;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("mixlab-cli-test-" + std::to_string(getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p.string();
}

constexpr const char* kTinyModel =
    R"({"name": "tiny", "input": {"shape": [8, 8, 1]}, "layers": [
         {"type": "Rescaling", "scale": 0.00392156862745098}, {"type": "Flatten"},
         {"type": "Dense", "units": 16, "activation": "relu"}, {"type": "Dense", "units": 4},
         {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})";

TEST(Cli, InspectJsonHasTheContractFields) {
  const Result r = run_cli("inspect cifar100-convnet --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["params_total"], 55487684);
  EXPECT_GT(j["flops_total"].get<long long>(), 0);
  ASSERT_EQ(j["layers"].size(), 13u);
  const auto& conv = j["layers"][1];
  EXPECT_EQ(conv["index"], 1);
  EXPECT_EQ(conv["type"], "Conv2D");
  EXPECT_EQ(conv["output_shape"], nlohmann::json::array({29, 29, 64}));
  EXPECT_EQ(conv["params"], 3136);
  EXPECT_TRUE(conv.contains("flops"));
}

TEST(Cli, InspectTableNamesLayersAndTotals) {
  const Result r = run_cli("inspect cifar10-mlp");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("12,230,010"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Dense"), std::string::npos);
}

TEST(Cli, BadModelFileExitsTwoNamingLayerAndField) {
  const std::string path = write_temp("bad.json", R"({"name": "bad", "input": {"shape": [4]},
      "layers": [{"type": "Flatten"}, {"type": "Dense", "unit": 3}]})");
  const Result r = run_cli("inspect " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("layer 1 (Dense)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unit"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(Cli, MissingModelAndUnknownOptionExitTwo) {
  Result r = run_cli("inspect no-such-model");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no-such-model"), std::string::npos) << r.err;
  r = run_cli("train --batch-size zero");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--batch-size"), std::string::npos) << r.err;
  r = run_cli("train --frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--frobnicate"), std::string::npos) << r.err;
  r = run_cli("train --epochs 1 --steps 3");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(Cli, MissingDatasetFolderExitsTwoNamingTheFile) {
  const Result r = run_cli("train --dataset mnist:/nonexistent/mnist --steps 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/mnist"), std::string::npos) << r.err;
}

TEST(Cli, ModelThatDoesNotFitTheDatasetExitsTwo) {
  const Result r = run_cli("train --model fashion-mlp --dataset synthetic:8x8x1:4:64 --steps 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("28x28x1"), std::string::npos) << r.err;
}

TEST(Cli, TrainJsonSummaryHasTheContractFields) {
  const std::string model = write_temp("tiny.json", kTinyModel);
  const Result r = run_cli("train --model " + model +
                           " --dataset synthetic:8x8x1:4:256 --epochs 2 --threads 1 --json "
                           "--precision mixed_float16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"status", "steps", "skipped_steps", "final_loss_scale", "median_step_ms",
                          "p95_step_ms", "samples_per_s", "test_accuracy", "test_loss"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["status"], "finished");
  EXPECT_EQ(j["steps"], 16);
  EXPECT_EQ(j["loss_scaling"], "dynamic") << "mixed_float16 scales dynamically by default";
  EXPECT_EQ(j["final_loss_scale"], 32768.0);
  EXPECT_GT(j["median_step_ms"].get<double>(), 0.0);
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.25);
}

TEST(Cli, DivergedRunExitsOne) {
  std::string text = kTinyModel;
  text.replace(text.find("0.00392156862745098"), 19, "1e37");
  const std::string model = write_temp("diverge.json", text);
  const Result r = run_cli("train --model " + model + " --dataset synthetic:8x8x1:4:64 --steps 4 --json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "diverged");
  EXPECT_EQ(j["diverged_at_step"], 0);
}

TEST(Cli, InterruptStopsTheRunAndStillPrintsTheSummary) {
  const std::string model = write_temp("long.json", kTinyModel);
  const fs::path out = fs::temp_directory_path() / ("mixlab-cli-test-sigint-" + std::to_string(getpid()));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen(out.c_str(), "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    execl(MIXLAB_CLI, MIXLAB_CLI, "train", "--model", model.c_str(), "--dataset",
          "synthetic:8x8x1:4:256", "--steps", "100000000", "--threads", "1", "--json", nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["status"], "stopped");
  EXPECT_GT(j["steps"].get<long long>(), 0);
}

TEST(Cli, BenchJsonReportsStepTimesAndTheSpeedRatio) {
  const Result r = run_cli("bench --models fashion-mlp --steps 6 --warmup 2 --threads 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["precision"], "float32");
  EXPECT_EQ(j[1]["precision"], "mixed_bfloat16");
  EXPECT_EQ(j[1]["steps"], 6);
  EXPECT_GT(j[1]["median_step_ms"].get<double>(), 0.0);
  EXPECT_GT(j[1]["speedup_vs_float32"].get<double>(), 0.0);
}

TEST(Cli, DevicesListsTheCpu) {
  const Result r = run_cli("devices --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_GE(j.size(), 1u);
  EXPECT_EQ(j[0]["kind"], "cpu");
}

}  // namespace
