// The run store: every field round-trips, migrations, editing, interrupted runs, and every way a
// database file can be unusable (each leaves the file as it was).
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>

#include <gtest/gtest.h>

#include "app/store/run_store.h"
#include "app/store/schema.h"
#include "tests/store/store_test_util.h"

namespace mixlab::store {
namespace {

using testing::sample_environment;
using testing::sample_run;
using testing::sample_step;
using testing::TempDir;

// NaN-aware equality: a figure not measured stays not measured.
void expect_same(double expected, double actual, const char* what) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << what;
  } else {
    EXPECT_EQ(expected, actual) << what;
  }
}

void expect_same_step(const StepMetrics& a, const StepMetrics& b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.epoch, b.epoch);
  expect_same(a.wall_offset_s, b.wall_offset_s, "wall_offset_s");
  expect_same(a.step_ms, b.step_ms, "step_ms");
  expect_same(a.data_wait_ms, b.data_wait_ms, "data_wait_ms");
  expect_same(a.forward_ms, b.forward_ms, "forward_ms");
  expect_same(a.backward_ms, b.backward_ms, "backward_ms");
  expect_same(a.optimizer_ms, b.optimizer_ms, "optimizer_ms");
  expect_same(a.device_ms, b.device_ms, "device_ms");
  expect_same(a.loss, b.loss, "loss");
  expect_same(a.accuracy, b.accuracy, "accuracy");
  expect_same(a.loss_scale, b.loss_scale, "loss_scale");
  EXPECT_EQ(a.skipped, b.skipped);
  EXPECT_EQ(a.samples, b.samples);
}

RunSummary sample_summary() {
  RunSummary s;
  s.status = RunStatus::diverged;
  s.message = "loss became NaN at step 77";
  s.steps = 78;
  s.skipped_steps = 6;
  s.epochs_completed = 1;
  s.final_loss_scale = 256.0;
  s.warmup_steps = 5;
  s.median_step_ms = 1.625;
  s.p5_step_ms = 1.0;
  s.p95_step_ms = 2.5;
  s.samples_per_s = 59076.9;
  s.final_loss = 0.4321;
  s.final_accuracy = 0.875;
  s.test_loss = kNotMeasured;
  s.test_accuracy = 0.8125;
  s.peak_memory_bytes = 123'456'789;
  s.diverged_at_step = 77;
  s.failed_allocation_bytes = 0;
  s.wall_s = 3.25;
  return s;
}

