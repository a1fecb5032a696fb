// mixlab-cli sweep with the local executor, and runs import, as a user runs them: a grid runs
// every member once; a member that fails is recorded and the sweep goes on; a sweep killed with
// SIGKILL or stopped with Ctrl+C resumes without redoing a finished member; bad input is named.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/store/run_store.h"
#include "app/store/sweeps.h"
#include "tests/cli/cli_support.h"
#include "tests/test_paths.h"

namespace mixlab_cli_test {
namespace {

using mixlab::store::MemberState;
using mixlab::store::RecordStatus;
using mixlab::store::RunStore;
using mixlab::store::SweepState;

constexpr const char* kTinyModel = R"({
  "name": "tiny",
  "input": {"shape": [8, 8, 1]},
  "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 4, "activation": "softmax"}]
})";

class SweepCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("mixlab-sweep-test");
    db_ = (dir_ / "runs.sqlite").string();
    tiny_ = (dir_ / "tiny.json").string();
    std::ofstream(tiny_) << kTinyModel;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Result cli(const std::string& args) { return run_cli(args + " --db " + db_); }
  mixlab::store::SweepRecord sweep(std::int64_t id = 1) {
    RunStore store = RunStore::open(db_);
    return *mixlab::store::find_sweep(store, id);
  }
  int runs_with(RecordStatus status) {
    RunStore store = RunStore::open(db_);
    int n = 0;
    for (const auto& r : store.list_runs()) n += r.status == status;
    return n;
  }
  // Starts `mixlab-cli ARGS --db DB` in the background; stdout and stderr go to files.
  pid_t start(const std::vector<std::string>& args) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      std::vector<std::string> all = {mixlab::test::cli_path()};
      all.insert(all.end(), args.begin(), args.end());
      all.insert(all.end(), {"--db", db_});
      std::vector<char*> argv;
      for (std::string& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      const std::string out = (dir_ / "bg.out").string(), err = (dir_ / "bg.err").string();
      std::freopen(out.c_str(), "w", stdout);
      std::freopen(err.c_str(), "w", stderr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    return pid;
  }
  // Waits (up to a minute) until `done` members of sweep 1 are done.
  void wait_for_done(int done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
      if (fs::exists(db_)) {
        RunStore store = RunStore::open(db_);
        const auto s = mixlab::store::find_sweep(store, 1);
        if (s && s->count(MemberState::done) >= done) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "the sweep did not get " << done << " members done within a minute";
  }
  // Every member is done, with its own finished run, and every finished run is a member's.
  void expect_each_member_ran_once(std::size_t members) {
    const auto s = sweep();
    ASSERT_EQ(s.members.size(), members);
    std::set<std::int64_t> runs;
    for (const auto& m : s.members) {
      EXPECT_EQ(m.state, MemberState::done) << "member " << m.member << ": " << m.message;
      ASSERT_TRUE(m.run_id) << "member " << m.member;
      runs.insert(*m.run_id);
    }
    EXPECT_EQ(runs.size(), members);
    EXPECT_EQ(runs_with(RecordStatus::finished), static_cast<int>(members))
        << "a finished member ran again";
  }

  fs::path dir_;
  std::string db_, tiny_;
};

TEST_F(SweepCli, GridRunsEveryMemberOnceAndShowsPointsAndSpeedups) {
  const Result r = cli("sweep --model " + tiny_ +
                       " --dataset synthetic:8x8x1:4:64 --steps 6 --threads 1 --precision "
                       "float32,mixed_bfloat16 --batch-size 8,16 --repeats 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["state"], "finished");
  EXPECT_EQ(out["members_done"], 8);
  ASSERT_EQ(out["points"].size(), 4u);
  for (const auto& p : out["points"]) {
    EXPECT_EQ(p["measured"], 2) << p.dump();
    EXPECT_EQ(p["run_ids"].size(), 2u);
    if (p["settings"]["precision"] == "mixed_bfloat16")
      EXPECT_GT(p["speedup_over_float32"].get<double>(), 0.0) << p.dump();
    else
      EXPECT_TRUE(p["speedup_over_float32"].is_null());
  }
  expect_each_member_ran_once(8);
  // The runs carry the member's settings, the repeat's seed, and the sweep's tag.
  RunStore store = RunStore::open(db_);
  const auto s = *mixlab::store::find_sweep(store, 1);
  const auto last = store.run(*s.members[7].run_id);
  EXPECT_EQ(last.config.batch_size, 16);
  EXPECT_EQ(last.config.seed, 43);
  EXPECT_EQ(last.tags, std::vector<std::string>{"sweep-1"});

  // The table, the list and the long CSV.
  const Result missing = cli("sweep show 9");  // the store exists; the sweep does not
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("no sweep 9"), std::string::npos) << missing.err;
  const Result show = cli("sweep show 1");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("mixed_bfloat16, batch-size 16"), std::string::npos) << show.out;
  const Result list = cli("sweep list");
  EXPECT_NE(list.out.find("8/8"), std::string::npos) << list.out;
  const Result csv = cli("runs export --sweep 1");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 9) << csv.out;
  EXPECT_EQ(csv.out.rfind("sweep_id,sweep_name,member,repeat,member_state", 0), 0u);
}

