// The Slurm executor. The submitter writes the sweep's folder in the shared folder (sweep.json:
// every member's `train` options) and submits one job array; task N runs `mixlab-cli sweep task
// FOLDER`, which trains member N into FOLDER/member-N.sqlite: no SQLite file is ever shared
// between machines. The submitter (or `sweep resume`, or `sweep status`) follows the tasks with
// squeue, imports each ended task's file into the user's history (by run uid: exactly once), and
// records tasks that failed, were cancelled or timed out as failed with Slurm's reason (sacct).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "app/cli/sweep_support.h"
#include "app/store/run_import.h"
#include "app/store/safe_file.h"
#include "engine/core/text_file.h"

namespace mixlab::cli::sweep {

namespace {

constexpr const char* kSweepFile = "sweep.json";
constexpr const char* kCancelledMark = "cancelled";
// The longest an sbatch may take (squeue, sacct and scontrol: run_command's minute).
constexpr double kSbatchTimeoutS = 120.0;

fs::path member_file(const fs::path& folder, int member) {
  return folder / ("member-" + std::to_string(member) + ".sqlite");
}

// 'text' for a POSIX shell.
std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  const auto b = s.find_first_not_of(" \n");
  return b == std::string::npos ? std::string() : s.substr(b);
}

// The sweep folder's description (written by submit_slurm: the members' arguments, up to
// 10000 of them) and the cancel mark (one line), read through the one bounded reader.
constexpr TextFileKind kDescriptionKind{"sweep folder's description", std::uintmax_t{64} << 20, ""};
constexpr TextFileKind kCancelMarkKind{"cancel mark", std::uintmax_t{64} << 10, ""};

nlohmann::ordered_json read_json(const fs::path& file) {
  const std::string text = read_text_file<Error>(file, kDescriptionKind);
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(file.string() + " is not a sweep folder's description: " + e.what());
  }
}

// The array's tasks that Slurm still has (pending or running), by task id, with their state.
// nullopt when squeue could not answer (try again later), with `why` set.
std::optional<std::map<int, std::string>> active_tasks(const std::string& job_id,
                                                       std::string* why = nullptr) {
  const CommandResult r = run_command({"squeue", "-h", "-r", "-j", job_id, "-o", "%K %T"});
  std::map<int, std::string> tasks;
  if (r.status != 0) {
    // A job Slurm has forgotten: nothing of it is active.
    if (r.err.find("Invalid job id") != std::string::npos) return tasks;
    if (why != nullptr) {
      *why = r.timed_out                       ? "it did not answer within a minute"
             : r.status == 127 || r.status < 0 ? "it cannot be run here"
                                               : trim(r.err.empty() ? r.out : r.err);
    }
    return std::nullopt;
  }
  std::istringstream lines(r.out);
  std::string task, state;
  while (lines >> task >> state) {
    try {
      tasks[std::stoi(task)] = state;
    } catch (const std::exception&) {
    }
  }
  return tasks;
}

// Slurm's word on an ended task: "CANCELLED by 0", "TIMEOUT", "FAILED (exit code 1:0)"; empty
// when neither sacct nor scontrol knows it.
std::string slurm_reason(const std::string& job_id, int task) {
  const std::string id = job_id + "_" + std::to_string(task);
  CommandResult r = run_command({"sacct", "-n", "-P", "-X", "-j", id, "-o", "State,ExitCode"});
  if (r.status == 0) {
    const std::string line = trim(r.out.substr(0, r.out.find('\n')));
    if (!line.empty()) {
      const auto bar = line.find('|');
      const std::string state = line.substr(0, bar);
      const std::string code = bar == std::string::npos ? "" : line.substr(bar + 1);
      return state + (code.empty() || code == "0:0" ? "" : " (exit code " + code + ")");
    }
  }
  r = run_command({"scontrol", "-o", "show", "job", id});
  if (r.status == 0) {
    std::string state, reason, code;
    std::istringstream words(r.out);
    std::string word;
    while (words >> word) {
      if (word.rfind("JobState=", 0) == 0) state = word.substr(9);
      if (word.rfind("Reason=", 0) == 0) reason = word.substr(7);
      if (word.rfind("ExitCode=", 0) == 0) code = word.substr(9);
    }
    if (!state.empty()) {
      return state + (reason.empty() || reason == "None" ? "" : " (" + reason + ")") +
             (code.empty() || code == "0:0" ? "" : " (exit code " + code + ")");
    }
  }
  return {};
}