TEST(RunStore, EveryFieldRoundTrips) {
  TempDir dir;
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const RunRecord in = sample_run();
  const std::int64_t id = store.insert_run(in);
  const Environment env = sample_environment();
  store.mark_started(id, in.created_at_ms + 1500, env, 1234, 1000);
  std::vector<StepMetrics> steps;
  for (int i = 0; i < 250; ++i) steps.push_back(sample_step(i));
  steps[3].loss = std::numeric_limits<double>::infinity();
  store.insert_steps(id, steps);
  EpochMetrics e0{0, 100, 0.9, 0.5, 0.8, 0.55, 1.25, 7680.0};
  EpochMetrics e1{1, 100, 0.7, 0.6, kNotMeasured, kNotMeasured, 1.5, 6400.0};
  store.insert_epoch(id, e0);
  store.insert_epoch(id, e1);
  const RunSummary summary = sample_summary();
  store.finish_run(id, summary, in.created_at_ms + 9000);

  const RunRecord out = store.run(id);
  EXPECT_EQ(out.id, id);
  EXPECT_EQ(out.name, in.name);
  EXPECT_EQ(out.status, RecordStatus::diverged);
  EXPECT_EQ(out.message, summary.message);
  EXPECT_EQ(out.created_at_ms, in.created_at_ms);
  EXPECT_EQ(out.started_at_ms, in.created_at_ms + 1500);
  EXPECT_EQ(out.finished_at_ms, in.created_at_ms + 9000);
  EXPECT_EQ(out.model_name, in.model_name);
  EXPECT_EQ(out.model_json, in.model_json);
  EXPECT_EQ(out.config.precision, in.config.precision);
  EXPECT_EQ(out.config.loss_scale.to_string(), "dynamic:1024");
  EXPECT_EQ(out.config.loss_scale.mode, LossScaleConfig::Mode::dynamic);
  EXPECT_EQ(out.config.batch_size, 96);
  EXPECT_EQ(out.config.epochs, 3);
  EXPECT_EQ(out.config.steps, 1234);
  EXPECT_EQ(out.config.optimizer.kind, OptimizerKind::sgd);
  EXPECT_EQ(out.config.optimizer.learning_rate, 0.0125);
  EXPECT_EQ(out.config.optimizer.momentum, 0.9);
  EXPECT_TRUE(out.config.optimizer.nesterov);
  EXPECT_EQ(out.config.optimizer.beta_1, 0.8);
  EXPECT_EQ(out.config.optimizer.beta_2, 0.99);
  EXPECT_EQ(out.config.optimizer.epsilon, 1e-6);
  EXPECT_EQ(out.config.seed, 987654321987ULL);
  EXPECT_EQ(out.config.threads, 3);
  EXPECT_EQ(out.config.dataset.to_string(), "synthetic:8x8x1:4:640:7");
  EXPECT_FALSE(out.config.evaluate);
  EXPECT_EQ(out.config.warmup_steps, 5);
  EXPECT_TRUE(out.config.tf32);
  EXPECT_FALSE(out.config.cuda_graphs);
  EXPECT_TRUE(out.config.data_on_device);
  EXPECT_FALSE(out.config.layer_timing);
  EXPECT_EQ(out.device, "cuda:1");
  EXPECT_EQ(out.total_steps, 1234);
  EXPECT_EQ(out.tags, (std::vector<std::string>{"a,b", "baseline"}));
  EXPECT_EQ(out.note, in.note);

  EXPECT_EQ(out.environment.device_kind, env.device_kind);
  EXPECT_EQ(out.environment.device_name, env.device_name);
  EXPECT_EQ(out.environment.compute_capability, env.compute_capability);
  EXPECT_EQ(out.environment.driver_version, env.driver_version);
  EXPECT_EQ(out.environment.cuda_version, env.cuda_version);
  EXPECT_EQ(out.environment.cudnn_version, env.cudnn_version);
  EXPECT_EQ(out.environment.cublas_version, env.cublas_version);
  EXPECT_EQ(out.environment.onednn_version, env.onednn_version);
  EXPECT_EQ(out.environment.cpu_model, env.cpu_model);
  EXPECT_EQ(out.environment.threads, env.threads);
  EXPECT_EQ(out.environment.mixlab_version, env.mixlab_version);
  EXPECT_EQ(out.environment.hostname, env.hostname);

  const RunSummary& s = out.summary;
  EXPECT_EQ(s.status, RunStatus::diverged);
  EXPECT_EQ(s.steps, summary.steps);
  EXPECT_EQ(s.skipped_steps, summary.skipped_steps);
  EXPECT_EQ(s.epochs_completed, summary.epochs_completed);
  EXPECT_EQ(s.final_loss_scale, summary.final_loss_scale);
  EXPECT_EQ(s.warmup_steps, summary.warmup_steps);
  EXPECT_EQ(s.median_step_ms, summary.median_step_ms);
  EXPECT_EQ(s.p5_step_ms, summary.p5_step_ms);
  EXPECT_EQ(s.p95_step_ms, summary.p95_step_ms);
  EXPECT_EQ(s.samples_per_s, summary.samples_per_s);
  EXPECT_EQ(s.final_loss, summary.final_loss);
  EXPECT_EQ(s.final_accuracy, summary.final_accuracy);
  EXPECT_TRUE(std::isnan(s.test_loss));
  EXPECT_EQ(s.test_accuracy, summary.test_accuracy);
  EXPECT_EQ(s.peak_memory_bytes, summary.peak_memory_bytes);
  EXPECT_EQ(s.diverged_at_step, 77);
  EXPECT_EQ(s.failed_allocation_bytes, 0);
  EXPECT_EQ(s.wall_s, summary.wall_s);

  const std::vector<StepMetrics> back = store.steps(id);
  ASSERT_EQ(back.size(), steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) expect_same_step(steps[i], back[i]);
  EXPECT_TRUE(std::isinf(back[3].loss));
  EXPECT_EQ(store.step_count(id), 250);

  const std::vector<EpochMetrics> epochs = store.epochs(id);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[0].epoch, 0);
  EXPECT_EQ(epochs[0].steps, 100);
  EXPECT_EQ(epochs[0].train_loss, 0.9);
  EXPECT_EQ(epochs[0].train_accuracy, 0.5);
  EXPECT_EQ(epochs[0].test_loss, 0.8);
  EXPECT_EQ(epochs[0].test_accuracy, 0.55);
  EXPECT_EQ(epochs[0].time_s, 1.25);
  EXPECT_EQ(epochs[0].samples_per_s, 7680.0);
  EXPECT_TRUE(std::isnan(epochs[1].test_loss));
  EXPECT_TRUE(std::isnan(epochs[1].test_accuracy));
}

