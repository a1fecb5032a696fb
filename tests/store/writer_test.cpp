// The writer thread: what is queued arrives, in order, after flush(); a full disk is reported to
// the caller of flush() while queueing never fails and the file stays consistent.
#include <sqlite3.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "app/store/run_recorder.h"
#include "app/store/store_writer.h"
#include "tests/store/store_test_util.h"

namespace mixlab::store {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

TEST(StoreWriter, QueuedRowsArriveAfterFlush) {
  TempDir dir;
  const auto db = dir / "runs.sqlite";
  StoreWriter writer(db);
  RunRecorder recorder(writer, testing::sample_run("recorded"));
  RunInfo info;
  info.device.kind = "cpu";
  info.device.name = "test cpu";
  info.device.threads = 2;
  info.device.libraries.onednn = "2.6.3";
  info.device.libraries.onednn_isa = "avx512_core_amx";
  info.total_steps = 10000;
  info.memory.activation_bytes = 4096;
  recorder.on_start(info);
  for (int i = 0; i < 10000; ++i) recorder.on_step(testing::sample_step(i));
  recorder.on_epoch(EpochMetrics{0, 10000, 0.5, 0.75, 0.6, 0.7, 2.0, 480000.0});
  RunSummary summary;
  summary.status = RunStatus::stopped;
  summary.message = "stopped by the user";
  summary.steps = 10000;
  recorder.on_finish(summary);
  writer.flush();
  EXPECT_EQ(writer.rows_committed(), 10000);
  EXPECT_EQ(writer.last_error(), "");

  RunStore store = RunStore::open(db, StoreOptions{.read_only = true});
  const RunRecord r = store.run(recorder.run_id());
  EXPECT_EQ(r.status, RecordStatus::stopped);
  EXPECT_EQ(r.message, "stopped by the user");
  EXPECT_EQ(r.summary.steps, 10000);
  EXPECT_EQ(r.total_steps, 10000);
  EXPECT_EQ(r.summary.peak_memory_bytes, 4096);
  EXPECT_EQ(r.environment.device_name, "test cpu");
  EXPECT_EQ(r.environment.onednn_version, "2.6.3");
  EXPECT_EQ(r.environment.threads, 2);
  EXPECT_GT(r.started_at_ms, 0);
  EXPECT_GE(r.finished_at_ms, r.started_at_ms);
  EXPECT_EQ(store.step_count(r.id), 10000);
  EXPECT_EQ(store.epochs(r.id).size(), 1u);
}

// A run that never started (its dataset could not be read) is kept as failed, with the reason.
TEST(StoreWriter, RunThatFailsBeforeTrainingIsKept) {
  TempDir dir;
  StoreWriter writer(dir / "runs.sqlite");
  RunRecorder recorder(writer, testing::sample_run());
  recorder.fail("/data/mnist: mnist directory not found");
  writer.flush();
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const RunRecord r = store.run(recorder.run_id());
  EXPECT_EQ(r.status, RecordStatus::failed);
  EXPECT_EQ(r.message, "/data/mnist: mnist directory not found");
  EXPECT_EQ(r.started_at_ms, 0);
}

TEST(StoreWriter, BadFileFailsTheConstructor) {
  TempDir dir;
  testing::write_bytes(dir / "runs.sqlite", "not a database at all, just some text");
  EXPECT_THROW(StoreWriter(dir / "runs.sqlite"), StoreError);
}

TEST(StoreWriter, FullDiskIsReportedAndTheFileStaysConsistent) {
  TempDir dir;
  const auto db = dir / "runs.sqlite";
  { RunStore::open(db); }
  std::int64_t run_id = 0;
  {
    WriterOptions options;
    options.store.max_page_count =
        static_cast<std::int64_t>(std::filesystem::file_size(db) / 4096 + 3);
    StoreWriter writer(db, options);
    run_id = writer.begin_run(testing::sample_run());
    for (int i = 0; i < 50000; ++i) writer.step(run_id, testing::sample_step(i));
    try {
      writer.flush();
      FAIL() << "50,000 rows fit in a few pages";
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), SQLITE_FULL) << e.what();
    }
    EXPECT_NE(writer.last_error().find("full"), std::string::npos) << writer.last_error();
    writer.step(run_id, testing::sample_step(50000));  // queueing still never fails
  }
  RunStore store = RunStore::open(db);
  Statement check = store.connection().prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.step());
  EXPECT_EQ(check.column_text(0), "ok");
  EXPECT_EQ(store.step_count(run_id), 0) << "the batch that did not fit was rolled back whole";
  EXPECT_EQ(store.run(run_id).status, RecordStatus::running);  // this process is still alive
}

// WAL: a reader in the middle of a read transaction does not hold the writer up, and keeps its
// snapshot until it ends.
TEST(StoreWriter, ReadersNeverBlockTheWriter) {
  TempDir dir;
  const auto db = dir / "runs.sqlite";
  StoreWriter writer(db);
  const std::int64_t id = writer.begin_run(testing::sample_run());
  RunStore reader = RunStore::open(db, StoreOptions{.read_only = true});
  reader.connection().exec("BEGIN");
  EXPECT_EQ(reader.step_count(id), 0);
  for (int i = 0; i < 1000; ++i) writer.step(id, testing::sample_step(i));
  writer.flush();  // returns although the reader's transaction is open
  EXPECT_EQ(reader.step_count(id), 0) << "the reader keeps its snapshot";
  reader.connection().exec("COMMIT");
  EXPECT_EQ(reader.step_count(id), 1000);
}

// A trainer pacing 5,000 steps/s: every row arrives. (Its wait per step is a benchmark figure,
// printed by store_bench, not asserted here.)
TEST(StoreWriter, PacedTrainerLosesNoRows) {
  TempDir dir;
  StoreWriter writer(dir / "runs.sqlite");
  const std::int64_t id = writer.begin_run(testing::sample_run());
  const auto start = std::chrono::steady_clock::now();
  constexpr int kSteps = 2500;
  for (int i = 0; i < kSteps; ++i) {
    std::this_thread::sleep_until(start + i * 200us);
    writer.step(id, testing::sample_step(i));
  }
  writer.flush();
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const auto steps = store.steps(id);
  ASSERT_EQ(steps.size(), std::size_t(kSteps));
  for (int i = 0; i < kSteps; ++i) EXPECT_EQ(steps[i].step, i);
}

}  // namespace
}  // namespace mixlab::store
