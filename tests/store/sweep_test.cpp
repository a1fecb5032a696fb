// Sweeps in the store: planning a grid (order, seeds, errors), the sweep tables (members,
// states, the owning process), results per grid point, the long CSV, and importing runs from
// another run database exactly once.
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/store/csv_export.h"
#include "app/store/run_import.h"
#include "app/store/run_store.h"
#include "app/store/schema.h"
#include "app/store/sweep_plan.h"
#include "app/store/sweep_results.h"
#include "app/store/sweeps.h"
#include "engine/core/error.h"
#include "tests/store/store_test_util.h"

namespace mixlab::store {
namespace {

using testing::sample_run;
using testing::TempDir;

SweepSpec grid() {
  SweepSpec spec;
  spec.models = {"fashion-mlp"};
  spec.settings = {{"precision", {"float32", "mixed_float16"}},
                   {"batch-size", {"32", "64", "128"}},
                   {"steps", {"50"}}};
  spec.repeats = 2;
  return spec;
}

// --- planning ---

TEST(SweepPlan, RepeatsOutermostLastSettingFastestSeedsCountUp) {
  const auto members = plan_sweep(grid());
  ASSERT_EQ(members.size(), 12u);
  // Repeat 0 covers every point before repeat 1 starts.
  for (int i = 0; i < 6; ++i) EXPECT_EQ(members[static_cast<std::size_t>(i)].repeat, 0);
  for (int i = 6; i < 12; ++i) EXPECT_EQ(members[static_cast<std::size_t>(i)].repeat, 1);
  EXPECT_EQ(members[0].value("precision"), "float32");
  EXPECT_EQ(members[0].value("batch-size"), "32");
  EXPECT_EQ(members[1].value("batch-size"), "64");
  EXPECT_EQ(members[3].value("precision"), "mixed_float16");
  EXPECT_EQ(members[3].value("batch-size"), "32");
  EXPECT_EQ(members[0].value("seed"), "42");  // the run default
  EXPECT_EQ(members[6].value("seed"), "43");
  for (std::size_t i = 0; i < members.size(); ++i) EXPECT_EQ(members[i].index, static_cast<int>(i));
}

TEST(SweepPlan, TrainArgsAreTrainOptionsAndBooleansFlags) {
  SweepSpec spec;
  spec.models = {"cifar10-mlp"};
  spec.settings = {{"tf32", {"on", "off"}}, {"seed", {"7"}}};
  const auto members = plan_sweep(spec);
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0].train_args(),
            (std::vector<std::string>{"--model", "cifar10-mlp", "--tf32", "--seed", "7"}));
  EXPECT_EQ(members[1].train_args(),
            (std::vector<std::string>{"--model", "cifar10-mlp", "--seed", "7"}));
  EXPECT_EQ(spec.axes(), std::vector<std::string>{"tf32"});
}