std::string cancelled_by(const fs::path& folder) {
  const TextFileRead mark = try_read_text_file(folder / kCancelledMark, kCancelMarkKind);
  if (mark.missing) return {};
  if (!mark.ok()) return "cancelled (" + mark.problem + ")";
  const std::string line = mark.text.substr(0, mark.text.find('\n'));
  return line.empty() ? "cancelled" : line;
}

// The last run of a member's file, as imported.
std::optional<store::RunRecord> import_member(store::RunStore& store, const fs::path& file,
                                              const std::string& why_interrupted) {
  store::ImportOptions options;
  options.running_means_interrupted = why_interrupted;
  const store::ImportResult result = store::import_runs(store, file, options);
  const store::ImportedRun* last = nullptr;
  for (const auto* list : {&result.added, &result.already_here}) {
    for (const store::ImportedRun& r : *list) {
      if (last == nullptr || r.source_id > last->source_id) last = &r;
    }
  }
  if (last == nullptr) return std::nullopt;
  return store.find_run(last->id);
}

}  // namespace

fs::path sweep_folder(const fs::path& shared_dir, const std::string& uid) {
  return shared_dir / ("sweep-" + uid.substr(0, 12));
}

std::string slurm_options_json(const SlurmOptions& options) {
  nlohmann::ordered_json j;
  std::error_code ec;  // absolute: sweep resume may run from another folder
  j["shared_dir"] =
      options.shared_dir.empty() ? std::string() : fs::absolute(options.shared_dir, ec).string();
  j["partition"] = options.partition;
  j["gres"] = options.gres;
  j["time"] = options.time;
  j["account"] = options.account;
  j["sbatch_options"] = options.sbatch_options;
  j["program"] = options.program;
  return j.dump();
}

SlurmOptions parse_slurm_options(const std::string& json) {
  SlurmOptions options;
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return options;
  const auto text = [&](const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  options.shared_dir = text("shared_dir");
  options.partition = text("partition");
  options.gres = text("gres");
  options.time = text("time");
  options.account = text("account");
  options.program = text("program");
  if (j.contains("sbatch_options") && j["sbatch_options"].is_array()) {
    for (const auto& o : j["sbatch_options"]) {
      if (o.is_string()) options.sbatch_options.push_back(o.get<std::string>());
    }
  }
  return options;
}

namespace {

// Writes the sweep's folder and runs sbatch; the job id. Throws Error saying why not.
std::string submit_job_array(const store::SweepRecord& sweep, const SlurmOptions& options,
                             const fs::path& folder, nlohmann::ordered_json& description) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw Error("cannot make the sweep folder " + folder.string() + ": " + ec.message());
  const store::SweepSpec spec = store::parse_sweep_json(sweep.spec_json, "sweep");
  const std::string program = options.program.empty() ? self_program() : options.program;
  description["uid"] = sweep.uid;
  description["name"] = sweep.name;
  description["spec"] = nlohmann::ordered_json::parse(sweep.spec_json);
  description["program"] = program;
  description["submitted_from"] = store::this_process().host;
  nlohmann::ordered_json members = nlohmann::ordered_json::array();
  for (const store::SweepMemberRecord& m : sweep.members) {
    const store::SweepMember member = store::parse_sweep_member(m.settings_json);
    members.push_back({{"member", m.member}, {"train_args", member.train_args()}});
  }
  description["members"] = members;
  description["device"] = spec.device;
  store::write_file_atomically(folder / kSweepFile,
                               [&](std::ostream& out) { out << description.dump(2) << '\n'; });

  std::vector<std::string> argv = {
      "sbatch",
      "--parsable",
      "--array=0-" + std::to_string(sweep.members.size() - 1),
      "--job-name=mixlab-sweep-" + sweep.uid.substr(0, 8),
      "--output=" + (folder / "slurm-%A_%a.out").string(),
  };
  if (!options.partition.empty()) argv.push_back("--partition=" + options.partition);
  if (!options.gres.empty()) argv.push_back("--gres=" + options.gres);
  if (!options.time.empty()) argv.push_back("--time=" + options.time);
  if (!options.account.empty()) argv.push_back("--account=" + options.account);
  for (const std::string& o : options.sbatch_options) argv.push_back(o);
  argv.push_back("--wrap=exec " + shell_quote(program) + " sweep task " +
                 shell_quote(folder.string()));
  const CommandResult r = run_command(argv, kSbatchTimeoutS);
  if (r.status == 127 || r.status == -1) {
    throw Error("cannot run sbatch: is Slurm's client (slurm-client) installed here?");
  }
  if (r.timed_out) {
    throw Error("sbatch did not answer within " + std::to_string(int(kSbatchTimeoutS)) + " s");
  }
  if (r.status != 0) {
    throw Error("sbatch refused the job array: " + trim(r.err.empty() ? r.out : r.err));
  }
  std::string job_id = trim(r.out);
  job_id = job_id.substr(0, job_id.find(';'));  // "123;cluster"
  if (job_id.empty()) throw Error("sbatch printed no job id");
  return job_id;
}

}  // namespace