TEST(RunStore, ListsNewestFirstAndNamesUnnamedRuns) {
  TempDir dir;
  RunStore store = RunStore::open(dir / "runs.sqlite");
  RunRecord a = sample_run("");
  a.created_at_ms = 1000;
  RunRecord b = sample_run("second");
  b.created_at_ms = 2000;
  b.tags = {"x"};
  const auto ida = store.insert_run(a);
  const auto idb = store.insert_run(b);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, idb);
  EXPECT_EQ(runs[0].tags, std::vector<std::string>{"x"});
  EXPECT_EQ(runs[1].id, ida);
  EXPECT_EQ(runs[1].name, "fashion-mlp mixed_float16 b96");
  EXPECT_EQ(runs[1].status, RecordStatus::running);
  EXPECT_FALSE(store.find_run(idb + 1).has_value());
  try {
    store.run(idb + 1);
    FAIL() << "no error for an unknown run";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("no run " + std::to_string(idb + 1)), std::string::npos)
        << e.what();
  }
}

TEST(RunStore, EditsAndDeletesWithEverythingTheRunOwns) {
  TempDir dir;
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const auto keep = store.insert_run(sample_run("keep"));
  const auto gone = store.insert_run(sample_run("gone"));
  std::vector<StepMetrics> steps{sample_step(0), sample_step(1)};
  store.insert_steps(keep, steps);
  store.insert_steps(gone, steps);
  store.insert_epoch(gone, EpochMetrics{});

  store.rename(keep, "renamed, with \"quotes\"");
  store.add_tags(keep, {"fp16", "fp16", "slow"});
  store.remove_tags(keep, {"slow", "never-there"});
  store.set_note(keep, "note ✓");
  RunRecord r = store.run(keep);
  EXPECT_EQ(r.name, "renamed, with \"quotes\"");
  EXPECT_EQ(r.tags, (std::vector<std::string>{"a,b", "baseline", "fp16"}));
  EXPECT_EQ(r.note, "note ✓");
  EXPECT_THROW(store.rename(keep, ""), StoreError);
  EXPECT_THROW(store.add_tags(keep, {""}), StoreError);
  EXPECT_THROW(store.rename(9999, "x"), StoreError);
  EXPECT_THROW(store.set_note(9999, "x"), StoreError);
  EXPECT_THROW(store.delete_run(9999), StoreError);

  // A run still recording (this process owns it) cannot be deleted under its writer.
  try {
    store.delete_run(gone);
    ADD_FAILURE() << "a running run was deleted";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("still running"), std::string::npos) << e.what();
  }
  // One recorded on another host cannot be checked: it may be deleted (its writer then ends it
  // `failed`, saying why).
  const auto remote = store.insert_run(sample_run("remote"));
  store.connection().exec("UPDATE runs SET owner_host = 'another-host' WHERE id = " +
                          std::to_string(remote));
  store.delete_run(remote);
  EXPECT_FALSE(store.find_run(remote).has_value());
  RunSummary ended;
  ended.status = RunStatus::stopped;
  store.finish_run(gone, ended, now_utc_ms());
  store.delete_run(gone);
  EXPECT_FALSE(store.find_run(gone).has_value());
  Connection& db = store.connection();
  EXPECT_EQ(db.query_int("SELECT count(*) FROM steps WHERE run_id = " + std::to_string(gone)), 0);
  EXPECT_EQ(db.query_int("SELECT count(*) FROM epochs WHERE run_id = " + std::to_string(gone)), 0);
  EXPECT_EQ(db.query_int("SELECT count(*) FROM run_tags WHERE run_id = " + std::to_string(gone)),
            0);
  EXPECT_EQ(store.step_count(keep), 2);
}

