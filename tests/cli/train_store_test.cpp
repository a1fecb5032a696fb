// mixlab-cli train records every run in the run store: finished, failed before training,
// stopped with Ctrl+C; --db, MIXLAB_DB and --no-store choose where (or whether).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/store/run_store.h"
#include "engine/ops/loss_scale.h"
#include "engine/spec/model_spec.h"
#include "engine/train/run_fields.h"
#include "tests/store/store_test_util.h"
#include "tests/test_paths.h"

extern char** environ;

namespace mixlab::store {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

struct Child {
  pid_t pid = 0;
  std::filesystem::path out, err;
};

Child start_cli(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), mixlab::test::cli_path());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Child c{0, dir / "stdout", dir / "stderr"};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, c.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, c.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  EXPECT_EQ(posix_spawn(&c.pid, mixlab::test::cli_path(), &actions, nullptr, argv.data(), environ),
            0);
  posix_spawn_file_actions_destroy(&actions);
  return c;
}

int finish(const Child& c) {
  int status = 0;
  waitpid(c.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class TrainStore : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = dir_ / "tiny.json";
    testing::write_bytes(model_, testing::kTinyModel);
    // Never the user's own database.
    setenv("MIXLAB_DB", (dir_ / "env.sqlite").c_str(), 1);
  }
  void TearDown() override { unsetenv("MIXLAB_CUDA_BACKEND"); }
  std::vector<std::string> tiny_run(std::vector<std::string> extra) const {
    std::vector<std::string> args{
        "train",     "--model", model_.string(), "--dataset", "synthetic:8x8x1:4:256",
        "--threads", "1",       "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  TempDir dir_;
  std::filesystem::path model_;
};

TEST_F(TrainStore, RecordsTheFinishedRunAndPrintsItsId) {
  const auto db = dir_ / "runs.sqlite";
  const Child c = start_cli(dir_, tiny_run({"--db", db.string(), "--steps", "40", "--batch-size",
                                            "16", "--precision", "mixed_bfloat16", "--json"}));
  ASSERT_EQ(finish(c), 0) << testing::read_bytes(c.err);
  const auto j = nlohmann::json::parse(testing::read_bytes(c.out));
  ASSERT_TRUE(j["run_id"].is_number_integer()) << j.dump();
  EXPECT_EQ(j["db"], db.string());

  RunStore store = RunStore::open(db, StoreOptions{.read_only = true});
  const RunRecord r = store.run(j["run_id"].get<std::int64_t>());
  EXPECT_EQ(r.status, RecordStatus::finished);
  EXPECT_EQ(r.name, "tiny mixed_bfloat16 b16");
  EXPECT_EQ(r.model_name, "tiny");
  EXPECT_EQ(parse_model_json(r.model_json), parse_model_json(testing::kTinyModel));
  EXPECT_EQ(r.config.precision, Policy::mixed_bfloat16);
  EXPECT_EQ(r.config.batch_size, 16);
  EXPECT_EQ(r.config.steps, 40);
  EXPECT_EQ(r.config.dataset.to_string(), "synthetic:8x8x1:4:256");
  EXPECT_EQ(r.device, "cpu");
  EXPECT_EQ(r.environment.device_kind, "cpu");
  EXPECT_FALSE(r.environment.onednn_version.empty());
  EXPECT_FALSE(r.environment.mixlab_version.empty());
  EXPECT_EQ(r.environment.threads, 1);
  EXPECT_EQ(r.summary.steps, 40);
  EXPECT_EQ(r.summary.median_step_ms, j["median_step_ms"].get<double>());
  EXPECT_EQ(r.summary.test_accuracy, j["test_accuracy"].get<double>());
  EXPECT_EQ(store.step_count(r.id), 40);
  EXPECT_EQ(store.epochs(r.id).size(), 3u);  // 256 samples / 16 = 16 steps per epoch
  EXPECT_FALSE(std::filesystem::exists(dir_ / "env.sqlite")) << "--db wins over MIXLAB_DB";

  // In text form the id is printed too.
  const Child text =
      start_cli(dir_, {"train", "--model", model_.string(), "--dataset", "synthetic:8x8x1:4:256",
                       "--steps", "3", "--db", db.string(), "--quiet"});
  ASSERT_EQ(finish(text), 0);
  EXPECT_NE(testing::read_bytes(text.out).find("run id:      2 (in " + db.string() + ")"),
            std::string::npos)
      << testing::read_bytes(text.out);
}

TEST_F(TrainStore, MixlabDbChoosesTheDatabaseAndNoStoreRecordsNothing) {
  ASSERT_EQ(finish(start_cli(dir_, tiny_run({"--steps", "2"}))), 0);
  RunStore store = RunStore::open(dir_ / "env.sqlite", StoreOptions{.read_only = true});
  EXPECT_EQ(store.list_runs().size(), 1u);

  setenv("MIXLAB_DB", (dir_ / "never.sqlite").c_str(), 1);
  const Child c = start_cli(dir_, tiny_run({"--steps", "2", "--no-store", "--json"}));
  ASSERT_EQ(finish(c), 0);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "never.sqlite"));
  EXPECT_TRUE(nlohmann::json::parse(testing::read_bytes(c.out))["run_id"].is_null());
}

