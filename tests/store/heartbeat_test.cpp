// Runs recorded on another host (a store on a shared folder, a Slurm sweep's): their process
// cannot be checked from here, so its heartbeat tells. One whose heartbeat is older than
// kHeartbeatLimit is marked interrupted when the store opens; one with a recent heartbeat, or
// with none known (an older store), stays running; runs of this host keep the pid check. The
// writer writes the heartbeat on its own timer, not per step.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "app/store/run_import.h"
#include "app/store/run_owner.h"
#include "app/store/run_recorder.h"
#include "app/store/run_store.h"
#include "app/store/store_writer.h"
#include "tests/store/store_test_util.h"

namespace mixlab::store {
namespace {

using namespace std::chrono_literals;
using testing::sample_environment;
using testing::sample_run;
using testing::sample_step;
using testing::TempDir;

constexpr std::int64_t kMinuteMs = 60'000;
const std::int64_t kLimitMs = std::chrono::milliseconds(kHeartbeatLimit).count();

// A running run with 40 steps kept, as if recorded by a process on `host` whose last heartbeat
// was at `heartbeat_at_ms`.
std::int64_t insert_remote_run(RunStore& store, const std::string& host,
                               std::int64_t heartbeat_at_ms) {
  const std::int64_t id = store.insert_run(sample_run(host + " run"));
  store.mark_started(id, 5000, sample_environment(), 1234, 1);
  std::vector<StepMetrics> kept;
  for (int i = 0; i < 40; ++i) kept.push_back(sample_step(i));
  store.insert_steps(id, kept);
  store.connection()
      .prepare("UPDATE runs SET owner_host = ?, owner_pid = 4242, heartbeat_at_ms = ? WHERE id = ?")
      .bind(1, host)
      .bind(2, heartbeat_at_ms)
      .bind(3, id)
      .run();
  return id;
}

// The pid of a child process that has exited and been reaped.
std::int64_t dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

std::int64_t heartbeat_of(RunStore& store, std::int64_t run_id) {
  return store.connection().query_int("SELECT coalesce(heartbeat_at_ms, 0) FROM runs WHERE id = " +
                                      std::to_string(run_id));
}

TEST(Heartbeat, LimitIsFarAboveTheInterval) {
  EXPECT_GE(kHeartbeatLimit, 10 * kHeartbeatInterval);
}

// Another host's run with no heartbeat for longer than the limit is marked interrupted on open,
// saying whose heartbeat stopped when, with figures from its steps; one with a recent heartbeat
// is left running.
TEST(Heartbeat, OtherHostsRunWithAStaleHeartbeatIsInterruptedOnOpen) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  const std::int64_t now = now_utc_ms();
  const std::int64_t stale_at = now - kLimitMs - kMinuteMs;
  std::int64_t stale = 0, recent = 0;
  {
    RunStore store = RunStore::open(path);
    stale = insert_remote_run(store, "node-17", stale_at);
    recent = insert_remote_run(store, "node-18", now - kLimitMs + kMinuteMs);
  }
  RunStore store = RunStore::open(path);
  const RunRecord s = store.run(stale);
  EXPECT_EQ(s.status, RecordStatus::interrupted);
  EXPECT_NE(s.message.find("no heartbeat from host node-17 since " + format_utc(stale_at)),
            std::string::npos)
      << s.message;
  EXPECT_NE(s.message.find("40 steps were kept"), std::string::npos) << s.message;
  EXPECT_EQ(s.summary.steps, 40);
  EXPECT_GT(s.finished_at_ms, 0);
  const RunRecord r = store.run(recent);
  EXPECT_EQ(r.status, RecordStatus::running) << r.message;
  EXPECT_EQ(r.heartbeat_at_ms, now - kLimitMs + kMinuteMs);
  EXPECT_EQ(store.mark_interrupted_runs(), 0);
}

// A run of an older store (schema version 5) has no heartbeat: another host's stays running as
// before, however old it is.
TEST(Heartbeat, RunWithoutAHeartbeatKeepsTheOldRule) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  std::int64_t id = 0;
  {
    RunStore store = RunStore::open(path);
    id = insert_remote_run(store, "node-17", 0);
    // The file as MixLab 5 left it: the run, at version 5, without the column.
    store.connection().exec(
        "ALTER TABLE runs DROP COLUMN heartbeat_at_ms; ALTER TABLE runs DROP COLUMN attention; "
        "DROP TABLE layer_overflows; ALTER TABLE runs DROP COLUMN fp8_history; "
        "ALTER TABLE runs DROP COLUMN fp8_amax; ALTER TABLE runs DROP COLUMN fp8_margin; "
        "ALTER TABLE runs DROP COLUMN fp8_format; DROP TABLE fp8_tensors; "
        "PRAGMA user_version = 5");
  }
  RunStore store = RunStore::open(path);
  EXPECT_EQ(store.connection().query_int("PRAGMA user_version"), kSchemaVersion);
  const RunRecord r = store.run(id);
  EXPECT_EQ(r.status, RecordStatus::running) << r.message;
  EXPECT_EQ(r.heartbeat_at_ms, 0);
  EXPECT_EQ(store.connection().query_int("SELECT count(*) FROM runs WHERE heartbeat_at_ms IS NULL"),
            1);
}