// mixed_float8's per-step tensors (schema version 9): in order of step, layer, part and role,
// a NaN amax kept as NULL and read back as NaN.
TEST(RunStore, Fp8TensorsRoundTripInOrder) {
  TempDir dir;
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const auto id = store.insert_run(sample_run("fp8"));
  const auto tensor = [](int layer, int part, Fp8Role role, float amax) {
    Fp8TensorStep t;
    t.layer = layer;
    t.part = part;
    t.role = role;
    t.amax = amax;
    t.scale = 0.25f;
    t.next_scale = 0.5f;
    t.values = 100;
    t.saturated = 3;
    t.flushed = 7;
    return t;
  };
  const std::vector<Fp8TensorStep> step1 = {tensor(2, 0, Fp8Role::gradient, 1.5f),
                                            tensor(2, 0, Fp8Role::input, 3.0f)};
  const std::vector<Fp8TensorStep> step0 = {
      tensor(2, 1, Fp8Role::kernel, std::numeric_limits<float>::quiet_NaN()),
      tensor(0, 0, Fp8Role::input, 9.0f)};
  store.insert_fp8_tensors(id, 1, step1);
  store.insert_fp8_tensors(id, 0, step0);
  const auto rows = store.fp8_tensors(id);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].step, 0);
  EXPECT_EQ(rows[0].tensor.layer, 0);
  EXPECT_EQ(rows[1].tensor.part, 1);
  EXPECT_TRUE(std::isnan(rows[1].tensor.amax));
  EXPECT_EQ(rows[2].step, 1);
  EXPECT_EQ(rows[2].tensor.role, Fp8Role::input);
  EXPECT_EQ(rows[3].tensor.role, Fp8Role::gradient);
  EXPECT_EQ(rows[3].tensor.amax, 1.5f);
  EXPECT_EQ(rows[3].tensor.scale, 0.25f);
  EXPECT_EQ(rows[3].tensor.next_scale, 0.5f);
  EXPECT_EQ(rows[3].tensor.values, 100);
  EXPECT_EQ(rows[3].tensor.saturated, 3);
  EXPECT_EQ(rows[3].tensor.flushed, 7);
  EXPECT_TRUE(store.fp8_tensors(id + 1).empty());
}

TEST(RunStore, CreatesItsFolderAndSetsWalAndVersion) {
  TempDir dir;
  const auto path = dir / "deeper/still/runs.sqlite";
  RunStore store = RunStore::open(path);
  EXPECT_TRUE(std::filesystem::exists(path));
  Connection& db = store.connection();
  EXPECT_EQ(db.query_int("PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(db.query_int("PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(db.query_int("PRAGMA foreign_keys"), 1);
  Statement mode = db.prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.step());
  EXPECT_EQ(mode.column_text(0), "wal");
}

TEST(RunStore, DefaultPathFollowsMixlabDbThenXdgThenHome) {
  const auto keep = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto db = keep("MIXLAB_DB"), xdg = keep("XDG_DATA_HOME"), home = keep("HOME");
  setenv("MIXLAB_DB", "/data/x.sqlite", 1);
  setenv("XDG_DATA_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(default_store_path(), "/data/x.sqlite");
  unsetenv("MIXLAB_DB");
  EXPECT_EQ(default_store_path(), "/xdg/mixlab/runs.sqlite");
  setenv("XDG_DATA_HOME", "relative/is/ignored", 1);  // the XDG spec says so
  EXPECT_EQ(default_store_path(), "/home/u/.local/share/mixlab/runs.sqlite");
  unsetenv("XDG_DATA_HOME");
  EXPECT_EQ(default_store_path(), "/home/u/.local/share/mixlab/runs.sqlite");
  const auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v)
      setenv(name, v->c_str(), 1);
    else
      unsetenv(name);
  };
  restore("MIXLAB_DB", db);
  restore("XDG_DATA_HOME", xdg);
  restore("HOME", home);
}

TEST(RunStore, EnvironmentTakesLibraryVersions) {
  DeviceInfo cpu;
  cpu.kind = "cpu";
  cpu.name = "Some CPU";
  cpu.threads = 8;
  cpu.libraries.onednn = "2.6.3";
  cpu.libraries.onednn_isa = "avx512_core_amx";
  EXPECT_EQ(cpu.library_versions(), "oneDNN 2.6.3 (isa avx512_core_amx)");
  Environment e = describe_environment(cpu, "1.2.3");
  EXPECT_EQ(e.device_kind, "cpu");
  EXPECT_EQ(e.device_name, "Some CPU");
  EXPECT_EQ(e.threads, 8);
  EXPECT_EQ(e.onednn_version, "2.6.3");
  EXPECT_EQ(e.mixlab_version, "1.2.3");
  EXPECT_FALSE(e.hostname.empty());
  EXPECT_EQ(e.cuda_version, "");

  DeviceInfo gpu;
  gpu.kind = "cuda";
  gpu.compute_capability = "9.0";
  gpu.libraries = {"", "", "13.0", "13.0", "13.0.0", "9.10.2"};
  EXPECT_EQ(gpu.library_versions(), "CUDA runtime 13.0, driver 13.0, cuBLAS 13.0.0, cuDNN 9.10.2");
  e = describe_environment(gpu, "1.2.3");
  EXPECT_EQ(e.compute_capability, "9.0");
  EXPECT_EQ(e.cuda_version, "13.0");
  EXPECT_EQ(e.driver_version, "13.0");
  EXPECT_EQ(e.cublas_version, "13.0.0");
  EXPECT_EQ(e.cudnn_version, "9.10.2");
}