TEST_F(TrainStore, RunWhoseDatasetCannotBeReadIsRecordedAsFailed) {
  const Child c =
      start_cli(dir_, {"train", "--dataset", "mnist:/nonexistent/mnist", "--steps", "1"});
  EXPECT_EQ(finish(c), 2);
  RunStore store = RunStore::open(dir_ / "env.sqlite", StoreOptions{.read_only = true});
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, RecordStatus::failed);
  EXPECT_NE(runs[0].message.find("/nonexistent/mnist"), std::string::npos) << runs[0].message;
}

TEST_F(TrainStore, InterruptedWithCtrlCIsRecordedAsStoppedWithEveryStep) {
  const Child c = start_cli(dir_, tiny_run({"--steps", "100000000", "--json"}));
  std::this_thread::sleep_for(1500ms);
  kill(c.pid, SIGINT);
  EXPECT_EQ(finish(c), 130);
  const auto j = nlohmann::json::parse(testing::read_bytes(c.out));
  RunStore store = RunStore::open(dir_ / "env.sqlite", StoreOptions{.read_only = true});
  const RunRecord r = store.run(j["run_id"].get<std::int64_t>());
  EXPECT_EQ(r.status, RecordStatus::stopped);
  EXPECT_GT(r.summary.steps, 0);
  EXPECT_EQ(store.step_count(r.id), j["steps"].get<std::int64_t>());
}

TEST_F(TrainStore, UnusableDatabaseStopsBeforeTraining) {
  const auto bad = dir_ / "notes.txt";
  testing::write_bytes(bad, "not a database");
  const Child c = start_cli(dir_, tiny_run({"--steps", "2", "--db", bad.string()}));
  EXPECT_NE(finish(c), 0);
  const std::string err = testing::read_bytes(c.err);
  EXPECT_NE(err.find(bad.string() + " is not a MixLab run database"), std::string::npos) << err;
  EXPECT_EQ(testing::read_bytes(c.out), "") << "nothing trained";
  EXPECT_EQ(testing::read_bytes(bad), "not a database");
}

// --- hostile input and faults (issue 16): each a named error, a truthful final state ---

// --db '' used to record into an unnamed temporary database and say "run id: 1 (in )".
TEST_F(TrainStore, EmptyDbPathIsAUsageError) {
  const Child c = start_cli(dir_, tiny_run({"--steps", "2", "--db", ""}));
  EXPECT_EQ(finish(c), 2);
  EXPECT_NE(testing::read_bytes(c.err).find("--db: an empty path"), std::string::npos)
      << testing::read_bytes(c.err);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "env.sqlite")) << "nothing recorded";
}