TEST_F(SweepCli, AFailingMemberIsRecordedAndTheSweepGoesOn) {
  // fashion-mlp takes 28x28 images: its members fail on 8x8 data; tiny's run.
  const Result r = cli("sweep --model fashion-mlp," + tiny_ +
                       " --dataset synthetic:8x8x1:4:64 --steps 4 --threads 1 --quiet");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto s = sweep();
  EXPECT_EQ(s.state, SweepState::finished);
  ASSERT_EQ(s.members.size(), 2u);
  EXPECT_EQ(s.members[0].state, MemberState::failed);
  EXPECT_NE(s.members[0].message.find("takes input 28x28x1"), std::string::npos)
      << s.members[0].message;
  EXPECT_EQ(s.members[1].state, MemberState::done);
  EXPECT_NE(r.out.find("failed members:"), std::string::npos) << r.out;
}

TEST_F(SweepCli, KilledSweepResumesWithoutRedoingFinishedMembers) {
  const pid_t pid =
      start({"sweep", "--model", "fashion-mlp", "--dataset", "synthetic:28x28x1:10:256",
             "--steps", "1500", "--threads", "1", "--batch-size", "8,16,24,32,40", "--quiet"});
  wait_for_done(2);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  // The member that was running is stopped by its own process (it outlives the sweep by a
  // moment): wait for no run to be left running.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (runs_with(RecordStatus::running) > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int done_before = sweep().count(MemberState::done);
  EXPECT_GE(done_before, 2);
  EXPECT_LT(done_before, 5);

  const Result r = cli("sweep resume 1 --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(sweep().state, SweepState::finished);
  expect_each_member_ran_once(5);
}

TEST_F(SweepCli, CtrlCStopsTheSweepAndResumeFinishesIt) {
  const pid_t pid =
      start({"sweep", "--model", "fashion-mlp", "--dataset", "synthetic:28x28x1:10:256",
             "--steps", "1500", "--threads", "1", "--batch-size", "8,16,24,32", "--quiet"});
  wait_for_done(1);
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const auto s = sweep();
  EXPECT_EQ(s.state, SweepState::stopped);
  EXPECT_GT(s.count(MemberState::planned), 0);
  EXPECT_EQ(s.count(MemberState::running), 0);
  EXPECT_NE(s.message.find("sweep resume 1"), std::string::npos) << s.message;

  const Result r = cli("sweep resume 1 --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_each_member_ran_once(4);
  // A try that was stopped is kept as `stopped` (or never began its record): nothing is left
  // running or interrupted.
  RunStore store = RunStore::open(db_);
  for (const auto& run : store.list_runs()) {
    EXPECT_TRUE(run.status == RecordStatus::finished || run.status == RecordStatus::stopped)
        << "run " << run.id << " is " << mixlab::store::to_string(run.status);
  }
}

// --devices runs one member at a time on each device: two CPU "devices" overlap two runs.
TEST_F(SweepCli, OneMemberAtATimeOnEachDevice) {
  const Result r = cli(
      "sweep --model fashion-mlp --dataset synthetic:28x28x1:10:256 --steps 1500 --threads 1 "
      "--batch-size 8,16,24,32 --devices cpu,cpu --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_each_member_ran_once(4);
  RunStore store = RunStore::open(db_);
  const auto runs = store.list_runs();
  int overlapping = 0;
  for (const auto& a : runs) {
    for (const auto& b : runs) {
      if (a.id < b.id && a.started_at_ms < b.finished_at_ms && b.started_at_ms < a.finished_at_ms)
        ++overlapping;
    }
  }
  EXPECT_GE(overlapping, 1) << "no two members ran at once";
  for (const auto& run : runs) EXPECT_EQ(run.device, "cpu");
}

TEST_F(SweepCli, BadInputIsNamedAndNothingIsRecorded) {
  Result r = cli("sweep --model " + tiny_ + " --batch-size 8,0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--batch-size '0'"), std::string::npos) << r.err;
  r = cli("sweep --model " + tiny_ + ",no-such-model --steps 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no-such-model"), std::string::npos) << r.err;
  r = cli("sweep --model " + tiny_ + " --executor pbs");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--executor must be local or slurm"), std::string::npos) << r.err;
  r = cli("sweep --model " + tiny_ + " --executor slurm");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--shared-dir"), std::string::npos) << r.err;
  r = cli("sweep --file " + (dir_ / "missing.json").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.json"), std::string::npos) << r.err;
  if (fs::exists(db_)) {
    RunStore store = RunStore::open(db_);
    EXPECT_TRUE(mixlab::store::list_sweeps(store).empty());
  }
  r = cli("sweep resume 7");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no sweep 7"), std::string::npos) << r.err;
}

TEST_F(SweepCli, SweepFileWithCommandLineOverride) {
  const std::string file = (dir_ / "sweep.json").string();
  std::ofstream(file) << R"({"name": "from a file", "models": [")" << tiny_
                      << R"("], "repeats": 1, "settings": {"precision": ["float32",
      "mixed_bfloat16"], "batch-size": [8, 16], "dataset": "synthetic:8x8x1:4:64",
      "steps": 3, "threads": 1}})";
  const Result r = cli("sweep --file " + file + " --batch-size 4 --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = sweep();
  EXPECT_EQ(s.name, "from a file");
  EXPECT_EQ(s.members.size(), 2u);  // the command line's single batch size wins
}

TEST_F(SweepCli, RunsImportAddsEachRunOnce) {
  const std::string other = (dir_ / "other.sqlite").string();
  Result r = run_cli("train --model " + tiny_ +
                     " --dataset synthetic:8x8x1:4:64 --steps 3 --threads 1 --quiet --db " + other);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli("train --model " + tiny_ +
              " --dataset synthetic:8x8x1:4:64 --steps 3 --threads 1 --quiet --db " + other);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = cli("runs import " + other);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 runs added"), std::string::npos) << r.out;
  r = cli("runs import " + other + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out[0]["added"].size(), 0u);
  EXPECT_EQ(out[0]["already_here"].size(), 2u);
  EXPECT_EQ(runs_with(RecordStatus::finished), 2);

  const std::string junk = (dir_ / "junk.sqlite").string();
  std::ofstream(junk) << "SQLite format 3? no";
  r = cli("runs import " + junk);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not a MixLab run database"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mixlab_cli_test