TEST(RunStore, TimestampsAreIsoUtcWithMilliseconds) {
  EXPECT_EQ(format_utc(1'764'470'707'123), "2025-11-30T02:45:07.123Z");
  EXPECT_EQ(format_utc(86'400'000), "1970-01-02T00:00:00.000Z");
  EXPECT_EQ(format_utc(0), "");
}

// --- migrations ---

// A database at each earlier schema version, with a run in it, opens at the current version
// with its run intact. Version 0 is an empty file (what an earlier, store-less MixLab left).
TEST(Migrations, FromEveryEarlierVersion) {
  for (int from = 0; from < kSchemaVersion; ++from) {
    SCOPED_TRACE("from schema version " + std::to_string(from));
    TempDir dir;
    const auto path = dir / "runs.sqlite";
    {
      Connection db(path.string(), OpenMode::read_write_create);
      if (from > 0) migrate(db, schema_migrations(), from);
    }
    RunStore store = RunStore::open(path);
    EXPECT_EQ(store.connection().query_int("PRAGMA user_version"), kSchemaVersion);
    const auto id = store.insert_run(sample_run());
    EXPECT_EQ(store.run(id).name, sample_run().name);
  }
}

// A version 1 database as MixLab 0.1 wrote it, with a run in it: version 2 adds the GPU options,
// off for the old run, and later runs keep theirs.
TEST(Migrations, Version1RunsGetTheGpuOptionsOff) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  {
    Connection db(path.string(), OpenMode::read_write_create);
    migrate(db, schema_migrations(), 1);
    // The columns of version 1 that have no default, as RunStore 0.1 inserted them.
    db.exec(
        "INSERT INTO runs (name, status, created_at_ms, model_name, model_json, precision, "
        "loss_scaling, batch_size, epochs, steps, optimizer, learning_rate, momentum, nesterov, "
        "beta_1, beta_2, epsilon, seed, threads, dataset, evaluate, warmup_steps, device) VALUES "
        "('old run', 'finished', 1700000000000, 'mlp', '{}', 'mixed_float16', 'dynamic', 32, 1, "
        "0, 'adam', 0.001, 0, 0, 0.9, 0.999, 1e-7, 42, 2, 'fashion-mnist', 1, 10, 'cpu')");
    ASSERT_EQ(db.query_int("SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'tf32'"),
              0);
  }
  RunStore store = RunStore::open(path);
  EXPECT_EQ(store.connection().query_int("PRAGMA user_version"), kSchemaVersion);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  const RunRecord old = store.run(runs[0].id);
  EXPECT_EQ(old.name, "old run");
  EXPECT_EQ(old.config.precision, Policy::mixed_float16);
  EXPECT_EQ(old.config.batch_size, 32);
  EXPECT_FALSE(old.config.tf32);
  EXPECT_FALSE(old.config.cuda_graphs);
  EXPECT_FALSE(old.config.data_on_device);
  EXPECT_FALSE(old.config.layer_timing);

  RunRecord gpu_run = sample_run("gpu run");
  gpu_run.config.cuda_graphs = true;
  gpu_run.config.layer_timing = true;
  const RunRecord back = store.run(store.insert_run(gpu_run));
  EXPECT_TRUE(back.config.tf32);
  EXPECT_TRUE(back.config.cuda_graphs);
  EXPECT_TRUE(back.config.data_on_device);
  EXPECT_TRUE(back.config.layer_timing);
}