// A static loss scale so large that every step overflows and is skipped used to end `finished`
// with exit 0 after training nothing. kSkippedStepsToDiverge skipped steps in a row end it
// `diverged`, saying why.
TEST_F(TrainStore, EverySkippedStepEndsDivergedNotFinished) {
  const Child c = start_cli(dir_, tiny_run({"--steps", "200", "--precision", "mixed_float16",
                                            "--loss-scale", "1e300", "--json"}));
  EXPECT_EQ(finish(c), 1);
  const auto j = nlohmann::json::parse(testing::read_bytes(c.out));
  EXPECT_EQ(j["status"], "diverged");
  EXPECT_EQ(j["steps"], kSkippedStepsToDiverge);
  EXPECT_EQ(j["skipped_steps"], kSkippedStepsToDiverge);
  EXPECT_NE(j["message"].get<std::string>().find("static scale"), std::string::npos) << j;
  RunStore store = RunStore::open(dir_ / "env.sqlite", StoreOptions{.read_only = true});
  EXPECT_EQ(store.run(j["run_id"].get<std::int64_t>()).status, RecordStatus::diverged);
}

// More steps than their step times can be held for: a failed run saying the bytes, at once
// (it used to end with std::bad_alloc and the run "interrupted").
TEST_F(TrainStore, StepsThatCannotBeHeldFailAtOnceWithTheBytes) {
  const Child c = start_cli(dir_, tiny_run({"--steps", "10000000000", "--json"}));
  EXPECT_EQ(finish(c), 1);
  const auto j = nlohmann::json::parse(testing::read_bytes(c.out));
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["steps"], 0);
  EXPECT_EQ(j["failed_allocation_bytes"].get<std::int64_t>(), std::int64_t{10000000000} * 12);
  EXPECT_NE(j["message"].get<std::string>().find("run fewer steps"), std::string::npos) << j;
  RunStore store = RunStore::open(dir_ / "env.sqlite", StoreOptions{.read_only = true});
  EXPECT_EQ(store.run(j["run_id"].get<std::int64_t>()).status, RecordStatus::failed);
}