std::string submit_slurm(store::RunStore& store, std::int64_t sweep_id, const SlurmOptions& options,
                         const Reporter& reporter) {
  store::set_slurm_options(store, sweep_id, slurm_options_json(options));
  const store::SweepRecord sweep = *store::find_sweep(store, sweep_id);
  std::error_code ec;
  const fs::path folder = sweep_folder(fs::absolute(options.shared_dir, ec), sweep.uid);
  nlohmann::ordered_json description;
  std::string job_id;
  try {
    job_id = submit_job_array(sweep, options, folder, description);
  } catch (const std::exception& e) {
    // Nothing runs: the sweep failed, saying why; sweep resume submits it again.
    store::set_sweep_state(store, sweep_id, store::SweepState::failed,
                           std::string("not submitted: ") + e.what());
    throw;
  }
  store::set_slurm_job(store, sweep_id, job_id, folder.string());
  description["job_id"] = job_id;
  try {
    store::write_file_atomically(folder / kSweepFile,
                                 [&](std::ostream& out) { out << description.dump(2) << '\n'; });
  } catch (const std::exception& e) {
    reporter.line(std::string("sweep ") + std::to_string(sweep_id) +
                  ": the folder does not name the job (" + e.what() +
                  "); sweep status from another machine cannot follow it");
  }
  reporter.line("sweep " + std::to_string(sweep_id) + ": submitted Slurm job array " + job_id +
                " (" + std::to_string(sweep.members.size()) + " tasks); folder " +
                folder.string());
  return job_id;
}