// The migration runner on a made-up history of three versions: from each version it applies
// exactly the later migrations, in order; a migration that fails leaves the database as it was.
TEST(Migrations, RunnerAppliesOnlyLaterStepsAndRollsBackAFailure) {
  static constexpr Migration kHistory[] = {
      {1, "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);"},
      {2, "ALTER TABLE t ADD COLUMN b INTEGER DEFAULT 2;"},
      {3, "INSERT INTO t (a, b) VALUES (3, 3);"},
  };
  for (int from = 0; from <= 3; ++from) {
    SCOPED_TRACE("from version " + std::to_string(from));
    TempDir dir;
    Connection db((dir / "m.sqlite").string(), OpenMode::read_write_create);
    migrate(db, std::span(kHistory).first(static_cast<std::size_t>(from)), from);
    migrate(db, kHistory, 3);
    EXPECT_EQ(db.query_int("PRAGMA user_version"), 3);
    EXPECT_EQ(db.query_int("SELECT count(*) FROM t"), 2);
    EXPECT_EQ(db.query_int("SELECT sum(b) FROM t"), 5);
  }
  static constexpr Migration kBroken[] = {
      {1, "CREATE TABLE t (a INTEGER);"},
      {2, "CREATE TABLE u (b INTEGER); INSERT INTO no_such_table VALUES (1);"},
  };
  TempDir dir;
  Connection db((dir / "m.sqlite").string(), OpenMode::read_write_create);
  migrate(db, std::span(kBroken).first(1), 1);
  try {
    migrate(db, kBroken, 2);
    FAIL() << "a broken migration went through";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("left at version 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(db.query_int("PRAGMA user_version"), 1);
  EXPECT_EQ(db.query_int("SELECT count(*) FROM sqlite_master WHERE name = 'u'"), 0);
}

// --- files that cannot be used: a clear error, and the file as it was ---

void expect_refused(const std::filesystem::path& path, const std::string& expected,
                    const StoreOptions& options = {}) {
  const bool existed = std::filesystem::exists(path);
  const std::string before = existed ? testing::read_bytes(path) : "";
  try {
    RunStore::open(path, options);
    ADD_FAILURE() << "opened " << path;
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos)
        << "the message names the file: " << e.what();
  }
  EXPECT_EQ(std::filesystem::exists(path), existed);
  if (existed) {
    EXPECT_EQ(testing::read_bytes(path), before) << "the file was changed";
  }
  // A read-only look at a WAL database may leave an empty -wal file; never one with content.
  const std::filesystem::path wal = path.string() + "-wal";
  if (std::filesystem::exists(wal)) {
    EXPECT_EQ(std::filesystem::file_size(wal), 0u);
  }
}

TEST(StoreErrors, TextFileIsNotADatabase) {
  TempDir dir;
  testing::write_bytes(dir / "notes.txt", "step,loss\n1,0.5\n");
  expect_refused(dir / "notes.txt", "is not a MixLab run database");
}

TEST(StoreErrors, OtherProgramsDatabaseIsRefused) {
  TempDir dir;
  {
    Connection db((dir / "other.sqlite").string(), OpenMode::read_write_create);
    db.exec("CREATE TABLE photos (id INTEGER PRIMARY KEY); INSERT INTO photos VALUES (1);");
  }
  expect_refused(dir / "other.sqlite", "SQLite file of another program");
}

TEST(StoreErrors, NewerSchemaIsRefusedAndNotAltered) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  {
    RunStore store = RunStore::open(path);
    store.insert_run(sample_run());
    store.connection().exec("PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  }
  expect_refused(path,
                 "written by a newer MixLab (schema version " + std::to_string(kSchemaVersion + 1));
  expect_refused(path, "newer MixLab", StoreOptions{.read_only = true});
}

TEST(StoreErrors, CorruptDatabaseIsRefused) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  {
    RunStore store = RunStore::open(path);
    const auto id = store.insert_run(sample_run());
    std::vector<StepMetrics> steps;
    for (int i = 0; i < 2000; ++i) steps.push_back(sample_step(i));
    store.insert_steps(id, steps);
  }
  // Overwrite the schema's b-tree on page 1 (after the 100-byte file header) with garbage.
  std::string bytes = testing::read_bytes(path);
  ASSERT_GT(bytes.size(), 8192u);
  for (std::size_t i = 100; i < 4096; ++i) bytes[i] = static_cast<char>(0xA5 ^ (i * 7));
  testing::write_bytes(path, bytes);
  expect_refused(path, "corrupt");
  // A damaged header: the file no longer reads as SQLite at all.
  bytes = testing::read_bytes(path);
  bytes.replace(0, 16, "not sqlite here!");
  testing::write_bytes(path, bytes);
  expect_refused(path, "not a MixLab run database");
}

// Page-level damage inside the steps table (the header and schema intact, as a bad sector or a
// torn copy leaves it): opening for writing runs quick_check and refuses, leaving the file as it
// was; a read that reaches the damage says "corrupt" and names the file.
TEST(StoreErrors, DamagedPagesAreFoundBeforeAnythingIsWritten) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  std::int64_t id = 0;
  {
    RunStore store = RunStore::open(path);
    id = store.insert_run(sample_run());
    std::vector<StepMetrics> steps;
    for (int i = 0; i < 4000; ++i) steps.push_back(sample_step(i));
    store.insert_steps(id, steps);
    store.connection().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  std::string bytes = testing::read_bytes(path);
  const std::size_t page = 4096;
  ASSERT_GT(bytes.size(), 20 * page);
  // Three pages in the middle of the file: b-tree pages of the steps table.
  const std::size_t middle = bytes.size() / page / 2 * page;
  for (std::size_t i = middle; i < middle + 3 * page; ++i)
    bytes[i] = static_cast<char>(0x5A ^ (i * 13));
  testing::write_bytes(path, bytes);
  expect_refused(path, "corrupt");
  try {
    // Refused on open, or where the read meets the damage.
    RunStore reader = RunStore::open(path, StoreOptions{.read_only = true});
    reader.steps(id);
    ADD_FAILURE() << "the damaged steps read back";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("is corrupt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(testing::read_bytes(path), bytes);
}

// quick_check's cost on a large history, printed (a figure for the README, not a timed test).
TEST(StoreErrors, QuickCheckCostOnALargeHistory) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  {
    RunStore store = RunStore::open(path);
    std::vector<StepMetrics> steps;
    for (int i = 0; i < 20000; ++i) steps.push_back(sample_step(i));
    for (int r = 0; r < 20; ++r) store.insert_steps(store.insert_run(sample_run()), steps);
  }
  const auto size = std::filesystem::file_size(path);
  const auto start = std::chrono::steady_clock::now();
  { RunStore store = RunStore::open(path); }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("opening a %.0f MB history for writing (quick_check included): %.0f ms\n",
              static_cast<double>(size) / 1e6, ms);
}

// An empty path is no database (it used to record into an unnamed temporary one).
TEST(StoreErrors, EmptyPathIsRefused) {
  EXPECT_THROW(RunStore::open(""), StoreError);
}

// A database on read-only media (a folder this process cannot write: SQLite could not make the
// -shm a WAL database needs) still opens for reading, and nothing appears beside it.
TEST(StoreErrors, ReadOnlyFolderOpensForReadingWithoutSideFiles) {
  if (geteuid() == 0) GTEST_SKIP() << "a read-only folder does not stop root (tests/faults "
                                      "mounts a read-only file system instead)";
  TempDir dir;
  std::filesystem::create_directory(dir / "ro");
  const auto path = dir / "ro" / "runs.sqlite";
  {
    RunStore store = RunStore::open(path);
    store.insert_run(sample_run());
  }
  std::filesystem::permissions(
      dir / "ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  {
    RunStore store = RunStore::open(path, StoreOptions{.read_only = true});
    EXPECT_EQ(store.list_runs().size(), 1u);
  }
  EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path.string() + "-shm"));
  std::filesystem::permissions(dir / "ro", std::filesystem::perms::owner_all);
}