// A CIFAR batch file that claims terabytes (a sparse file) is refused by name before anything
// is allocated, and the run is recorded as failed.
TEST_F(TrainStore, DatasetLargerThanMemoryIsRefusedByName) {
  const auto cifar = dir_ / "cifar";
  std::filesystem::create_directories(cifar);
  for (const char* f : {"data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                        "data_batch_5.bin", "test_batch.bin"}) {
    testing::write_bytes(cifar / f, std::string(3073, '\0'));
  }
  testing::write_bytes(cifar / "data_batch_1.bin", "");
  std::filesystem::resize_file(cifar / "data_batch_1.bin", std::uintmax_t{10} << 40);  // 10 TiB
  const Child c = start_cli(dir_, {"train", "--model", "cifar10-mlp", "--dataset",
                                   "cifar10:" + cifar.string(), "--steps", "1", "--quiet"});
  EXPECT_EQ(finish(c), 2);
  const std::string err = testing::read_bytes(c.err);
  EXPECT_NE(err.find("data_batch_1.bin"), std::string::npos) << err;
  EXPECT_NE(err.find("in memory"), std::string::npos) << err;
  RunStore store = RunStore::open(dir_ / "env.sqlite", StoreOptions{.read_only = true});
  ASSERT_EQ(store.list_runs().size(), 1u);
  EXPECT_EQ(store.list_runs()[0].status, RecordStatus::failed);
}

// `runs rename ID -- -x`: after "--" a word is an argument, never an option.
TEST_F(TrainStore, ArgumentsAfterDoubleDashAreNotOptions) {
  const auto db = dir_ / "runs.sqlite";
  ASSERT_EQ(finish(start_cli(dir_, tiny_run({"--steps", "2", "--db", db.string()}))), 0);
  const Child c = start_cli(dir_, {"runs", "rename", "--db", db.string(), "1", "--", "-x"});
  EXPECT_EQ(finish(c), 0) << testing::read_bytes(c.err);
  RunStore store = RunStore::open(db, StoreOptions{.read_only = true});
  EXPECT_EQ(store.run(1).name, "-x");
}

// A run still recording cannot be deleted under it (it used to end with a raw FOREIGN KEY error
// while its JSON said `finished`); once it ends, it can.
TEST_F(TrainStore, ARunningRunCannotBeDeleted) {
  const auto db = dir_ / "runs.sqlite";
  const Child run = start_cli(dir_, tiny_run({"--steps", "100000000", "--db", db.string()}));
  std::int64_t id = 0;
  for (int i = 0; i < 200 && id == 0; ++i) {
    std::this_thread::sleep_for(50ms);
    try {
      RunStore reader = RunStore::open(db, StoreOptions{.read_only = true});
      if (!reader.list_runs().empty()) id = reader.list_runs()[0].id;
    } catch (const StoreError&) {
    }
  }
  ASSERT_NE(id, 0);
  TempDir other;
  const Child del = start_cli(other, {"runs", "delete", "--db", db.string(), std::to_string(id)});
  EXPECT_EQ(finish(del), 1);
  const std::string err = testing::read_bytes(del.err);
  EXPECT_NE(err.find("still running"), std::string::npos) << err;
  kill(run.pid, SIGINT);
  EXPECT_EQ(finish(run), 130);
  EXPECT_EQ(finish(start_cli(other, {"runs", "delete", "--db", db.string(), std::to_string(id)})),
            0);
}

// --- every run setting of the table (engine/train/run_fields.h) ---

// The JSON a field's value is written as: a number, a boolean or a string.
nlohmann::json json_of(const FieldValue& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

// Each field's flag with its example (a boolean's flag alone), on a short run: the run records
// it, `train --json` and `runs show --json` have it at the field's path in "config", and
// `train --help` lists the flag. A new field of the table is run here with no line added.
TEST_F(TrainStore, EveryRunSettingIsAFlagThatReachesTheRunAndItsJson) {
  const auto db = dir_ / "runs.sqlite";
  for (const RunField& field : run_fields()) {
    SCOPED_TRACE(std::string(field.name));
    RunConfig expected;
    set_field_text(field, expected, field.example);
    const nlohmann::json value = json_of(field.get(expected));
    std::string path = "/";
    path += field.json_path;
    const nlohmann::json::json_pointer at(path);
    // The tiny run's own --dataset and --threads come first: a later option wins.
    std::vector<std::string> extra{"--db", db.string(), "--json"};
    // A GPU option applies to a GPU run (on the CPU it is recorded off): the fake GPU's.
    if (field.gpu_only) {
      setenv("MIXLAB_CUDA_BACKEND", mixlab::test::fake_plugin(), 1);
      extra.insert(extra.end(), {"--device", "cuda"});
    } else {
      unsetenv("MIXLAB_CUDA_BACKEND");
    }
    if (field.optimizer)
      extra.insert(extra.end(), {"--optimizer", std::string(to_string(*field.optimizer))});
    extra.push_back("--" + std::string(field.cli_flag));
    if (field.type != FieldType::boolean) extra.push_back(std::string(field.example));
    const Child train = start_cli(dir_, tiny_run(extra));
    ASSERT_EQ(finish(train), 0) << testing::read_bytes(train.err);
    const auto j = nlohmann::json::parse(testing::read_bytes(train.out));
    EXPECT_EQ(j["config"][at], value) << j["config"].dump();

    const std::int64_t id = j["run_id"].get<std::int64_t>();
    EXPECT_EQ(field_text(field, RunStore::open(db).run(id).config), field.example);
    const Child show =
        start_cli(dir_, {"runs", "show", std::to_string(id), "--json", "--db", db.string()});
    ASSERT_EQ(finish(show), 0) << testing::read_bytes(show.err);
    EXPECT_EQ(nlohmann::json::parse(testing::read_bytes(show.out))["config"][at], value);
  }
  const Child help = start_cli(dir_, {"train", "--help"});
  ASSERT_EQ(finish(help), 0);
  const std::string text = testing::read_bytes(help.out);
  for (const RunField& field : run_fields())
    EXPECT_NE(text.find("--" + std::string(field.cli_flag) + " "), std::string::npos) << text;
}

// A bad value names the option and the value, and exits 2 before anything is recorded.
TEST_F(TrainStore, BadRunSettingsExitTwoNamingTheOption) {
  const auto expect_usage_error = [&](std::vector<std::string> extra, const std::string& message) {
    const Child c = start_cli(dir_, tiny_run(std::move(extra)));
    EXPECT_EQ(finish(c), 2);
    EXPECT_EQ(testing::read_bytes(c.err), "mixlab-cli: " + message + "\n");
  };
  expect_usage_error({"--batch-size", "zero"},
                     "option '--batch-size': needs an integer, got 'zero'");
  expect_usage_error({"--batch-size", "0"},
                     "option '--batch-size': must be between 1 and 1048576, got 0");
  expect_usage_error({"--batch-size"}, "option '--batch-size' needs a value");
  expect_usage_error({"--precision", "fp8"},
                     "option '--precision': unknown precision 'fp8' (float32, mixed_float16, "
                     "mixed_bfloat16)");
  expect_usage_error({"--lr", "-1"}, "option '--lr': must be greater than 0, got -1");
  expect_usage_error({"--momentum", "0.9"}, "--momentum applies to --optimizer sgd");
  expect_usage_error({"--optimizer", "sgd", "--beta-1", "0.8"},
                     "--beta-1 applies to --optimizer adam");
  expect_usage_error({"--epochs", "2", "--steps", "3"}, "give --epochs or --steps, not both");
  expect_usage_error({"--frobnicate"}, "unknown option '--frobnicate'");
  expect_usage_error({"--frobnicate=3"}, "unknown option '--frobnicate'");
  expect_usage_error({"extra"}, "give the model once: as MODEL or as --model, not both");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "env.sqlite"));
}

