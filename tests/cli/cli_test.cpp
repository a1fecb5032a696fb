// mixlab-cli as a user runs it: exit codes, messages on stderr, --json objects, Ctrl+C, and the
// run history (`runs`) over a database filled through the store's API.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/store/csv_export.h"
#include "app/store/run_store.h"
#include "engine/backend/backend.h"
#include "tests/cli/cli_support.h"
#include "tests/test_paths.h"

namespace {

using namespace mixlab_cli_test;

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

// A residual graph whose file order is not its run order: `inspect` lists the layers as they run
// with what each reads, `--json` carries the names, inputs and order, and `train` trains it.
constexpr const char* kResidualModel =
    R"({"name": "res", "input": {"shape": [8, 8, 1]}, "layers": [
         {"type": "Flatten", "name": "flat"},
         {"type": "Dense", "units": 16, "activation": "relu", "name": "h1", "inputs": ["flat"]},
         {"type": "Add", "name": "skip", "inputs": ["h1", "h2"]},
         {"type": "Dense", "units": 16, "activation": "relu", "name": "h2", "inputs": ["h1"]},
         {"type": "Dense", "units": 4, "activation": "softmax", "inputs": ["skip"]}]})";

TEST(Cli, InspectAndTrainAGraph) {
  const std::string path = write_temp("residual.json", kResidualModel);
  Result r = run_cli("inspect " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::size_t h2 = r.out.find("h2 <- h1");
  const std::size_t skip = r.out.find("skip <- h1, h2");
  ASSERT_NE(h2, std::string::npos) << r.out;
  ASSERT_NE(skip, std::string::npos) << r.out;
  EXPECT_LT(h2, skip) << "layers are listed in the order they run:\n" << r.out;
  EXPECT_NE(r.out.find("#4 <- skip"), std::string::npos) << r.out;

  r = run_cli("inspect " + path + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["order"], nlohmann::json::array({0, 1, 3, 2, 4}));
  EXPECT_EQ(j["layers"][2]["name"], "skip");
  EXPECT_EQ(j["layers"][2]["inputs"], nlohmann::json::array({"h1", "h2"}));
  EXPECT_EQ(j["layers"][0]["inputs"], nlohmann::json::array({"input"}));

  r = run_cli("train " + path + " --dataset synthetic:8x8x1:4:256 --epochs 1 --batch-size 32");
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
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
  const Result r =
      run_cli("train --model " + model + " --dataset synthetic:8x8x1:4:64 --steps 4 --json");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "diverged");
  EXPECT_EQ(j["diverged_at_step"], 0);
}