TEST(StoreErrors, FolderThatCannotBeCreated) {
  // Nobody, root included, can create files under /proc.
  expect_refused("/proc/mixlab-test/runs.sqlite", "cannot create the folder /proc/mixlab-test");
}

TEST(StoreErrors, ReadOnlyFolder) {
  if (geteuid() == 0) GTEST_SKIP() << "a read-only folder does not stop root";
  TempDir dir;
  std::filesystem::create_directory(dir / "ro");
  std::filesystem::permissions(
      dir / "ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  expect_refused(dir / "ro/runs.sqlite", "cannot be written");
}

TEST(StoreErrors, ReadOnlyOpenNeverWrites) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  expect_refused(path, "no run database at", StoreOptions{.read_only = true});
  {
    RunStore store = RunStore::open(path);
    store.insert_run(sample_run());
  }
  const std::string before = testing::read_bytes(path);
  {
    RunStore store = RunStore::open(path, StoreOptions{.read_only = true});
    EXPECT_EQ(store.list_runs().size(), 1u);
    EXPECT_THROW(store.insert_run(sample_run()), StoreError);
    EXPECT_THROW(store.set_note(1, "x"), StoreError);
  }
  EXPECT_EQ(testing::read_bytes(path), before);
}

TEST(StoreErrors, FullDiskRollsBackTheBatch) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  std::int64_t id = 0;
  {
    RunStore store = RunStore::open(path);
    id = store.insert_run(sample_run());
    store.insert_steps(id, std::vector<StepMetrics>{sample_step(0)});
  }
  {
    // What SQLite sees on a full disk: no page can be added.
    const auto pages = std::filesystem::file_size(path) / 4096 + 2;
    RunStore store = RunStore::open(path, StoreOptions{.max_page_count = std::int64_t(pages)});
    std::vector<StepMetrics> steps;
    for (int i = 1; i < 20000; ++i) steps.push_back(sample_step(i));
    try {
      Transaction tx(store.connection());
      store.insert_steps(id, steps);
      tx.commit();
      FAIL() << "20,000 rows fit in " << pages << " pages";
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), SQLITE_FULL) << e.what();
      EXPECT_NE(std::string(e.what()).find("full"), std::string::npos) << e.what();
    }
  }
  RunStore store = RunStore::open(path);
  EXPECT_EQ(store.step_count(id), 1) << "the failed batch was rolled back whole";
  Statement check = store.connection().prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.step());
  EXPECT_EQ(check.column_text(0), "ok");
}