// --- the device: the CUDA plugin is the fake one (a test double on the CPU backend) or none ---

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(TrainStore, GpuRunRecordsCuda0AndItsGpuOptions) {
  setenv("MIXLAB_CUDA_BACKEND", mixlab::test::fake_plugin(), 1);
  const auto db = dir_ / "runs.sqlite";
  const Child c =
      start_cli(dir_, tiny_run({"--db", db.string(), "--steps", "5", "--device", "cuda", "--tf32",
                                "--cuda-graphs", "--data-on-device", "--layer-timing", "--json"}));
  ASSERT_EQ(finish(c), 0) << testing::read_bytes(c.err);
  const std::string err = testing::read_bytes(c.err);
  EXPECT_FALSE(contains(err, "unavailable")) << err;
  EXPECT_FALSE(contains(err, "apply to GPU runs")) << err;
  const auto j = nlohmann::json::parse(testing::read_bytes(c.out));
  EXPECT_EQ(j["device_id"], "cuda:0");
  EXPECT_EQ(j["device"], "Fake GPU (the CPU backend, a test double)");
  EXPECT_FALSE(j.contains("device_note"));
  EXPECT_EQ(j["tf32"], true);
  EXPECT_TRUE(j["layer_timings"].is_array()) << j.dump();

  RunStore store = RunStore::open(db, StoreOptions{.read_only = true});
  const RunRecord r = store.run(j["run_id"].get<std::int64_t>());
  EXPECT_EQ(r.status, RecordStatus::finished);
  EXPECT_EQ(r.device, "cuda:0");
  EXPECT_EQ(r.environment.device_kind, "cuda");
  EXPECT_TRUE(r.config.tf32);
  EXPECT_TRUE(r.config.cuda_graphs);
  EXPECT_TRUE(r.config.data_on_device);
  EXPECT_TRUE(r.config.layer_timing);

  const Child show = start_cli(dir_, {"runs", "show", std::to_string(r.id), "--db", db.string()});
  ASSERT_EQ(finish(show), 0) << testing::read_bytes(show.err);
  const std::string shown = testing::read_bytes(show.out);
  EXPECT_TRUE(contains(shown, "device:       cuda:0: Fake GPU")) << shown;
  EXPECT_TRUE(contains(shown, "GPU options:  TF32 matmuls, CUDA graphs, dataset on the GPU\n"))
      << shown;
  EXPECT_TRUE(contains(shown, "timing:       per layer\n")) << shown;
}