TEST(Cli, InterruptStopsTheRunAndStillPrintsTheSummary) {
  const std::string model = write_temp("long.json", kTinyModel);
  const fs::path out =
      fs::temp_directory_path() / ("mixlab-cli-test-sigint-" + std::to_string(getpid()));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen(out.c_str(), "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    execl(mixlab::test::cli_path(), mixlab::test::cli_path(), "train", "--model", model.c_str(),
          "--dataset", "synthetic:8x8x1:4:256", "--steps", "100000000", "--threads", "1", "--json",
          nullptr);
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

// `devices --json` gives the engine's rule for each policy (engine/core/device_info.h): on this
// CPU every policy runs, natively or emulated with the reason.
TEST(Cli, DevicesJsonGivesEveryPolicy) {
  const Result r = run_cli("devices --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  using namespace mixlab;
  const auto cpu = nlohmann::json::parse(r.out).at(0);
  const DeviceInfo local = make_cpu_backend(1)->device();
  EXPECT_EQ(cpu["isa"], std::string(to_string(local.isa)));
  for (const Policy p : {Policy::float32, Policy::mixed_float16, Policy::mixed_bfloat16}) {
    const PolicySupport expected = policy_support(local, p);
    const auto& got = cpu["policies"][std::string(to_string(p))];
    EXPECT_EQ(got["support"], std::string(to_string(expected.level))) << to_string(p);
    EXPECT_EQ(got["reason"], expected.reason) << to_string(p);
    EXPECT_NE(got["support"], "unsupported") << to_string(p);
  }
  EXPECT_EQ(cpu["comparison_policy"], std::string(to_string(comparison_mixed_policy(local))));
}

// Without a GPU to list, `devices` still says why the CUDA backend has none to train on.
TEST(Cli, DevicesSaysWhyThereIsNoGpuToTrainOn) {
  const Result r = run_cli("devices", "MIXLAB_CUDA_BACKEND=/nonexistent/libmixlab-cuda.so");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (r.out.find("\ncuda:0  ") != std::string::npos) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_NE(r.out.find("\ncuda    no GPU to train on: the CUDA backend "
                       "(/nonexistent/libmixlab-cuda.so) cannot be loaded"),
            std::string::npos)
      << r.out;
}

// bench --device: a GPU that cannot be used benchmarks the CPU, saying why; bad names exit 2.
TEST(Cli, BenchDeviceFallsBackOrRefusesUnknownNames) {
  const std::string env = "MIXLAB_CUDA_BACKEND=/nonexistent/libmixlab-cuda.so";
  Result r = run_cli(
      "bench --device cuda --models fashion-mlp --precisions float32 --steps 3 --warmup 1 "
      "--threads 1 --json",
      env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("cuda:0 is unavailable"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)[0]["device"], "cpu");
  r = run_cli("bench --device gpu0 --steps 3", env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown device 'gpu0'"), std::string::npos) << r.err;
}

// --- runs -----------------------------------------------------------------------------------

namespace store = mixlab::store;
using mixlab::Policy;

// A run database in a fresh temporary folder, filled through the store's API.
class RunsCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("mixlab-runs");
    db_ = dir_ / "runs.sqlite";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A finished run with five steps and one epoch; its step-time figures follow from `median_ms`.
  std::int64_t add_run(const std::string& name, Policy precision, int batch, double median_ms,
                       double test_accuracy, std::int64_t created_ms) {
    store::RunStore db = store::RunStore::open(db_);
    store::RunRecord r;
    r.name = name;
    r.created_at_ms = created_ms;
    r.model_name = "tiny";
    r.model_json = kTinyModel;
    r.config.precision = precision;
    r.config.batch_size = batch;
    r.config.dataset = mixlab::parse_dataset_spec("synthetic:8x8x1:4:256");
    r.device = "cpu";
    const std::int64_t id = db.insert_run(r);
    store::Environment env;
    env.device_kind = "cpu";
    env.device_name = "Test CPU";
    env.threads = 2;
    db.mark_started(id, created_ms + 500, env, 5, 4096);
    std::vector<mixlab::StepMetrics> steps(5);
    for (int i = 0; i < 5; ++i) {
      steps[i].step = i;
      steps[i].step_ms = median_ms + 0.25 * i;
      steps[i].loss = 1.0 / (i + 1);
      steps[i].samples = batch;
    }
    db.insert_steps(id, steps);
    mixlab::EpochMetrics epoch;
    epoch.steps = 5;
    epoch.train_loss = 0.5;
    epoch.test_accuracy = test_accuracy;
    db.insert_epoch(id, epoch);
    mixlab::RunSummary s;
    s.status = mixlab::RunStatus::finished;
    s.steps = 5;
    s.epochs_completed = 1;
    s.median_step_ms = median_ms;
    s.p95_step_ms = median_ms * 1.5;
    s.samples_per_s = batch * 1000.0 / median_ms;
    s.test_accuracy = test_accuracy;
    s.peak_memory_bytes = 4096;
    db.finish_run(id, s, created_ms + 2000);
    return id;
  }

  // Two runs: float32 at 4 ms a step, then (newer) bfloat16 at 2.5 ms with no test figures.
  void add_two_runs() {
    first_ = add_run("f32 baseline", Policy::float32, 32, 4.0, 0.8125, 1764470707123);
    second_ =
        add_run("bf16, \"fast\"", Policy::mixed_bfloat16, 32, 2.5, std::nan(""), 1764470807123);
  }

  Result runs(const std::string& args) { return run_cli("runs " + args + " --db " + db_.string()); }
  store::RunRecord read_back(std::int64_t id) { return store::RunStore::open(db_).run(id); }

  fs::path dir_;
  fs::path db_;
  std::int64_t first_ = 0;
  std::int64_t second_ = 0;
};

TEST_F(RunsCommand, ListJsonHasTheContractFieldsNewestFirst) {
  add_two_runs();
  const Result r = runs("list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  const auto& newest = j[0];
  EXPECT_EQ(newest.size(), 12u) << newest.dump();
  EXPECT_EQ(newest["id"], second_);
  EXPECT_EQ(newest["uid"].get<std::string>().size(), 32u);  // runs import matches runs by it
  EXPECT_NE(newest["uid"], j[1]["uid"]);
  EXPECT_EQ(newest["name"], "bf16, \"fast\"");
  EXPECT_EQ(newest["status"], "finished");
  EXPECT_TRUE(newest["damaged"].is_null());  // what of the row could not be read, if anything
  EXPECT_EQ(newest["created_at"], store::format_utc(1764470807123));
  EXPECT_EQ(newest["model"], "tiny");
  EXPECT_EQ(newest["precision"], "mixed_bfloat16");
  EXPECT_EQ(newest["batch_size"], 32);
  EXPECT_EQ(newest["median_step_ms"], 2.5);
  EXPECT_EQ(newest["samples_per_s"], 32 * 1000.0 / 2.5);
  EXPECT_TRUE(newest["test_accuracy"].is_null());
  EXPECT_EQ(j[1]["id"], first_);
  EXPECT_EQ(j[1]["created_at"], "2025-11-30T02:45:07.123Z");
  EXPECT_EQ(j[1]["test_accuracy"], 0.8125);
}

TEST_F(RunsCommand, ListTableAndAnEmptyStore) {
  Result r = runs("list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no runs recorded in " + db_.string() + " yet"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(db_)) << "listing must not create a database";
  r = runs("list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::array());

  add_two_runs();
  r = runs("list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("f32 baseline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2025-11-30 02:45"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4.000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("12,800"), std::string::npos) << "samples/s of the bf16 run\n" << r.out;
}

TEST_F(RunsCommand, ShowPrintsEverythingAboutOneRun) {
  add_two_runs();
  {
    store::RunStore db = store::RunStore::open(db_);
    db.add_tags(first_, {"baseline"});
    db.set_note(first_, "first line\nsecond line");
  }
  Result r = runs("show " + std::to_string(first_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text : {"f32 baseline", "finished", "float32", "synthetic:8x8x1:4:256",
                           "Test CPU", "median 4.000 ms", "baseline", "second line", "epochs:"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  }
  r = runs("show " + std::to_string(first_) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["id"], first_);
  EXPECT_EQ(j["config"]["precision"], "float32");
  EXPECT_EQ(j["config"]["batch_size"], 32);
  EXPECT_EQ(j["environment"]["device_name"], "Test CPU");
  EXPECT_EQ(j["summary"]["median_step_ms"], 4.0);
  EXPECT_EQ(j["summary"]["p95_step_ms"], 6.0);
  ASSERT_EQ(j["epochs"].size(), 1u);
  EXPECT_EQ(j["epochs"][0]["test_accuracy"], 0.8125);
  EXPECT_EQ(j["tags"], nlohmann::json::array({"baseline"}));
  EXPECT_EQ(j["note"], "first line\nsecond line");
  EXPECT_EQ(j["model_spec"]["name"], "tiny");
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(RunsCommand, ExportWritesWhatTheStoreWritesToStdoutOrAFile) {
  add_two_runs();
  const std::vector<std::int64_t> both = {first_, second_};
  std::ostringstream steps, long_steps, summary;
  {
    store::RunStore db = store::RunStore::open(db_);
    store::write_steps_csv(steps, db, first_);
    store::write_long_steps_csv(long_steps, db, both);
    store::write_summary_csv(summary, db, both);
  }
  const std::string ids = std::to_string(first_) + " " + std::to_string(second_);
  Result r = runs("export " + std::to_string(first_) + " --steps");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, steps.str());
  r = runs("export " + ids + " --steps");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, long_steps.str());
  r = runs("export " + ids + " --summary");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, summary.str());

  const fs::path file = dir_ / "summary.csv";
  r = runs("export " + ids + " --summary -o " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(read_file(file), summary.str());
  EXPECT_FALSE(fs::exists(dir_ / "summary.csv.tmp"));
}

TEST_F(RunsCommand, ExportToAnUnwritableFileFailsNamingItAndLeavesNothing) {
  add_two_runs();
  const fs::path file = dir_ / "no-such-folder" / "steps.csv";
  Result r = runs("export " + std::to_string(first_) + " --steps -o " + file.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(file.string()), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(file));

  // An unknown id among several: nothing is written at all.
  const fs::path out = dir_ / "steps.csv";
  r = runs("export " + std::to_string(first_) + " 424242 --steps -o " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("424242"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(dir_ / "steps.csv.tmp"));
  r = runs("export " + std::to_string(first_));
  EXPECT_EQ(r.exit_code, 2) << "neither --steps nor --summary";
}

TEST_F(RunsCommand, CompareGivesTheSpeedRatioAgainstTheFirstRun) {
  add_two_runs();
  Result r = runs("compare " + std::to_string(first_) + " " + std::to_string(second_) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["id"], first_);
  EXPECT_EQ(j[0]["speed_ratio"], 1.0);
  EXPECT_EQ(j[1]["speed_ratio"], 4.0 / 2.5) << "bf16 steps take 2.5 ms instead of 4";
  EXPECT_EQ(j[1]["precision"], "mixed_bfloat16");
  EXPECT_EQ(j[1]["median_step_ms"], 2.5);
  EXPECT_EQ(j[1]["p95_step_ms"], 3.75);
  EXPECT_EQ(j[1]["batch_size"], 32);

  r = runs("compare " + std::to_string(first_) + " " + std::to_string(second_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1.60x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("faster"), std::string::npos) << "a legend says which way is faster";
  r = runs("compare " + std::to_string(first_));
  EXPECT_EQ(r.exit_code, 2) << "compare needs two runs";
}

TEST_F(RunsCommand, RenameTagNoteAndDeleteChangeTheStore) {
  add_two_runs();
  const std::string id = std::to_string(first_);
  Result r = runs("rename " + id + " 'new name, ß'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_back(first_).name, "new name, ß");

  r = runs("tag " + id + " fp32 baseline keep");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> tags = read_back(first_).tags;
  std::sort(tags.begin(), tags.end());
  EXPECT_EQ(tags, (std::vector<std::string>{"baseline", "fp32", "keep"}));
  r = runs("tag " + id + " keep --remove");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  tags = read_back(first_).tags;
  std::sort(tags.begin(), tags.end());
  EXPECT_EQ(tags, (std::vector<std::string>{"baseline", "fp32"}));

  r = runs("note " + id + " 'warm cache'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_back(first_).note, "warm cache");
  r = runs("note " + id + " ''");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_back(first_).note, "");

  r = runs("delete " + id + " " + std::to_string(second_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("deleted run " + id), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bf16"), std::string::npos) << r.out;
  EXPECT_TRUE(store::RunStore::open(db_).list_runs().empty());
}

TEST_F(RunsCommand, UnknownRunsAndBadArgumentsExitTwoAndBrokenStoresOne) {
  add_two_runs();
  Result r = runs("show 424242");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("424242"), std::string::npos) << r.err;
  r = runs("delete " + std::to_string(first_) + " 424242");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(store::RunStore::open(db_).list_runs().size(), 2u) << "nothing deleted";
  for (const char* args : {"show", "show abc", "show -3", "frobnicate", "rename 1", ""}) {
    r = runs(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_FALSE(r.err.empty()) << args;
  }
  r = run_cli("runs show 1 --db " + (dir_ / "missing.sqlite").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "missing.sqlite")) << "reading must not create a database";

  const std::string not_a_db = write_temp("not-a-db.sqlite", "this is not a database, just text");
  r = run_cli("runs list --db " + not_a_db);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("run store"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(not_a_db), std::string::npos) << r.err;
}

TEST_F(RunsCommand, DbOptionOverridesMixlabDb) {
  add_two_runs();
  const std::string env = "MIXLAB_DB=" + db_.string();
  Result r = run_cli("runs list --json", env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).size(), 2u);
  const fs::path other = dir_ / "other.sqlite";
  r = run_cli("runs list --json --db " + other.string(), env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).size(), 0u);
}

}  // namespace

// --version names every backend and says whether it can train here, and why not.
TEST(Cli, VersionListsTheBackendsAndWhyOneIsUnavailable) {
  const Result r = run_cli("--version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("mixlab-cli " MIXLAB_VERSION_FOR_TESTS " (", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\n  cpu   available: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  cuda  unavailable: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libraries: SQLite "), std::string::npos) << r.out;
}

// self-test: every policy on the CPU, the store round trip and the CSV export pass here.
TEST(Cli, SelfTestPassesOnEveryPolicyWithTheStoreAndCsv) {
  const Result r = run_cli("self-test");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* row : {"cpu float32, 20 steps", "cpu mixed_float16, 20 steps",
                          "cpu mixed_bfloat16, 20 steps", "store round trip", "CSV export"}) {
    const auto at = r.out.find(row);
    ASSERT_NE(at, std::string::npos) << row << " missing in\n" << r.out;
    EXPECT_EQ(r.out.compare(r.out.find_first_not_of(' ', at + std::strlen(row)), 2, "ok"), 0)
        << row << " did not pass:\n"
        << r.out;
  }
  EXPECT_NE(r.out.find("self-test passed"), std::string::npos) << r.out;
  EXPECT_EQ(run_cli("self-test --frobnicate").exit_code, 2);
}

// A failing check (here: no temporary folder for the store) fails the self-test, and the table
// says which and why while the other checks still run.
TEST(Cli, SelfTestFailsWhenTheStoreCannotBeUsed) {
  const Result r = run_cli("self-test", "TMPDIR=/proc/no-such-folder");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("cpu mixed_bfloat16, 20 steps   ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("store round trip               FAILED   "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CSV export                     FAILED   "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("self-test FAILED"), std::string::npos) << r.out;
}
