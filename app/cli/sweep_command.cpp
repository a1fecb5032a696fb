// mixlab-cli sweep: a grid of runs on this machine (the default) or as a Slurm job array, every
// run recorded in the same history. Subcommands: list, show, resume, status, cancel, and task
// (what a Slurm task runs).
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <optional>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "app/cli/runs_support.h"
#include "app/cli/sweep_support.h"
#include "app/store/sweep_results.h"
#include "engine/train/run_fields.h"

namespace mixlab::cli {

namespace {

using namespace mixlab::cli::sweep;
using Json = nlohmann::ordered_json;

constexpr const char* kFooter =
    "A sweep runs `mixlab-cli train` for every point of a grid: give several values, comma-\n"
    "separated, to --model or to any train option (--precision float32,mixed_float16\n"
    "--batch-size 32,64,128; booleans as on,off), and --repeats N to run each point N times\n"
    "with seeds seed, seed+1, ... A sweep file (JSON) holds the same:\n"
    "  {\"models\": [\"cifar10-mlp\"], \"repeats\": 3,\n"
    "   \"settings\": {\"precision\": [\"float32\", \"mixed_float16\"], \"batch-size\": [32, 64]}}\n"
    "The sweep and its planned runs are kept in the run database: a stopped or killed sweep\n"
    "continues with `mixlab-cli sweep resume ID` and never redoes a finished run.\n"
    "--executor slurm submits one Slurm job array (sbatch) whose tasks write their own run\n"
    "databases in --shared-dir (a folder every node sees; $MIXLAB_SWEEP_DIR by default), follows\n"
    "them with squeue and imports each finished run into the history. `sweep status` and\n"
    "`sweep cancel` take the sweep's id, its uid, or its folder, from any machine that sees it.\n"
    "Subcommands: sweep list | show ID | resume ID | status ID | cancel ID [--db PATH] [--json]";

bool is_subcommand(const std::string& word) {
  return word == "list" || word == "show" || word == "resume" || word == "status" ||
         word == "cancel" || word == "task";
}

std::string number_text(double v, int decimals) {
  return std::isfinite(v) ? format_fixed(v, decimals) : std::string("-");
}

// --- output -----------------------------------------------------------------------------------

Json sweep_json(store::RunStore& store, const store::SweepRecord& s) {
  Json out;
  out["id"] = s.id;
  out["uid"] = s.uid;
  out["name"] = s.name;
  out["executor"] = s.executor;
  out["state"] = std::string(store::to_string(s.state));
  out["message"] = s.message;
  out["created"] = store::format_utc(s.created_at_ms);
  if (s.executor == "slurm") {
    out["slurm_job_id"] = s.slurm_job_id;
    out["folder"] = s.shared_dir;
  }
  out["members_total"] = s.members.size();
  for (const auto state : {store::MemberState::planned, store::MemberState::running,
                           store::MemberState::done, store::MemberState::failed})
    out["members_" + std::string(store::to_string(state))] = s.count(state);
  const store::SweepResults results = store::sweep_results(store, s);
  Json points = Json::array();
  for (const store::SweepPoint& p : results.points) {
    Json point;
    point["model"] = p.model;
    Json settings = Json::object();
    for (const auto& [flag, value] : p.settings) settings[flag] = value;
    point["settings"] = settings;
    point["repeats"] = p.planned;
    point["measured"] = p.measured;
    point["failed"] = p.failed;
    point["median_step_ms"] = runs::number_or_null(p.median_step_ms);
    point["min_step_ms"] = runs::number_or_null(p.min_step_ms);
    point["max_step_ms"] = runs::number_or_null(p.max_step_ms);
    point["samples_per_s"] = runs::number_or_null(p.median_samples_per_s);
    point["speedup_over_float32"] = runs::number_or_null(p.speedup_over_float32);
    point["run_ids"] = p.run_ids;
    points.push_back(point);
  }
  out["points"] = points;
  Json members = Json::array();
  for (const store::SweepMemberRecord& m : s.members) {
    Json member = Json::parse(m.settings_json);
    member["state"] = std::string(store::to_string(m.state));
    member["run_id"] = m.run_id ? Json(*m.run_id) : Json();
    if (!m.message.empty()) member["message"] = m.message;
    members.push_back(member);
  }
  out["members"] = members;
  return out;
}

void print_sweep(store::RunStore& store, const store::SweepRecord& s) {
  std::printf("sweep %lld: %s\n", static_cast<long long>(s.id), s.name.c_str());
  std::printf("state:    %s%s%s\n", std::string(store::to_string(s.state)).c_str(),
              s.message.empty() ? "" : " - ", s.message.c_str());
  std::printf("executor: %s", s.executor.c_str());
  if (s.executor == "slurm" && s.slurm_job_id.empty()) {
    std::printf(" (not submitted)");
  } else if (s.executor == "slurm") {
    std::printf(" (job %s, folder %s)", s.slurm_job_id.c_str(), s.shared_dir.c_str());
  }
  std::printf("\nmembers:  %zu: %d done, %d failed, %d running, %d planned\n", s.members.size(),
              s.count(store::MemberState::done), s.count(store::MemberState::failed),
              s.count(store::MemberState::running), s.count(store::MemberState::planned));
  const store::SweepResults results = store::sweep_results(store, s);
  runs::Table table({{"point"},
                     {"runs", true},
                     {"median ms", true},
                     {"min-max ms", true},
                     {"samples/s", true},
                     {"vs float32", true}});
  for (const store::SweepPoint& p : results.points) {
    table.add({p.label(results.axes),
               std::to_string(p.measured) + "/" + std::to_string(p.planned) +
                   (p.failed > 0 ? " (" + std::to_string(p.failed) + " failed)" : ""),
               number_text(p.median_step_ms, 3),
               std::isfinite(p.min_step_ms)
                   ? format_fixed(p.min_step_ms, 3) + "-" + format_fixed(p.max_step_ms, 3)
                   : "-",
               std::isfinite(p.median_samples_per_s)
                   ? group_digits(std::llround(p.median_samples_per_s))
                   : "-",
               std::isfinite(p.speedup_over_float32)
                   ? format_fixed(p.speedup_over_float32, 2) + "x"
                   : "-"});
  }
  std::printf("\n");
  table.print(std::cout, "  ");
  bool any_failed = false;
  for (const store::SweepMemberRecord& m : s.members) {
    if (m.state != store::MemberState::failed) continue;
    if (!any_failed) std::printf("\nfailed members:\n");
    any_failed = true;
    std::printf("  %d: %s\n", m.member, runs::one_line(m.message, 300).c_str());
  }
  std::cout.flush();
}

// --- resolving an ID: the store's number, a uid, or a sweep folder -----------------------------

struct Located {
  std::optional<store::RunStore> store;
  std::optional<store::SweepRecord> sweep;
  fs::path folder;  // a Slurm sweep's folder, when known
};

fs::path shared_dir_default(const std::string& given) {
  if (!given.empty()) return given;
  const char* env = std::getenv("MIXLAB_SWEEP_DIR");
  return env != nullptr && *env != '\0' ? fs::path(env) : fs::path();
}

Located locate(const std::string& id, const std::string& db, const std::string& shared_dir,
               bool for_writing) {
  Located at;
  std::error_code ec;
  if (fs::is_directory(id, ec) && fs::exists(fs::path(id) / "sweep.json", ec)) {
    at.folder = fs::absolute(id, ec);
  }
  const fs::path path = db.empty() ? store::default_store_path() : fs::path(db);
  if (fs::exists(path, ec)) {
    at.store.emplace(for_writing ? store::RunStore::open(path) : runs::open_for_reading(path));
    std::string key = id;
    if (!at.folder.empty()) {
      // A folder: its sweep, when this store holds it.
      const std::string name = at.folder.filename().string();
      key = name.rfind("sweep-", 0) == 0 ? name.substr(6) : name;
    }
    try {
      at.sweep = store::sweep(*at.store, key);
      if (at.folder.empty() && !at.sweep->shared_dir.empty()) at.folder = at.sweep->shared_dir;
    } catch (const store::StoreError& e) {
      // An id this store does not hold is bad input (exit 2), as a run id is.
      if (at.folder.empty() && shared_dir.empty()) throw RunNotFoundError(e.what());
    }
  }
  if (!at.sweep && at.folder.empty()) {
    const fs::path shared = shared_dir_default(shared_dir);
    if (!shared.empty()) {
      const fs::path candidate = shared / ("sweep-" + id.substr(0, 12));
      if (fs::exists(candidate / "sweep.json", ec)) at.folder = candidate;
    }
  }
  if (!at.sweep && at.folder.empty()) {
    throw RunNotFoundError("no sweep " + id + " in " + path.string() +
                           " (give a sweep's folder, or --shared-dir)");
  }
  return at;
}

// --- subcommands ------------------------------------------------------------------------------

struct Args {
  std::vector<std::string> positionals;
  std::string db, shared_dir;
  bool json = false, quiet = false, no_follow = false;
  std::string poll = "5";
  std::string devices;
  std::string threads;
  std::optional<int> member;
};

double poll_seconds(const Args& args) {
  return static_cast<double>(integer_option("--poll", args.poll, 1, 3600));
}

// The options a sweep passes on (to its squeue loop, to each member's train), checked before
// anything runs, is submitted or is recorded.
void check_options(const Args& args) {
  poll_seconds(args);
  if (!args.threads.empty()) check_field_option("--threads", "threads", args.threads);
  if (!args.devices.empty()) {
    const std::vector<std::string> devices = store::split_list(args.devices);
    if (devices.empty()) throw UsageError("option '--devices' names no device");
    for (const std::string& d : devices) check_device_option("--devices", d);
  }
}

const std::string& one_id(const Args& args, const char* usage) {
  if (args.positionals.size() != 1) throw UsageError(std::string("usage: ") + usage);
  return args.positionals[0];
}

int list_sweeps(const Args& args) {
  const fs::path path = args.db.empty() ? store::default_store_path() : fs::path(args.db);
  store::RunStore store = runs::open_for_reading(path);
  const auto sweeps = store::list_sweeps(store);
  if (args.json) {
    Json out = Json::array();
    for (const auto& s : sweeps) out.push_back(sweep_json(store, s));
    std::cout << out.dump(2) << std::endl;
    return kExitOk;
  }
  if (sweeps.empty()) {
    std::printf("no sweeps in %s\n", store.path().c_str());
    return kExitOk;
  }
  runs::Table table({{"id", true}, {"created"}, {"name"}, {"executor"}, {"state"}, {"done", true}});
  for (const auto& s : sweeps) {
    table.add({std::to_string(s.id), runs::short_time(s.created_at_ms), s.name, s.executor,
               std::string(store::to_string(s.state)),
               std::to_string(s.count(store::MemberState::done)) + "/" +
                   std::to_string(s.members.size()) +
                   (s.count(store::MemberState::failed) > 0
                        ? " (" + std::to_string(s.count(store::MemberState::failed)) + " failed)"
                        : "")});
  }
  table.print(std::cout);
  return kExitOk;
}

int show_sweep(const Args& args) {
  const std::string& id = one_id(args, "mixlab-cli sweep show ID [--json]");
  Located at = locate(id, args.db, args.shared_dir, false);
  if (!at.sweep) throw RunNotFoundError("no sweep " + id + " in the run database");
  if (args.json) std::cout << sweep_json(*at.store, *at.sweep).dump(2) << std::endl;
  else print_sweep(*at.store, *at.sweep);
  return kExitOk;
}

int exit_code_of(store::SweepState state, const store::SweepRecord& s) {
  if (state == store::SweepState::stopped) return kExitStopped;
  if (state == store::SweepState::cancelled || state == store::SweepState::failed)
    return kExitRunFailed;
  return s.count(store::MemberState::failed) > 0 ? kExitRunFailed : kExitOk;
}

int carry_on(store::RunStore& store, std::int64_t sweep_id, const Args& args,
             const std::vector<std::string>& extra_train_args) {
  const Reporter reporter{args.quiet};
  store::SweepRecord s = *store::find_sweep(store, sweep_id);
  store::SweepState state;
  if (s.executor == "slurm") {
    store::claim_sweep(store, sweep_id);
    if (args.no_follow) {
      reporter.line("not following; mixlab-cli sweep status " + std::to_string(sweep_id) +
                    " shows its progress and imports what has finished");
      state = follow_slurm(store, sweep_id, poll_seconds(args), true, reporter);
    } else {
      state = follow_slurm(store, sweep_id, poll_seconds(args), false, reporter);
    }
  } else {
    LocalOptions local;
    local.db = store.path();
    if (!args.devices.empty()) local.devices = store::split_list(args.devices);
    else {
      const Json spec = Json::parse(s.spec_json);
      local.devices = {spec.value("device", std::string("auto"))};
    }
    local.extra_train_args = extra_train_args;
    state = run_local(store, sweep_id, local, reporter);
  }
  s = *store::find_sweep(store, sweep_id);
  if (args.json) {
    std::cout << sweep_json(store, s).dump(2) << std::endl;
  } else if (state == store::SweepState::running) {
    std::printf("sweep %lld: running as Slurm job %s\n", static_cast<long long>(s.id),
                s.slurm_job_id.c_str());
  } else {
    std::printf("\n");
    print_sweep(store, s);
  }
  return exit_code_of(state, s);
}

// A Slurm sweep whose job array was never submitted (its folder could not be made, sbatch
// refused it or could not be run, the submitter was killed first) is submitted now with the
// options it was given, resume's --shared-dir or $MIXLAB_SWEEP_DIR replacing its shared folder;
// failing again, it is `failed` again, saying why (submit_slurm).
void submit_again(store::RunStore& store, const store::SweepRecord& s, const Args& args) {
  SlurmOptions options = parse_slurm_options(s.slurm_options);
  if (!args.shared_dir.empty()) options.shared_dir = args.shared_dir;
  if (options.shared_dir.empty()) options.shared_dir = shared_dir_default("");
  if (options.shared_dir.empty()) {
    throw UsageError("sweep " + std::to_string(s.id) +
                     " was never submitted to Slurm and has no shared folder: give --shared-dir "
                     "DIR (a folder every node sees)");
  }
  store::claim_sweep(store, s.id);  // throws while another live process runs it
  Reporter{args.quiet}.line("sweep " + std::to_string(s.id) + ": not submitted before" +
                            (s.message.empty() ? "" : " (" + s.message + ")") +
                            "; submitting it now");
  submit_slurm(store, s.id, options, Reporter{args.quiet});
}

int resume_sweep(const Args& args) {
  const std::string& id = one_id(args, "mixlab-cli sweep resume ID");
  Located at = locate(id, args.db, args.shared_dir, true);
  if (!at.sweep) throw RunNotFoundError("no sweep " + id + " in the run database");
  if (at.sweep->state == store::SweepState::cancelled)
    throw UsageError("sweep " + id + " was cancelled: " + at.sweep->message);
  if (at.sweep->state == store::SweepState::finished) {
    std::printf("sweep %lld has finished; nothing to resume\n",
                static_cast<long long>(at.sweep->id));
    return kExitOk;
  }
  if (at.sweep->executor == "slurm" && at.sweep->slurm_job_id.empty()) {
    submit_again(*at.store, *at.sweep, args);
  }
  std::vector<std::string> extra;
  if (!args.threads.empty()) extra = {"--threads", args.threads};
  return carry_on(*at.store, at.sweep->id, args, extra);
}

int status_sweep(const Args& args) {
  const std::string& id = one_id(args, "mixlab-cli sweep status ID [--json]");
  Located at = locate(id, args.db, args.shared_dir, false);
  if (at.sweep && at.store && at.sweep->executor == "slurm" && !at.sweep->slurm_job_id.empty() &&
      !at.store->connection().read_only() && at.sweep->state != store::SweepState::finished &&
      !at.sweep->owner_is_alive()) {
    // Nobody follows it: bring in what has ended since.
    follow_slurm(*at.store, at.sweep->id, 0, true, Reporter{true});
    at.sweep = store::find_sweep(*at.store, at.sweep->id);
  }
  if (at.sweep) {
    if (args.json) std::cout << sweep_json(*at.store, *at.sweep).dump(2) << std::endl;
    else print_sweep(*at.store, *at.sweep);
    return kExitOk;
  }
  const Json status = folder_status(at.folder);
  if (args.json) {
    std::cout << status.dump(2) << std::endl;
    return kExitOk;
  }
  std::printf("sweep %s (%s), Slurm job %s, folder %s\n",
              status.value("uid", "").substr(0, 12).c_str(), status.value("name", "").c_str(),
              status.value("job_id", "").c_str(), at.folder.c_str());
  if (status.contains("cancelled"))
    std::printf("%s\n", status["cancelled"].get<std::string>().c_str());
  runs::Table table({{"member", true}, {"slurm"}, {"run"}, {"median ms", true}, {"train options"}});
  for (const auto& m : status["members"]) {
    const double ms = m.contains("median_step_ms") && m["median_step_ms"].is_number()
                          ? m["median_step_ms"].get<double>()
                          : NAN;
    table.add({std::to_string(m["member"].get<int>()), m["slurm"].get<std::string>(),
               m["run"].get<std::string>(), number_text(ms, 3),
               m["train_args"].get<std::string>()});
  }
  table.print(std::cout, "  ");
  return kExitOk;
}

int cancel_sweep(const Args& args) {
  const std::string& id = one_id(args, "mixlab-cli sweep cancel ID");
  Located at = locate(id, args.db, args.shared_dir, true);
  const bool slurm = (at.sweep && at.sweep->executor == "slurm") || (!at.sweep && !at.folder.empty());
  if (slurm) {
    std::string job_id = at.sweep ? at.sweep->slurm_job_id : std::string();
    if (job_id.empty() && at.sweep) {
      // Never submitted: nothing runs on Slurm, the sweep is cancelled here.
      store::set_sweep_state(*at.store, at.sweep->id, store::SweepState::cancelled,
                             "cancelled with mixlab-cli sweep cancel (never submitted to Slurm)");
      std::printf("cancelled sweep %lld (it had no Slurm job)\n",
                  static_cast<long long>(at.sweep->id));
      return kExitOk;
    }
    if (job_id.empty()) job_id = folder_status(at.folder).value("job_id", "");
    if (job_id.empty()) throw Error("the sweep " + id + " has no Slurm job to cancel");
    cancel_slurm(at.folder, job_id);
    std::printf("cancelled Slurm job %s", job_id.c_str());
    if (at.sweep && !at.sweep->owner_is_alive()) {
      // Nobody follows it here: record what Slurm did now that its tasks have gone.
      for (int i = 0; i < 30; ++i) {
        if (follow_slurm(*at.store, at.sweep->id, 0, true, Reporter{true}) !=
            store::SweepState::running)
          break;
        ::sleep(1);
      }
      at.sweep = store::find_sweep(*at.store, at.sweep->id);
      std::printf("; sweep %lld is %s", static_cast<long long>(at.sweep->id),
                  std::string(store::to_string(at.sweep->state)).c_str());
    }
    std::printf("\n");
    return kExitOk;
  }
  // Local: stop the process running it, if there is one, then mark it cancelled.
  if (at.sweep->state == store::SweepState::finished) {
    std::printf("sweep %lld has finished; nothing to cancel\n",
                static_cast<long long>(at.sweep->id));
    return kExitOk;
  }
  if (at.sweep->owner_is_alive() && at.sweep->state == store::SweepState::running) {
    ::kill(static_cast<pid_t>(at.sweep->owner.pid), SIGINT);
    for (int i = 0; i < 600; ++i) {
      const auto now = store::find_sweep(*at.store, at.sweep->id);
      if (now->state != store::SweepState::running) break;
      ::usleep(100000);
    }
  }
  store::set_sweep_state(*at.store, at.sweep->id, store::SweepState::cancelled,
                         "cancelled with mixlab-cli sweep cancel");
  std::printf("cancelled sweep %lld\n", static_cast<long long>(at.sweep->id));
  return kExitOk;
}

}  // namespace

int run_sweep(const std::vector<std::string>& argv) {
  if (!argv.empty() && is_subcommand(argv[0])) {
    const std::string sub = argv[0];
    CommandLine command("mixlab-cli sweep " + sub, "Sweeps: " + sub + ".");
    CLI::App& app = command.app();
    Args args;
    command.add_database_option(app, args.db, "the run database");
    if (sub != "task") app.add_flag("--json", args.json, "JSON instead of a table");
    if (sub == "resume") {
      app.add_flag("--quiet", args.quiet, "no progress lines");
      app.add_flag("--no-follow", args.no_follow, "Slurm: do not wait for the tasks");
      command.add_option(app, "--poll", args.poll, "Slurm: seconds between squeue calls");
      command.add_option(app, "--devices", args.devices, "local: devices to run members on");
      command.add_option(app, "--threads", args.threads, "local: CPU threads of each member");
    }
    if (sub == "status" || sub == "cancel" || sub == "show" || sub == "resume")
      command.add_path_option(app, "--shared-dir", args.shared_dir,
                              "the folder of Slurm sweeps ($MIXLAB_SWEEP_DIR)");
    std::string member;
    if (sub == "task") command.add_option(app, "--member", member, "the member to run");
    std::vector<std::string> rest(argv.begin() + 1, argv.end());
    app.add_option("arguments", args.positionals, "ID");
    if (!command.parse(rest, &args.positionals)) return kExitOk;
    check_options(args);
    if (sub == "list") return list_sweeps(args);
    if (sub == "show") return show_sweep(args);
    if (sub == "resume") return resume_sweep(args);
    if (sub == "status") return status_sweep(args);
    if (sub == "cancel") return cancel_sweep(args);
    const std::string& folder = one_id(args, "mixlab-cli sweep task FOLDER [--member N]");
    std::optional<int> m;
    if (!member.empty()) m = static_cast<int>(integer_option("--member", member, 0, 1000000));
    return run_task(folder, m);
  }

  CommandLine command("mixlab-cli sweep",
                      "Runs a grid of training runs, here or on Slurm, and records every run.");
  CLI::App& app = command.app();
  Args args;
  std::string file, models, repeats = "1", name, executor = "local", device;
  SlurmOptions slurm;
  std::string partition, gres, time, account, program;
  std::vector<std::string> sbatch_options;
  command.add_path_option(app, "--file", file, "a sweep file (JSON)");
  command.add_option(app, "--model", models, "models, comma-separated (built-in names or files)")
      ->type_name("M[,M...]");
  // Every run setting of train, each taking a comma-separated list of values.
  std::deque<std::pair<const RunField*, std::string>> values;
  for (const RunField& f : run_fields()) {
    values.emplace_back(&f, std::string());
    command.add_option(app, "--" + std::string(f.cli_flag), values.back().second,
                       std::string(f.label) + (f.type == FieldType::boolean ? " (on,off)" : ""))
        ->type_name("V[,V...]");
  }
  command.add_option(app, "--repeats", repeats, "runs of each grid point (seeds seed, seed+1, ...)");
  command.add_option(app, "--name", name, "the sweep's name");
  command.add_option(app, "--device", device, "cpu, cuda, cuda:N or auto (each member's)");
  command.add_option(app, "--devices", args.devices,
                     "local: run one member at a time on each of these devices (cuda:0,cuda:1)");
  command.add_option(app, "--executor", executor, "local (the default) or slurm");
  command.add_database_option(app, args.db, "the run database");
  app.add_flag("--json", args.json, "print the sweep as JSON at the end");
  app.add_flag("--quiet", args.quiet, "no progress lines");
  command.add_path_option(app, "--shared-dir", args.shared_dir,
                          "slurm: a folder every node sees ($MIXLAB_SWEEP_DIR)");
  command.add_option(app, "--partition", partition, "slurm: sbatch --partition");
  command.add_option(app, "--gres", gres, "slurm: sbatch --gres, e.g. gpu:1");
  command.add_option(app, "--time", time, "slurm: sbatch --time, e.g. 00:30:00");
  command.add_option(app, "--account", account, "slurm: sbatch --account");
  command
      .add_list_option(app, "--sbatch-option", sbatch_options,
                       "slurm: one more sbatch option (repeatable)")
      ->type_name("OPTION");
  command.add_path_option(app, "--program", program,
                          "slurm: mixlab-cli as the nodes run it (default: this program)");
  command.add_option(app, "--poll", args.poll, "slurm: seconds between squeue calls (5)");
  app.add_flag("--no-follow", args.no_follow, "slurm: submit and return");
  app.footer(kFooter);
  if (!command.parse(argv)) return kExitOk;
  check_options(args);
  if (!device.empty()) check_device_option("--device", device);

  store::SweepSpec spec;
  // The file is read once (a FIFO cannot be read twice); its grid and its executor come from
  // the same text.
  const std::string file_text = file.empty() ? std::string() : store::read_sweep_text(file);
  if (!file.empty()) spec = store::parse_sweep_json(file_text, file);
  if (!models.empty()) spec.models = store::split_list(models);
  if (spec.models.empty()) spec.models = {"fashion-mlp"};
  for (const auto& [field, text] : values) {
    if (text.empty()) continue;
    const std::string flag(field->cli_flag);
    store::SweepSetting setting{flag, store::split_list(text)};
    auto it = std::find_if(spec.settings.begin(), spec.settings.end(),
                           [&](const store::SweepSetting& s) {
                             return s.flag == flag || s.flag == field->name;
                           });
    if (it != spec.settings.end()) *it = std::move(setting);  // the command line wins
    else spec.settings.push_back(std::move(setting));
  }
  if (app.get_option("--repeats")->count() > 0 || file.empty())
    spec.repeats = static_cast<int>(integer_option("--repeats", repeats, 1, 1000));
  if (!name.empty()) spec.name = name;
  if (!device.empty()) spec.device = device;
  if (!file.empty() && app.get_option("--executor")->count() == 0) {
    // The file may choose the executor and its Slurm options.
    const Json j = Json::parse(file_text, nullptr, false);
    if (j.is_object() && j.contains("executor") && j["executor"].is_string())
      executor = j["executor"].get<std::string>();
    if (j.is_object() && j.contains("slurm") && j["slurm"].is_object()) {
      const Json& s = j["slurm"];
      if (partition.empty()) partition = s.value("partition", "");
      if (gres.empty()) gres = s.value("gres", "");
      if (time.empty()) time = s.value("time", "");
      if (account.empty()) account = s.value("account", "");
      if (args.shared_dir.empty()) args.shared_dir = s.value("shared_dir", "");
    }
  }
  if (executor != "local" && executor != "slurm")
    throw UsageError("--executor must be local or slurm, got " + quote(executor));
  if (executor == "local" && (!partition.empty() || !gres.empty() || !time.empty() ||
                              !account.empty() || !sbatch_options.empty()))
    throw UsageError("--partition, --gres, --time, --account and --sbatch-option need --executor slurm");
  if (executor == "slurm" && !args.devices.empty())
    throw UsageError("--devices is for the local executor; on Slurm use --gres");

  const std::vector<store::SweepMember> members = store::plan_sweep(spec);
  // Every model is checked before anything runs: a typo fails now, not at member 37.
  for (const std::string& m : spec.models) {
    try {
      load_model_argument(m);
    } catch (const SpecError& e) {
      throw SpecError("sweep model " + quote(m) + ": " + e.what());
    }
  }
  store::SweepRecord record = store::planned_sweep(spec, executor);
  if (executor == "slurm") {
    slurm.shared_dir = shared_dir_default(args.shared_dir);
    if (slurm.shared_dir.empty())
      throw UsageError("--executor slurm needs --shared-dir DIR (a folder every node sees) or "
                       "$MIXLAB_SWEEP_DIR");
    slurm.partition = partition;
    slurm.gres = gres;
    slurm.time = time;
    slurm.account = account;
    slurm.sbatch_options = sbatch_options;
    slurm.program = program;
    // Kept from the start: a submitter killed before sbatch leaves them to sweep resume.
    record.slurm_options = slurm_options_json(slurm);
  }

  const fs::path path = args.db.empty() ? store::default_store_path() : fs::path(args.db);
  store::RunStore store = store::RunStore::open(path);
  const std::int64_t sweep_id = store::insert_sweep(store, record);
  const Reporter reporter{args.quiet};
  reporter.line("sweep " + std::to_string(sweep_id) + ": " + record.name + ", " +
                std::to_string(members.size()) + " runs (" + executor + ")");
  if (executor == "slurm") submit_slurm(store, sweep_id, slurm, reporter);
  return carry_on(store, sweep_id, args, {});
}

}  // namespace mixlab::cli