// Per-layer times reach the store and come back per layer, named as in the editor: in
// `runs show` (text and JSON) and in the fourth CSV shape, `runs export --layers`.
TEST_F(TrainStore, LayerTimesAreStoredShownAndExported) {
  const auto db = dir_ / "runs.sqlite";
  const Child c = start_cli(dir_, tiny_run({"--db", db.string(), "--steps", "6", "--device",
                                            "cpu", "--layer-timing", "--json"}));
  ASSERT_EQ(finish(c), 0) << testing::read_bytes(c.err);
  const auto j = nlohmann::json::parse(testing::read_bytes(c.out));
  const std::string id = std::to_string(j["run_id"].get<std::int64_t>());

  RunStore store = RunStore::open(db, StoreOptions{.read_only = true});
  const auto layers = store.layer_times(std::stoll(id));
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].title, "0 Flatten");
  EXPECT_EQ(layers[1].title, "1 Dense 4, softmax");
  EXPECT_EQ(layers[1].steps, 3) << "6 steps, the first 3 (half, below the warm-up of 10) out";
  EXPECT_GT(layers[1].forward_ms, 0.0);
  EXPECT_GT(layers[1].backward_ms, 0.0);

  const Child show = start_cli(dir_, {"runs", "show", id, "--db", db.string()});
  ASSERT_EQ(finish(show), 0) << testing::read_bytes(show.err);
  const std::string shown = testing::read_bytes(show.out);
  EXPECT_TRUE(contains(shown, "layer times (median ms over 3 steps, warm-up left out):"))
      << shown;
  EXPECT_TRUE(contains(shown, "  1 Dense 4, softmax")) << shown;

  const Child show_json = start_cli(dir_, {"runs", "show", id, "--json", "--db", db.string()});
  ASSERT_EQ(finish(show_json), 0);
  const auto shown_json = nlohmann::json::parse(testing::read_bytes(show_json.out));
  ASSERT_EQ(shown_json["layer_times"].size(), 2u);
  EXPECT_EQ(shown_json["layer_times"][1]["title"], "1 Dense 4, softmax");
  EXPECT_EQ(shown_json["layer_times"][1]["forward_ms"].get<double>(), layers[1].forward_ms);

  const Child csv = start_cli(dir_, {"runs", "export", id, "--layers", "--db", db.string()});
  ASSERT_EQ(finish(csv), 0) << testing::read_bytes(csv.err);
  const std::string text = testing::read_bytes(csv.out);
  EXPECT_EQ(text.substr(0, text.find("\r\n")),
            "run_id,run_name,precision,batch_size,device,layer,layer_title,steps,forward_ms,"
            "backward_ms,forward_p95_ms,backward_p95_ms");
  EXPECT_TRUE(contains(text, "\r\n" + id + ",tiny float32 b32,float32,32,cpu,1,\"1 Dense 4, "
                             "softmax\",3,"))
      << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;  // header and 2 layers

  // A run without layer timing has no rows; two of the flags at once is a usage error.
  const Child plain = start_cli(dir_, tiny_run({"--db", db.string(), "--steps", "2"}));
  ASSERT_EQ(finish(plain), 0);
  const Child both = start_cli(dir_, {"runs", "export", id, "--layers", "--summary", "--db",
                                      db.string()});
  EXPECT_EQ(finish(both), 2);
}

