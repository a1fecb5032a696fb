// mixlab-cli sweep's executors: local (members as `mixlab-cli train` child processes, one per
// device at a time) and Slurm (one job array whose tasks write their own run databases in a
// shared folder, followed with squeue/sacct and imported into the history).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/store/run_store.h"
#include "app/store/sweep_plan.h"
#include "app/store/sweeps.h"

namespace mixlab::cli::sweep {

namespace fs = std::filesystem;

// Set by SIGINT / SIGTERM while a sweep runs or is followed.
extern std::atomic<bool> g_stop;
// Installs the handlers that set g_stop (without SA_RESTART, so that waits wake up); the
// destructor puts the previous ones back.
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

 private:
  struct sigaction* previous_;
};

// Progress lines on stderr ("[3/12] ..."), unless quiet.
struct Reporter {
  bool quiet = false;
  void line(const std::string& text) const;
};

// This program, to run members and Slurm tasks with: /proc/self/exe.
std::string self_program();

// A command's exit status and output.
struct CommandResult {
  int status = -1;  // exit status; -1: could not run it, 128+N: killed by signal N
  bool timed_out = false;  // killed at its time limit
  std::string out, err;
};
// Runs `argv` (stdin /dev/null), killing it after `timeout_s`: a Slurm client command never
// holds a sweep up for longer.
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s = 60.0);

// --- local ---
struct LocalOptions {
  std::vector<std::string> devices = {"auto"};  // one member at a time on each
  fs::path db;
  std::vector<std::string> extra_train_args;  // e.g. --threads for every member
};
// Runs the sweep's planned members (and those a killed sweep left running) until all are done
// or failed, or g_stop. Returns the sweep's final state.
store::SweepState run_local(store::RunStore& store, std::int64_t sweep_id,
                            const LocalOptions& options, const Reporter& reporter);

// --- Slurm ---
struct SlurmOptions {
  fs::path shared_dir;
  std::string partition, gres, time, account;
  std::vector<std::string> sbatch_options;  // passed through as given
  std::string program;                      // mixlab-cli on the nodes; default self_program()
  double poll_s = 5.0;
};
// What a sweep is submitted with, as its row keeps it (SweepRecord::slurm_options) to submit it
// again; poll_s is not kept (sweep resume --poll). Text that is not such JSON reads as defaults.
std::string slurm_options_json(const SlurmOptions& options);
SlurmOptions parse_slurm_options(const std::string& json);
// The sweep's folder in the shared folder: DIR/sweep-<first 12 hex digits of its uid>.
fs::path sweep_folder(const fs::path& shared_dir, const std::string& uid);
// Writes the sweep's folder (sweep.json: members and their train options) and submits one job
// array; records the options, then the job id and the folder, in the store. Returns the job id.
// A sweep that could not be submitted (its folder cannot be made or written, no sbatch, sbatch
// refuses it) is recorded `failed` with the reason, which the Error thrown says too.
std::string submit_slurm(store::RunStore& store, std::int64_t sweep_id, const SlurmOptions& options,
                         const Reporter& reporter);
// Follows the job array until every member has ended (or g_stop, or after one pass when
// `once`): imports each finished task's file, records failed, cancelled or timed-out tasks as
// failed with Slurm's reason. Returns the sweep's state. When squeue has not answered
// kSqueueTries times in a row (each call limited to a minute, retried every min(poll_s, 5) s)
// the sweep is left `stopped`, saying so, and an Error names squeue's complaint.
store::SweepState follow_slurm(store::RunStore& store, std::int64_t sweep_id, double poll_s,
                               bool once, const Reporter& reporter);
inline constexpr int kSqueueTries = 10;
// `mixlab-cli sweep task FOLDER`: runs the member of $SLURM_ARRAY_TASK_ID (or `member`).
int run_task(const fs::path& folder, std::optional<int> member);
// scancel the sweep's job and leave a `cancelled` mark in its folder.
void cancel_slurm(const fs::path& folder, const std::string& job_id);

// What a sweep folder says without a run store (sweep status from another machine).
nlohmann::ordered_json folder_status(const fs::path& folder);

}  // namespace mixlab::cli::sweep