// On this host the process is checked, whatever its heartbeat says: a live one with an old
// heartbeat stays running, a dead one with a fresh heartbeat is interrupted.
TEST(Heartbeat, ThisHostKeepsThePidCheck) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  const std::string host = this_process().host;
  std::int64_t alive = 0, dead = 0;
  {
    RunStore store = RunStore::open(path);
    alive = store.insert_run(sample_run("alive"));
    store.connection().exec("UPDATE runs SET heartbeat_at_ms = 1000 WHERE id = " +
                            std::to_string(alive));
    dead = insert_remote_run(store, host, now_utc_ms());
    store.connection().exec("UPDATE runs SET owner_pid = " + std::to_string(dead_pid()) +
                            " WHERE id = " + std::to_string(dead));
  }
  RunStore store = RunStore::open(path);
  EXPECT_EQ(store.run(alive).status, RecordStatus::running);
  const RunRecord d = store.run(dead);
  EXPECT_EQ(d.status, RecordStatus::interrupted);
  EXPECT_NE(d.message.find("ended before the run did"), std::string::npos) << d.message;
}

// A new run starts with a heartbeat.
TEST(Heartbeat, InsertedRunHasOne) {
  TempDir dir;
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const std::int64_t before = now_utc_ms();
  const std::int64_t id = store.insert_run(sample_run());
  EXPECT_GE(heartbeat_of(store, id), before);
  EXPECT_LE(heartbeat_of(store, id), now_utc_ms());
}

// A run recorded through a writer with the given intervals, and a reader of its heartbeat.
struct Recording {
  Recording(std::chrono::milliseconds flush, std::chrono::milliseconds heartbeat)
      : writer(dir / "runs.sqlite", WriterOptions{.store = {},
                                                  .flush_interval = flush,
                                                  .heartbeat_interval = heartbeat}),
        recorder(writer, sample_run()),
        reader(RunStore::open(dir / "runs.sqlite", StoreOptions{.read_only = true})) {}
  std::int64_t heartbeat() { return heartbeat_of(reader, recorder.run_id()); }

  TempDir dir;
  StoreWriter writer;
  RunRecorder recorder;
  RunStore reader;
};

// The writer beats on its own timer while the run is running, with no step arriving (a step or
// an evaluation longer than the limit), and stops once the run has ended.
TEST(Heartbeat, WriterBeatsWhileARunIsRunningAndStopsAfter) {
  Recording rec(5ms, 20ms);
  const std::int64_t first = rec.heartbeat();
  ASSERT_GT(first, 0);
  std::int64_t later = first;
  for (int i = 0; i < 500 && later == first; ++i) {
    std::this_thread::sleep_for(10ms);
    later = rec.heartbeat();
  }
  EXPECT_GT(later, first) << "no heartbeat written in 5 s with a 20 ms interval";

  RunSummary summary;
  summary.status = RunStatus::finished;
  rec.recorder.on_finish(summary);
  rec.writer.flush();
  const std::int64_t last = rec.heartbeat();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(rec.heartbeat(), last) << "a finished run kept beating";
}

// Steps do not write the heartbeat: with an interval longer than the test, 2,000 steps leave
// the first heartbeat as it was.
TEST(Heartbeat, StepsDoNotWriteIt) {
  Recording rec(1ms, 1h);
  const std::int64_t first = rec.heartbeat();
  for (int i = 0; i < 2000; ++i) {
    rec.recorder.on_step(sample_step(i));
    if (i % 500 == 0) std::this_thread::sleep_for(5ms);  // several batches
  }
  rec.writer.flush();
  EXPECT_EQ(rec.reader.step_count(rec.recorder.run_id()), 2000);
  EXPECT_EQ(rec.heartbeat(), first);
}

// `runs import` of a file whose run another host stopped beating for: imported as interrupted,
// saying so; one still beating is left out as still running.
TEST(Heartbeat, ImportTakesAStaleRemoteRunAsInterrupted) {
  TempDir dir;
  const auto other = dir / "other.sqlite";
  const std::int64_t stale_at = now_utc_ms() - kLimitMs - kMinuteMs;
  {
    RunStore source = RunStore::open(other);
    insert_remote_run(source, "node-17", stale_at);
    insert_remote_run(source, "node-18", now_utc_ms());
  }
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const ImportResult r = import_runs(store, other);
  ASSERT_EQ(r.added.size(), 1u);
  EXPECT_EQ(r.still_running.size(), 1u);
  const RunRecord run = store.run(r.added[0].id);
  EXPECT_EQ(run.status, RecordStatus::interrupted);
  EXPECT_NE(run.message.find("no heartbeat from host node-17 since " + format_utc(stale_at)),
            std::string::npos)
      << run.message;
}

}  // namespace
}  // namespace mixlab::store