// mixed_float8 (issue 30): the Dense's three FP8 tensors each step, stored; the last scales in
// --json and the text's table; the recipe's settings recorded with the run.
TEST_F(TrainStore, Fp8RunStoresEachTensorAndPrintsItsLastScales) {
  const auto db = dir_ / "runs.sqlite";
  const Child c = start_cli(
      dir_, tiny_run({"--db", db.string(), "--steps", "6", "--device", "cpu", "--precision",
                      "mixed_float8", "--fp8-history", "4", "--fp8-margin", "1", "--json"}));
  ASSERT_EQ(finish(c), 0) << testing::read_bytes(c.err);
  const auto j = nlohmann::json::parse(testing::read_bytes(c.out));
  EXPECT_EQ(j["config"]["precision"], "mixed_float8");
  EXPECT_EQ(j["config"]["fp8"]["history"], 4);
  EXPECT_EQ(j["config"]["fp8"]["margin"], 1);
  EXPECT_EQ(j["config"]["fp8"]["format"], "hybrid");
  const auto& tensors = j["fp8_tensors"];
  ASSERT_EQ(tensors.size(), 3u) << j.dump();
  EXPECT_EQ(tensors[0]["role"], "input");
  EXPECT_EQ(tensors[1]["role"], "kernel");
  EXPECT_EQ(tensors[2]["role"], "gradient");
  EXPECT_EQ(tensors[0]["layer"], 1);  // the Dense after the Flatten

  RunStore store = RunStore::open(db, StoreOptions{.read_only = true});
  const std::int64_t id = j["run_id"].get<std::int64_t>();
  const auto rows = store.fp8_tensors(id);
  ASSERT_EQ(rows.size(), 6u * 3u);
  EXPECT_EQ(rows.back().step, 5);
  EXPECT_EQ(rows.back().tensor.role, Fp8Role::gradient);
  for (int i = 0; i < 3; ++i) {
    const Fp8TensorStep& last = rows[rows.size() - 3 + static_cast<std::size_t>(i)].tensor;
    EXPECT_FLOAT_EQ(tensors[static_cast<std::size_t>(i)]["scale"].get<float>(), last.next_scale);
  }
  const RunRecord run = store.run(id);
  EXPECT_EQ(run.config.fp8.history, 4);
  EXPECT_EQ(run.config.fp8.margin, 1);

  // The CSV: one row per step and tensor, the layer named as the editor names it.
  const Child csv =
      start_cli(dir_, {"runs", "export", std::to_string(id), "--fp8", "--db", db.string()});
  ASSERT_EQ(finish(csv), 0) << testing::read_bytes(csv.err);
  const std::string rows_csv = testing::read_bytes(csv.out);
  EXPECT_EQ(rows_csv.substr(0, rows_csv.find("\r\n")),
            "run_id,run_name,step,layer,layer_title,part,role,amax,scale,next_scale,values,"
            "saturated,flushed");
  EXPECT_EQ(std::count(rows_csv.begin(), rows_csv.end(), '\n'), 1 + 6 * 3) << rows_csv;
  EXPECT_TRUE(contains(rows_csv, "\r\n" + std::to_string(id) +
                                     ",tiny mixed_float8 b32,5,1,\"1 Dense 4, softmax\",0,kernel,"))
      << rows_csv;

  // The text summary's table.
  const Child text = start_cli(dir_, tiny_run({"--db", db.string(), "--steps", "3", "--device",
                                               "cpu", "--precision", "mixed_float8"}));
  ASSERT_EQ(finish(text), 0) << testing::read_bytes(text.err);
  const std::string printed = testing::read_bytes(text.out);
  EXPECT_TRUE(contains(printed, "fp8:         each FP8 tensor after the last step")) << printed;
  EXPECT_TRUE(contains(printed, "kernel")) << printed;
}

TEST_F(TrainStore, UnavailableGpuTrainsOnTheCpuAndSaysWhy) {
  setenv("MIXLAB_CUDA_BACKEND", "/nonexistent/libmixlab-cuda.so", 1);
  const auto db = dir_ / "runs.sqlite";
  const Child c = start_cli(dir_, tiny_run({"--db", db.string(), "--steps", "3", "--device",
                                            "cuda:0", "--layer-timing", "--tf32", "--json"}));
  ASSERT_EQ(finish(c), 0) << testing::read_bytes(c.err);
  const std::string why =
      "cuda:0 is unavailable: the CUDA backend (/nonexistent/libmixlab-cuda.so) cannot be "
      "loaded: the file does not exist; training on the CPU instead";
  const std::string err = testing::read_bytes(c.err);
  EXPECT_TRUE(contains(err, "mixlab-cli: " + why + "\n")) << err;
  EXPECT_TRUE(contains(err, "mixlab-cli: GPU options apply to GPU runs; this run is on the cpu "
                            "and is recorded without --tf32\n"))
      << err;
  const auto j = nlohmann::json::parse(testing::read_bytes(c.out));
  EXPECT_EQ(j["device_id"], "cpu");
  EXPECT_EQ(j["device_note"], why);
  // The CPU times its layers too: one row per layer of the tiny model.
  ASSERT_TRUE(j["layer_timings"].is_array());
  EXPECT_EQ(j["layer_timings"].size(), 2u) << j["layer_timings"];
  RunStore store = RunStore::open(db, StoreOptions{.read_only = true});
  const RunRecord r = store.run(j["run_id"].get<std::int64_t>());
  EXPECT_EQ(r.device, "cpu");
  EXPECT_TRUE(r.config.layer_timing);
  EXPECT_FALSE(r.config.tf32);

  // In text form: a table of the CPU's layer times.
  const Child text = start_cli(
      dir_, tiny_run({"--steps", "2", "--device", "cpu", "--layer-timing", "--no-store"}));
  ASSERT_EQ(finish(text), 0);
  const std::string table = testing::read_bytes(text.out);
  EXPECT_TRUE(contains(table, "layer times: mean ms over 2 steps on cpu")) << table;
  EXPECT_TRUE(contains(table, "1  Dense")) << table;
}