TEST(SweepPlan, BadValuesAreNamed) {
  const auto message = [](SweepSpec spec) {
    try {
      spec.check();
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  SweepSpec spec = grid();
  spec.settings[1].values.push_back("0");
  EXPECT_NE(message(spec).find("--batch-size '0'"), std::string::npos) << message(spec);
  spec = grid();
  spec.settings.push_back({"no-such-flag", {"1"}});
  EXPECT_NE(message(spec).find("'no-such-flag' is not a run setting"), std::string::npos);
  spec = grid();
  spec.settings.push_back({"batch_size", {"16"}});
  EXPECT_NE(message(spec).find("given twice"), std::string::npos) << message(spec);
  spec = grid();
  spec.repeats = 0;
  EXPECT_NE(message(spec).find("repeats"), std::string::npos);
  spec = grid();
  spec.models.clear();
  EXPECT_NE(message(spec).find("at least one model"), std::string::npos);
  spec = grid();
  spec.settings[1].values.assign(200, "32");
  spec.repeats = 100;
  EXPECT_NE(message(spec).find("over 10000 runs"), std::string::npos);
}

TEST(SweepPlan, FileRoundTripKeepsTheAxesOrder) {
  const std::string text = R"({"name": "mp", "models": ["cifar10-mlp", "fashion-mlp"],
    "repeats": 3, "settings": {"precision": ["float32", "mixed_bfloat16"],
    "batch-size": [32, 64], "steps": 20, "tf32": true}})";
  const SweepSpec spec = parse_sweep_json(text, "s.json");
  EXPECT_EQ(spec.repeats, 3);
  EXPECT_EQ(spec.axes(), (std::vector<std::string>{"model", "precision", "batch-size"}));
  EXPECT_EQ(plan_sweep(spec).size(), 2u * 2u * 2u * 3u);
  const SweepSpec back = parse_sweep_json(to_json(spec).dump(), "again");
  EXPECT_EQ(to_json(back).dump(), to_json(spec).dump());
  try {
    parse_sweep_json(R"({"settings": {"precision": "float64"}, "models": ["m"]})", "bad.json");
    FAIL() << "float64 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_sweep_json(R"({"modles": ["m"]})", "typo.json"), ConfigError);
  EXPECT_THROW(parse_sweep_json("[1, 2", "cut.json"), ConfigError);
}

// A sweep file that is not a regular file is refused by its kind, naming it: /dev/zero once
// grew memory without end and a FIFO blocked for ever.
TEST(SweepPlan, OnlyARegularFileOfAtMost1MiBIsRead) {
  const TempDir dir;
  const auto error_of = [](const std::filesystem::path& file) {
    try {
      read_sweep_file(file);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_of("/dev/zero"),
            "/dev/zero: cannot read sweep file: not a regular file (a character device)");
  ASSERT_EQ(mkfifo((dir.path() / "fifo.json").c_str(), 0600), 0);
  EXPECT_EQ(error_of(dir.path() / "fifo.json"), (dir.path() / "fifo.json").string() +
                                                    ": cannot read sweep file: not a regular file "
                                                    "(a FIFO)");
  EXPECT_EQ(error_of(dir.path()),
            dir.path().string() + ": cannot read sweep file: it is a directory");
  std::ofstream(dir.path() / "big.json") << "{\"models\": [\"m\"]}" << std::string(2 << 20, ' ');
  EXPECT_NE(error_of(dir.path() / "big.json").find("a sweep file is at most 1 MiB"),
            std::string::npos);
  std::ofstream(dir.path() / "ok.json") << R"({"models": ["m"], "repeats": 2})";
  EXPECT_EQ(read_sweep_file(dir.path() / "ok.json").repeats, 2);
}

// --- the tables ---

SweepRecord planned(const SweepSpec& spec) {
  const SweepRecord s = planned_sweep(spec);
  EXPECT_EQ(s.members.size(), plan_sweep(spec).size());
  EXPECT_EQ(s.executor, "local");
  EXPECT_EQ(s.name, spec.display_name());
  return s;
}

TEST(Sweeps, MembersStatesAndLookupByUid) {
  TempDir dir;
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const auto id = insert_sweep(store, planned(grid()));
  SweepRecord s = sweep(store, std::to_string(id));
  EXPECT_EQ(s.members.size(), 12u);
  EXPECT_EQ(s.count(MemberState::planned), 12);
  EXPECT_EQ(s.state, SweepState::running);
  EXPECT_TRUE(s.owner_is_alive());
  EXPECT_EQ(sweep(store, s.uid.substr(0, 8)).id, id);
  EXPECT_THROW(sweep(store, "999"), StoreError);

  RunRecord run = sample_run();
  run.uid = new_uid();
  start_member(store, id, 3, run.uid);
  const auto run_id = store.insert_run(run);
  ASSERT_TRUE(find_run_by_uid(store, run.uid));
  EXPECT_EQ(find_run_by_uid(store, run.uid)->id, run_id);
  set_member(store, id, 3, MemberState::done, run_id, "");
  s = *find_sweep(store, id);
  EXPECT_EQ(s.members[3].state, MemberState::done);
  EXPECT_EQ(s.members[3].run_uid, run.uid);
  EXPECT_EQ(sweep_run_ids(store, id), std::vector<std::int64_t>{run_id});
  // Deleting the run keeps the member, without its run.
  RunSummary finished;
  finished.status = RunStatus::finished;
  store.finish_run(run_id, finished, now_utc_ms());
  store.delete_run(run_id);
  EXPECT_FALSE(find_sweep(store, id)->members[3].run_id);
  EXPECT_THROW(set_member(store, id, 99, MemberState::failed, std::nullopt, "x"), StoreError);
}

// A sweep whose process is alive cannot be claimed by another; one whose process is gone can.
TEST(Sweeps, ClaimRefusesALiveOwner) {
  TempDir dir;
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const auto id = insert_sweep(store, planned(grid()));
  EXPECT_NO_THROW(claim_sweep(store, id));  // its own process
  const pid_t child = ::fork();
  if (child == 0) {
    ::sleep(30);
    ::_exit(0);
  }
  const auto start_ticks = [](pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 22; ++i) fields >> field;  // field 22: starttime
    return static_cast<std::int64_t>(std::stoll(field));
  };
  store.connection()
      .prepare("UPDATE sweeps SET owner_pid = ?, owner_start_ticks = ? WHERE id = ?")
      .bind(1, static_cast<std::int64_t>(child))
      .bind(2, start_ticks(child))
      .bind(3, id)
      .run();
  try {
    claim_sweep(store, id);
    ADD_FAILURE() << "claimed a sweep another live process runs";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("is being run by process " + std::to_string(child)),
              std::string::npos)
        << e.what();
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_NO_THROW(claim_sweep(store, id));
}

// Schema version 7 rebuilds the sweeps table (a CHECK cannot be altered) to add the `failed`
// state and the Slurm options: a version 5 file's sweeps and members come through it whole, and
// the members' foreign keys still hold.
TEST(Sweeps, AVersion5FileKeepsItsSweepsAndMembers) {
  TempDir dir;
  const auto path = dir / "runs.sqlite";
  {
    Connection db(path.string(), OpenMode::read_write_create);
    migrate(db, schema_migrations(), 5);
    db.exec(
        "INSERT INTO sweeps (id, uid, name, created_at_ms, executor, state, spec_json, message, "
        "slurm_job_id, shared_dir) VALUES (7, 'abcdef0123456789abcdef0123456789', 'old', 1, "
        "'slurm', 'stopped', '{}', 'was stopped', '41', '/shared/sweep-abcdef012345');"
        "INSERT INTO sweep_members (sweep_id, member, settings_json, state, message) VALUES "
        "(7, 0, '{}', 'done', ''), (7, 1, '{}', 'failed', 'CANCELLED')");
  }
  RunStore store = RunStore::open(path);
  EXPECT_EQ(store.connection().query_int("PRAGMA user_version"), kSchemaVersion);
  SweepRecord s = *find_sweep(store, 7);
  EXPECT_EQ(s.uid, "abcdef0123456789abcdef0123456789");
  EXPECT_EQ(s.state, SweepState::stopped);
  EXPECT_EQ(s.message, "was stopped");
  EXPECT_EQ(s.slurm_job_id, "41");
  EXPECT_EQ(s.slurm_options, "");
  ASSERT_EQ(s.members.size(), 2u);
  EXPECT_EQ(s.members[0].state, MemberState::done);
  EXPECT_EQ(s.members[1].message, "CANCELLED");

  set_sweep_state(store, 7, SweepState::failed, "not submitted: why");
  set_slurm_options(store, 7, R"({"partition": "gpu"})");
  s = *find_sweep(store, 7);
  EXPECT_EQ(s.state, SweepState::failed);
  EXPECT_EQ(to_string(s.state), "failed");
  EXPECT_EQ(s.slurm_options, R"({"partition": "gpu"})");
  // The members' foreign keys: a deleted run leaves its member without it.
  RunRecord run = sample_run();
  const auto run_id = store.insert_run(run);
  set_member(store, 7, 0, MemberState::done, run_id, "");
  RunSummary finished;
  finished.status = RunStatus::finished;
  store.finish_run(run_id, finished, now_utc_ms());
  store.delete_run(run_id);
  EXPECT_FALSE(find_sweep(store, 7)->members[0].run_id);
  EXPECT_EQ(store.connection().query_int("SELECT count(*) FROM pragma_foreign_key_check"), 0);
}

// --- results ---

TEST(SweepResults, MediansSpreadAndSpeedupOverFloat32) {
  TempDir dir;
  RunStore store = RunStore::open(dir / "runs.sqlite");
  SweepSpec spec;
  spec.models = {"fashion-mlp"};
  spec.settings = {{"precision", {"float32", "mixed_float16"}}, {"batch-size", {"32", "64"}}};
  spec.repeats = 3;
  const auto id = insert_sweep(store, planned(spec));
  const SweepRecord s = *find_sweep(store, id);
  // Step times: float32 10/20 ms, mixed 8/10 ms at batch 32/64, repeats +0, +1, +5 ms.
  for (const SweepMemberRecord& m : s.members) {
    const SweepMember member = parse_sweep_member(m.settings_json);
    if (member.repeat == 2 && member.value("precision") == "mixed_float16" &&
        member.value("batch-size") == "64") {
      set_member(store, id, m.member, MemberState::failed, std::nullopt, "out of memory");
      continue;
    }
    RunRecord run = sample_run("member " + std::to_string(m.member));
    run.tags.clear();
    run.note.clear();
    const auto run_id = store.insert_run(run);
    RunSummary summary;
    summary.status = RunStatus::finished;
    const bool f32 = member.value("precision") == "float32";
    const bool b64 = member.value("batch-size") == "64";
    summary.median_step_ms =
        (f32 ? (b64 ? 20.0 : 10.0) : (b64 ? 10.0 : 8.0)) + std::array{0.0, 1.0, 5.0}[member.repeat];
    summary.samples_per_s = 1000.0;
    store.finish_run(run_id, summary, now_utc_ms());
    set_member(store, id, m.member, MemberState::done, run_id, "");
  }
  const SweepResults r = sweep_results(store, *find_sweep(store, id));
  ASSERT_EQ(r.points.size(), 4u);
  EXPECT_EQ(r.axes, (std::vector<std::string>{"precision", "batch-size"}));
  const SweepPoint& f32_32 = r.points[0];
  EXPECT_EQ(f32_32.label(r.axes), "float32, batch-size 32");
  EXPECT_EQ(f32_32.planned, 3);
  EXPECT_EQ(f32_32.measured, 3);
  EXPECT_DOUBLE_EQ(f32_32.median_step_ms, 11.0);
  EXPECT_DOUBLE_EQ(f32_32.min_step_ms, 10.0);
  EXPECT_DOUBLE_EQ(f32_32.max_step_ms, 15.0);
  EXPECT_TRUE(std::isnan(f32_32.speedup_over_float32));
  const SweepPoint& mixed_32 = r.points[2];
  EXPECT_EQ(mixed_32.precision, "mixed_float16");
  EXPECT_EQ(mixed_32.batch_size, 32);
  EXPECT_DOUBLE_EQ(mixed_32.median_step_ms, 9.0);
  EXPECT_DOUBLE_EQ(mixed_32.speedup_over_float32, 11.0 / 9.0);
  const SweepPoint& mixed_64 = r.points[3];
  EXPECT_EQ(mixed_64.failed, 1);
  EXPECT_EQ(mixed_64.measured, 2);
  EXPECT_DOUBLE_EQ(mixed_64.median_step_ms, 10.5);  // the median of two
  EXPECT_DOUBLE_EQ(mixed_64.speedup_over_float32, 21.0 / 10.5);

  // The long CSV: a header, then one row per member with its settings and figures.
  std::ostringstream csv;
  write_sweep_csv(csv, store, *find_sweep(store, id));
  std::vector<std::string> lines;
  std::istringstream in(csv.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 13u);
  EXPECT_EQ(lines[0].rfind("sweep_id,sweep_name,member,repeat,member_state,member_message,run_id,", 0), 0u)
      << lines[0];
  EXPECT_NE(lines[0].find(",batch_size,"), std::string::npos);
  const auto columns = [](const std::string& line) { return std::count(line.begin(), line.end(), ','); };
  for (const std::string& line : lines) EXPECT_EQ(columns(line), columns(lines[0])) << line;
  EXPECT_NE(lines[12].find(",failed,out of memory,"), std::string::npos) << lines[12];
}

// --- import ---

TEST(RunImport, TwiceAddsNothingAndKeepsStepsAndTags) {
  TempDir dir;
  const auto other = dir / "other.sqlite";
  std::string uid;
  {
    RunStore source = RunStore::open(other);
    RunRecord run = sample_run("from elsewhere");
    run.tags = {"b", "a"};
    const auto id = source.insert_run(run);
    std::vector<StepMetrics> steps(5, testing::sample_step(0));
    for (int i = 0; i < 5; ++i) steps[static_cast<std::size_t>(i)].step = i;
    source.insert_steps(id, steps);
    RunSummary summary;
    summary.status = RunStatus::finished;
    summary.steps = 5;
    source.finish_run(id, summary, now_utc_ms());
    uid = source.run(id).uid;
  }
  const std::string before = testing::read_bytes(other);
  RunStore store = RunStore::open(dir / "runs.sqlite");
  store.insert_run(sample_run("already here"));
  ImportResult r = import_runs(store, other);
  ASSERT_EQ(r.added.size(), 1u);
  EXPECT_EQ(r.added[0].uid, uid);
  const RunRecord imported = store.run(r.added[0].id);
  EXPECT_EQ(imported.name, "from elsewhere");
  EXPECT_EQ(imported.uid, uid);
  EXPECT_EQ(imported.status, RecordStatus::finished);
  EXPECT_EQ(imported.tags, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(store.step_count(imported.id), 5);

  r = import_runs(store, other);
  EXPECT_TRUE(r.added.empty());
  ASSERT_EQ(r.already_here.size(), 1u);
  EXPECT_EQ(r.already_here[0].id, imported.id);
  EXPECT_EQ(store.list_runs().size(), 2u);
  EXPECT_EQ(testing::read_bytes(other), before) << "the imported file changed";
  EXPECT_FALSE(std::filesystem::exists(other.string() + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(other.string() + "-shm"));
}

TEST(RunImport, RefusesNewerForeignAndItselfLeavingThemAsTheyWere) {
  TempDir dir;
  RunStore store = RunStore::open(dir / "runs.sqlite");
  store.insert_run(sample_run());
  const auto expect_refused = [&](const std::filesystem::path& file, const std::string& why) {
    const std::string before = testing::read_bytes(file);
    try {
      import_runs(store, file);
      ADD_FAILURE() << file << " imported";
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
    EXPECT_EQ(testing::read_bytes(file), before) << file;
    EXPECT_EQ(store.list_runs().size(), 1u);
  };
  const auto newer = dir / "newer.sqlite";
  {
    RunStore s = RunStore::open(newer);
    s.insert_run(sample_run());
    s.connection().exec("PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  }
  expect_refused(newer, "written by a newer MixLab");
  const auto foreign = dir / "foreign.sqlite";
  {
    Connection db(foreign.string(), OpenMode::read_write_create);
    db.exec("CREATE TABLE runs (id INTEGER PRIMARY KEY)");
  }
  expect_refused(foreign, "not a MixLab run database");
  const auto text = dir / "notes.txt";
  testing::write_bytes(text, "not a database at all\n");
  expect_refused(text, "not a MixLab run database");
  expect_refused(dir / "runs.sqlite", "the run database being imported into");
  EXPECT_THROW(import_runs(store, dir / "missing.sqlite"), StoreError);
}

// A file from an older MixLab (schema version 4, runs without uids) imports; its runs get the
// same uids however often it is imported, so the second import adds nothing.
TEST(RunImport, OlderFileGetsStableUids) {
  TempDir dir;
  const auto old = dir / "old.sqlite";
  {
    Connection db(old.string(), OpenMode::read_write_create);
    migrate(db, schema_migrations().first(4), 4);
    for (int i = 0; i < 2; ++i) {
      db.exec(
          "INSERT INTO runs (name, status, created_at_ms, model_name, model_json, precision, "
          "loss_scaling, batch_size, epochs, steps, optimizer, learning_rate, momentum, "
          "nesterov, beta_1, beta_2, epsilon, seed, threads, dataset, evaluate, warmup_steps, "
          "device, owner_pid) VALUES ('old run', 'finished', 1700000000000, 'mlp', '{}', "
          "'float32', 'none', 32, 1, 0, 'adam', 0.001, 0, 0, 0.9, 0.999, 1e-7, 42, 2, "
          "'fashion-mnist', 1, 10, 'cpu', 4242)");
    }
  }
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const ImportResult first = import_runs(store, old);
  ASSERT_EQ(first.added.size(), 2u);
  EXPECT_NE(first.added[0].uid, first.added[1].uid);
  EXPECT_EQ(first.added[0].uid.size(), 32u);
  const ImportResult second = import_runs(store, old);
  EXPECT_TRUE(second.added.empty());
  EXPECT_EQ(second.already_here.size(), 2u);
  Connection check(old.string(), OpenMode::read_only);
  EXPECT_EQ(check.query_int("PRAGMA user_version"), 4) << "the old file was migrated in place";
}

// A run the file says is running: left out while its process lives; taken as interrupted, with
// the reason given, when the caller knows its process ended (a Slurm task that ended).
TEST(RunImport, RunningRuns) {
  TempDir dir;
  const auto other = dir / "other.sqlite";
  {
    RunStore source = RunStore::open(other);
    source.insert_run(sample_run("still going"));  // owned by this (live) process
  }
  RunStore store = RunStore::open(dir / "runs.sqlite");
  ImportResult r = import_runs(store, other);
  EXPECT_TRUE(r.added.empty());
  EXPECT_EQ(r.still_running.size(), 1u);
  ImportOptions ended;
  ended.running_means_interrupted = "the Slurm task ended before the run did";
  r = import_runs(store, other, ended);
  ASSERT_EQ(r.added.size(), 1u);
  EXPECT_EQ(r.added[0].status, "interrupted");
  const RunRecord run = store.run(r.added[0].id);
  EXPECT_EQ(run.status, RecordStatus::interrupted);
  EXPECT_EQ(run.message, "the Slurm task ended before the run did");
}

}  // namespace
}  // namespace mixlab::store