// --- interrupted runs ---

// Records a run started at 5000 ms that kept `steps` steps and whose owner is a child process
// that has exited and been reaped.
std::int64_t insert_dead_run(RunStore& store, int steps) {
  const std::int64_t id = store.insert_run(sample_run("dead"));
  store.mark_started(id, 5000, sample_environment(), 1234, 1);
  std::vector<StepMetrics> kept;
  for (int i = 0; i < steps; ++i) kept.push_back(sample_step(i));
  store.insert_steps(id, kept);
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  store.connection().exec("UPDATE runs SET owner_pid = " + std::to_string(child) +
                          " WHERE id = " + std::to_string(id));
  return id;
}

// A run left `running` by a process that has ended is marked interrupted when the store next
// opens, with figures from the steps it kept; a run of a live process is left alone.
TEST(InterruptedRuns, MarkedOnOpenWithFiguresFromTheirSteps) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  std::int64_t dead = 0, alive = 0;
  {
    RunStore store = RunStore::open(path);
    alive = store.insert_run(sample_run("alive"));
    dead = insert_dead_run(store, 40);
  }
  RunStore store = RunStore::open(path);
  const RunRecord d = store.run(dead);
  EXPECT_EQ(d.status, RecordStatus::interrupted);
  EXPECT_NE(d.message.find("40 steps were kept"), std::string::npos) << d.message;
  EXPECT_EQ(d.summary.steps, 40);
  EXPECT_EQ(d.summary.warmup_steps, 5);
  EXPECT_EQ(d.summary.skipped_steps, 3);  // steps 10, 21, 32
  EXPECT_EQ(d.summary.final_loss_scale, sample_step(39).loss_scale);
  EXPECT_GT(d.summary.median_step_ms, 0.9);
  EXPECT_EQ(d.finished_at_ms, 5000 + std::llround(sample_step(39).wall_offset_s * 1000));
  EXPECT_EQ(store.run(alive).status, RecordStatus::running);
  EXPECT_EQ(store.mark_interrupted_runs(), 0);
}

// A damaged file can hold any warm-up: a negative one, or one beyond what an int holds (found
// by fuzz/run_store_fuzz.cpp as a heap overflow). The run is still marked, over all its steps.
TEST(InterruptedRuns, WarmupOutOfRangeIsClampedWhenMarked) {
  for (const char* warmup : {"-3", "-2147483648", "1099511627776", "1000"}) {
    SCOPED_TRACE(warmup);
    TempDir dir;
    const auto path = dir / "runs.sqlite";
    std::int64_t dead = 0;
    {
      RunStore store = RunStore::open(path);
      dead = insert_dead_run(store, 10);
      store.connection().exec(std::string("UPDATE runs SET warmup_steps = ") + warmup +
                              " WHERE id = " + std::to_string(dead));
    }
    RunStore store = RunStore::open(path);
    const RunRecord d = store.run(dead);
    EXPECT_EQ(d.status, RecordStatus::interrupted);
    EXPECT_EQ(d.summary.steps, 10);
    EXPECT_GE(d.summary.warmup_steps, 0);
    EXPECT_LE(d.summary.warmup_steps, 5);
    EXPECT_GT(d.summary.median_step_ms, 0.0);
  }
}

}  // namespace
}  // namespace mixlab::store
