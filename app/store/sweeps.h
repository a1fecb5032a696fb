// Sweeps in the run store: a sweep's grid (SweepSpec as JSON), its planned members with their
// state and the run that carried each out, its executor (local, or a Slurm job array writing to a
// shared folder) and the process running or following it. A sweep that was stopped or killed
// resumes from these rows, never redoing a member that is done.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/store/run_owner.h"
#include "app/store/run_store.h"
#include "app/store/sweep_plan.h"

namespace mixlab::store {

// A sweep is `failed` when its Slurm job array was never submitted (sweep resume submits it).
enum class SweepState : std::uint8_t { running, stopped, finished, cancelled, failed };
enum class MemberState : std::uint8_t { planned, running, done, failed };
std::string_view to_string(SweepState state);
std::string_view to_string(MemberState state);

struct SweepMemberRecord {
  int member = 0;
  std::string settings_json;  // SweepMember as JSON (sweep_plan.h)
  MemberState state = MemberState::planned;
  std::optional<std::int64_t> run_id;  // the run that carried it out (the last one tried)
  std::string run_uid;                 // the uid given to the last try's run (local executor)
  std::string message;                 // why it failed
};

struct SweepRecord {
  std::int64_t id = 0;
  std::string uid;  // 32 hex digits; names the sweep's shared folder on Slurm
  std::string name;
  std::int64_t created_at_ms = 0;
  std::string executor = "local";  // "local" or "slurm"
  SweepState state = SweepState::running;
  std::string spec_json;
  std::string message;
  std::string slurm_job_id;
  std::string shared_dir;  // the sweep's own folder in the shared folder
  std::string slurm_options;  // what it is submitted with (JSON), kept to submit it again
  Owner owner;
  std::vector<SweepMemberRecord> members;  // by member index

  int count(MemberState state) const;
  bool owner_is_alive() const;  // the process running it is still there (this host)
};

// How a member's state moves, for the three executors alike (mixlab-cli's local and Slurm ones,
// the GUI's SweepRunner):
//   planned -> running           start_member: a try begins (its run's uid kept)
//   running -> done | failed | planned
//                                member_outcome: what the try's run says; planned (a stopped
//                                run) tries again; without a run, what the executor saw
//   running, its process gone -> settle_running_members: the same, planned without a run
// A member's state from the run carrying it out: done for a run that ended as it should
// (finished, or diverged: a result too), failed for one that failed or was interrupted, planned
// (to run again) for one stopped or still running.
MemberState member_state(const RunRecord& run);

// What a member's try came to: its run's state (member_state), with the run's message when it
// failed; `without_run` when the try recorded no run (the executor says what it saw).
struct MemberOutcome {
  MemberState state = MemberState::failed;
  std::optional<std::int64_t> run_id;
  std::string message;
};
MemberOutcome member_outcome(const std::optional<RunRecord>& run, MemberOutcome without_run);
// Records it (set_member).
void end_member(RunStore& store, std::int64_t sweep_id, int member, const MemberOutcome& outcome);
// Members a killed process left running: their run tells what became of them; one without a
// run is planned again.
void settle_running_members(RunStore& store, std::int64_t sweep_id);

// A new sweep's row for `spec`: its name, its grid as JSON and every member of plan_sweep(spec),
// planned. Throws ConfigError as plan_sweep does.
SweepRecord planned_sweep(const SweepSpec& spec, std::string executor = "local");

// Inserts the sweep and its members (all planned), owned by this process; returns its id.
std::int64_t insert_sweep(RunStore& store, SweepRecord sweep);
std::vector<SweepRecord> list_sweeps(RunStore& store);  // with members, newest first
std::optional<SweepRecord> find_sweep(RunStore& store, std::int64_t id);
// By id ("3"), or by uid or a prefix of it of at least 6 hex digits. Throws StoreError
// "no sweep ID in PATH".
SweepRecord sweep(RunStore& store, std::string_view id_or_uid);

void set_member(RunStore& store, std::int64_t sweep_id, int member, MemberState state,
                std::optional<std::int64_t> run_id, const std::string& message);
// Records the uid that the member's next run will have, state running.
void start_member(RunStore& store, std::int64_t sweep_id, int member, const std::string& run_uid);
void set_sweep_state(RunStore& store, std::int64_t sweep_id, SweepState state,
                     const std::string& message);
void set_slurm_job(RunStore& store, std::int64_t sweep_id, const std::string& job_id,
                   const std::string& shared_dir);
void set_slurm_options(RunStore& store, std::int64_t sweep_id, const std::string& options_json);
// Makes this process the sweep's owner, state running. Throws StoreError when another
// process that is still alive owns it.
void claim_sweep(RunStore& store, std::int64_t sweep_id);
// The run with that uid, if this store has it.
std::optional<RunRecord> find_run_by_uid(RunStore& store, const std::string& uid);
// The runs of the sweep's members, in member order (members without a run left out).
std::vector<std::int64_t> sweep_run_ids(RunStore& store, std::int64_t sweep_id);

}  // namespace mixlab::store