store::SweepState follow_slurm(store::RunStore& store, std::int64_t sweep_id, double poll_s,
                               bool once, const Reporter& reporter) {
  using store::MemberState;
  std::optional<StopOnSignal> stop_on_signal;
  if (!once) stop_on_signal.emplace();
  int squeue_failures = 0;
  for (;;) {
    const store::SweepRecord sweep = *store::find_sweep(store, sweep_id);
    if (sweep.slurm_job_id.empty()) {
      // Never submitted: there is nothing to follow (sweep resume submits it).
      throw Error("sweep " + std::to_string(sweep_id) + " has no Slurm job to follow" +
                  (sweep.message.empty() ? "" : " (" + sweep.message + ")"));
    }
    const fs::path folder = sweep.shared_dir;
    std::vector<std::string> axes;
    try {
      axes = store::parse_sweep_json(sweep.spec_json, "sweep").axes();
    } catch (const ConfigError&) {
    }
    const int total = static_cast<int>(sweep.members.size());
    bool pending = false;
    std::string squeue_problem;
    const auto active = active_tasks(sweep.slurm_job_id, &squeue_problem);
    if (active) {
      squeue_failures = 0;
    } else if (++squeue_failures >= kSqueueTries) {
      const std::string why = "squeue failed " + std::to_string(kSqueueTries) +
                              " times in a row for job " + sweep.slurm_job_id + ": " +
                              squeue_problem;
      store::set_sweep_state(store, sweep_id, store::SweepState::stopped,
                             "not followed: " + why + " - mixlab-cli sweep resume " +
                                 std::to_string(sweep_id) + " follows it again");
      throw Error(why);
    }
    const std::string cancelled = cancelled_by(folder);
    for (const store::SweepMemberRecord& m : sweep.members) {
      if (m.state == MemberState::done || m.state == MemberState::failed) continue;
      if (!active) {
        pending = true;
        continue;
      }
      if (const auto it = active->find(m.member); it != active->end()) {
        pending = true;
        if (it->second == "RUNNING" && m.state != MemberState::running)
          store::set_member(store, sweep_id, m.member, MemberState::running, std::nullopt, "");
        continue;
      }
      // The task has ended: its file says how, Slurm says why when it did not finish.
      const fs::path file = member_file(folder, m.member);
      std::optional<store::RunRecord> run;
      std::string reason;
      const auto why = [&] {
        if (reason.empty()) reason = slurm_reason(sweep.slurm_job_id, m.member);
        if (reason.empty() && !cancelled.empty()) reason = cancelled;
        return reason.empty() ? std::string("Slurm has no record of it (cancelled before it "
                                            "started, or forgotten since)")
                              : reason;
      };
      std::error_code ec;
      if (fs::exists(file, ec)) {
        try {
          run = import_member(store, file, "the Slurm task ended before the run did");
        } catch (const store::StoreError& e) {
          store::set_member(store, sweep_id, m.member, MemberState::failed, std::nullopt,
                            std::string("cannot import ") + file.string() + ": " + e.what());
          continue;
        }
      }
      store::MemberOutcome outcome = store::member_outcome(run, {});
      // Slurm will not run a task again: a stopped run's member has failed too.
      if (outcome.state == MemberState::planned) outcome.state = MemberState::failed;
      const MemberState state = outcome.state;
      if (state == MemberState::failed) {
        outcome.message = "Slurm task " + sweep.slurm_job_id + "_" + std::to_string(m.member) +
                          ": " + why() +
                          (run ? " - run: " + std::string(store::to_string(run->status)) +
                                     (run->message.empty() ? "" : ": " + run->message)
                               : " - no run was recorded");
        if (run && run->status != store::RecordStatus::failed) {
          // The history says failed too, with Slurm's reason.
          store.connection()
              .prepare("UPDATE runs SET status = 'failed', message = ? WHERE id = ?")
              .bind(1, outcome.message)
              .bind(2, run->id)
              .run();
        }
      }
      store::end_member(store, sweep_id, m.member, outcome);
      if (run) store.add_tags(run->id, {"sweep-" + std::to_string(sweep_id)});
      const store::SweepRecord now = *store::find_sweep(store, sweep_id);
      const int ended = now.count(MemberState::done) + now.count(MemberState::failed);
      const store::SweepMember member = store::parse_sweep_member(m.settings_json);
      reporter.line("[" + std::to_string(ended) + "/" + std::to_string(total) + "] " +
                    member.label(axes) + ": " +
                    (state == MemberState::done
                         ? std::string(store::to_string(run->status)) + ", median " +
                               format_fixed(run->summary.median_step_ms, 3) + " ms/step (run " +
                               std::to_string(run->id) + ")"
                         : "failed: " + outcome.message));
    }
    if (!pending) {
      const store::SweepState state =
          cancelled.empty() ? store::SweepState::finished : store::SweepState::cancelled;
      store::set_sweep_state(store, sweep_id, state, cancelled);
      return state;
    }
    if (once) return sweep.state;
    if (g_stop.load()) {
      store::set_sweep_state(store, sweep_id, store::SweepState::stopped,
                             "no longer followed; its Slurm tasks go on - mixlab-cli sweep resume " +
                                 std::to_string(sweep_id) + " follows them again");
      return store::SweepState::stopped;
    }
    // Sleep in small steps so that Ctrl+C is prompt; squeue failing is tried again sooner.
    const double wait_s = active ? poll_s : std::min(poll_s, 5.0);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
    while (!g_stop.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int run_task(const fs::path& folder, std::optional<int> member) {
  const nlohmann::ordered_json description = read_json(folder / kSweepFile);
  if (!member) {
    const char* task = std::getenv("SLURM_ARRAY_TASK_ID");
    if (task == nullptr || *task == '\0')
      throw UsageError("no --member N and no $SLURM_ARRAY_TASK_ID: which member?");
    member = static_cast<int>(integer_option("SLURM_ARRAY_TASK_ID", task, 0, 1000000));
  }
  const auto& members = description.at("members");
  for (const auto& m : members) {
    if (m.at("member").get<int>() != *member) continue;
    std::vector<std::string> args = {"train"};
    for (const auto& a : m.at("train_args")) args.push_back(a.get<std::string>());
    args.insert(args.end(), {"--device", description.value("device", std::string("auto")), "--db",
                             member_file(folder, *member).string(), "--quiet"});
    return run_cli(args);
  }
  throw UsageError("the sweep in " + folder.string() + " has no member " +
                   std::to_string(*member));
}

void cancel_slurm(const fs::path& folder, const std::string& job_id) {
  const std::string by =
      "cancelled with mixlab-cli sweep cancel on " +
      store::this_process().host + " at " +
      store::format_utc(store::now_utc_ms());
  store::write_file_atomically(folder / kCancelledMark,
                               [&](std::ostream& out) { out << by << '\n'; });
  const CommandResult r = run_command({"scancel", job_id});
  if (r.status != 0) {
    throw Error("scancel " + job_id + " failed: " + trim(r.err.empty() ? r.out : r.err));
  }
}

nlohmann::ordered_json folder_status(const fs::path& folder) {
  const nlohmann::ordered_json description = read_json(folder / kSweepFile);
  nlohmann::ordered_json out;
  out["uid"] = description.value("uid", "");
  out["name"] = description.value("name", "");
  out["folder"] = folder.string();
  const std::string job_id = description.value("job_id", "");
  out["job_id"] = job_id;
  const auto active = job_id.empty() ? std::nullopt : active_tasks(job_id);
  const std::string cancelled = cancelled_by(folder);
  if (!cancelled.empty()) out["cancelled"] = cancelled;
  nlohmann::ordered_json members = nlohmann::ordered_json::array();
  for (const auto& m : description.at("members")) {
    const int member = m.at("member").get<int>();
    nlohmann::ordered_json row;
    row["member"] = member;
    std::string args;
    for (const auto& a : m.at("train_args")) {
      if (!args.empty()) args += ' ';
      args += a.get<std::string>();
    }
    row["train_args"] = args;
    std::string slurm = active ? "ended" : "unknown (squeue did not answer)";
    if (active) {
      if (const auto it = active->find(member); it != active->end()) slurm = it->second;
    }
    row["slurm"] = slurm;
    std::string run_status = "none";
    const fs::path file = member_file(folder, member);
    std::error_code ec;
    if (fs::exists(file, ec)) {
      try {
        store::StoreOptions options;
        options.read_only = true;
        options.mark_interrupted = false;
        store::RunStore s = store::RunStore::open(file, options);
        const auto runs = s.list_runs();
        if (!runs.empty()) {
          run_status = std::string(store::to_string(runs.front().status));
          row["median_step_ms"] = std::isfinite(runs.front().summary.median_step_ms)
                                      ? nlohmann::ordered_json(runs.front().summary.median_step_ms)
                                      : nlohmann::ordered_json();
        }
      } catch (const store::StoreError& e) {
        run_status = std::string("unreadable: ") + e.what();
      }
    }
    row["run"] = run_status;
    members.push_back(row);
  }
  out["members"] = members;
  return out;
}

}  // namespace mixlab::cli::sweep