// A CPU run is recorded without the GPU options, as the GUI's run controller records it
// (tests/ui/run_controller_test.cpp): the engine's one rule, applicable_config. Every GPU
// option of the table, given on the command line, is named on stderr and stored off.
TEST_F(TrainStore, CpuRunIsRecordedWithoutTheGpuOptionsAndSaysWhich) {
  const auto db = dir_ / "runs.sqlite";
  std::vector<std::string> extra{"--db", db.string(), "--steps", "2", "--device", "cpu", "--json"};
  std::string flags;
  for (const RunField& field : run_fields()) {
    if (!field.gpu_only) continue;
    extra.push_back("--" + std::string(field.cli_flag));
    // A boolean's flag alone turns it on; a text option takes its example (attention).
    if (field.type != FieldType::boolean) extra.push_back(std::string(field.example));
    flags += (flags.empty() ? "--" : ", --") + std::string(field.cli_flag);
  }
  ASSERT_FALSE(flags.empty());
  const Child c = start_cli(dir_, tiny_run(extra));
  ASSERT_EQ(finish(c), 0) << testing::read_bytes(c.err);
  const std::string err = testing::read_bytes(c.err);
  EXPECT_EQ(err, "mixlab-cli: GPU options apply to GPU runs; this run is on the cpu and is "
                 "recorded without " + flags + "\n");
  const auto j = nlohmann::json::parse(testing::read_bytes(c.out));
  const RunRecord r =
      RunStore::open(db, StoreOptions{.read_only = true}).run(j["run_id"].get<std::int64_t>());
  const RunConfig defaults;
  for (const RunField& field : run_fields()) {
    if (!field.gpu_only) continue;
    SCOPED_TRACE(std::string(field.name));
    EXPECT_EQ(field.get(r.config), field.get(defaults));
    std::string path = "/";
    path += field.json_path;
    EXPECT_EQ(j["config"][nlohmann::json::json_pointer(path)], json_of(field.get(defaults)));
  }
  // The help says so.
  const Child help = start_cli(dir_, {"train", "--help"});
  ASSERT_EQ(finish(help), 0);
  const std::string text = testing::read_bytes(help.out);
  EXPECT_TRUE(contains(text, "The GPU options (" + flags + ") apply to GPU runs")) << text;
}

TEST_F(TrainStore, AutoTrainsOnTheCpuQuietlyWithoutAGpuBackend) {
  setenv("MIXLAB_CUDA_BACKEND", "/nonexistent/libmixlab-cuda.so", 1);
  const Child c = start_cli(dir_, tiny_run({"--steps", "2", "--json"}));
  ASSERT_EQ(finish(c), 0);
  EXPECT_EQ(testing::read_bytes(c.err), "");
  const auto j = nlohmann::json::parse(testing::read_bytes(c.out));
  EXPECT_EQ(j["device_id"], "cpu");
  EXPECT_FALSE(j.contains("device_note"));
}

TEST_F(TrainStore, UnknownDeviceExitsTwoListingTheValidOnesAndRecordsNothing) {
  const Child c = start_cli(dir_, tiny_run({"--steps", "2", "--device", "tpu"}));
  EXPECT_EQ(finish(c), 2);
  EXPECT_EQ(
      testing::read_bytes(c.err),
      "mixlab-cli: option '--device': unknown device 'tpu' (valid: cpu, cuda, cuda:N, auto)\n");
  EXPECT_FALSE(std::filesystem::exists(dir_ / "env.sqlite"));
}

}  // namespace
}  // namespace mixlab::store
