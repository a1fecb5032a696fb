// MixLab's run history: one SQLite database file (WAL mode, foreign keys, a schema version with
// forward migrations) that the GUI and mixlab-cli both record into and read from.
//
// A RunStore is one connection, used from one thread. Recording during a run goes through a
// StoreWriter (its own thread and connection), so the trainer never waits on the disk; readers
// such as the history view use their own RunStore and never block it (WAL).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "app/store/run_record.h"
#include "app/store/sqlite.h"

namespace mixlab::store {

// The schema version this MixLab writes (PRAGMA user_version) and the application id that marks
// a file as a MixLab run database (PRAGMA application_id, "MXLB").
inline constexpr int kSchemaVersion = 9;
inline constexpr std::int32_t kApplicationId = 0x4D584C42;

// A doctor's report as kept (mixlab-cli doctor --measure): the diagnosis's JSON
// (engine/doctor/report_json.h) with the runs that measured it.
struct DoctorReportRecord {
  std::int64_t id = 0;
  std::int64_t created_at_ms = 0;  // 0 on insert: now
  std::string model_name;
  std::string device;  // the profile's name: "AMD EPYC", "RTX 2060"
  int batch_size = 0;
  std::string mixed_policy;
  std::string verdict;
  std::string report_json;
  std::vector<std::int64_t> run_ids;  // ascending
};

// A layer's times over a run's timed steps (RunConfig::layer_timing): medians and 95th
// percentiles, the warm-up left out as the step-time summary leaves it out.
struct LayerTimeSummary {
  int layer = 0;
  std::string title;  // as the editor names it: "2 Dense 128, relu" (engine/spec/layer_text.h)
  std::int64_t steps = 0;
  double forward_ms = 0.0;  // median
  double backward_ms = 0.0;
  double forward_p95_ms = 0.0;
  double backward_p95_ms = 0.0;
};

// A layer's non-finite gradients over a run's skipped steps (schema version 8): on how many steps
// it had any, how many values in all, and the step where it had the most.
struct LayerOverflowSummary {
  int layer = 0;
  std::string title;  // as the editor names it
  std::int64_t steps = 0;
  std::int64_t nonfinite = 0;
  std::int64_t values = 0;  // the layer's gradient values (a step's)
  std::int64_t first_step = 0;
  std::int64_t last_step = 0;
};

// A stored run's layers named as the editor names them ("1 Dense 4, softmax"), or "layer N"
// where its model is one this MixLab cannot read.
class StoredLayerTitles {
 public:
  explicit StoredLayerTitles(const std::string& model_json);
  std::string operator()(int layer) const;

 private:
  std::optional<ModelSpec> spec_;
};

// One FP8 tensor of one training step (schema version 9).
struct Fp8TensorRecord {
  std::int64_t step = 0;
  Fp8TensorStep tensor;
};

struct StoreOptions {
  bool read_only = false;           // open for reading only; never changes the file
  int busy_timeout_ms = 10000;      // wait this long for another process's write lock
  std::int64_t max_page_count = 0;  // > 0: cap the file at this many pages (a full disk)
  bool mark_interrupted = true;     // on open, mark runs whose process is gone `interrupted`
};

// A run's name when the user gives none: "<model> <precision> b<batch>".
std::string default_run_name(const RunRecord& record);

// The default database: $MIXLAB_DB, else $XDG_DATA_HOME/mixlab/runs.sqlite, else
// ~/.local/share/mixlab/runs.sqlite.
std::filesystem::path default_store_path();

class RunStore {
 public:
  // Opens the database at `path`, creating it (and its folder) when missing, and migrates an
  // older schema. Throws StoreError, leaving the file untouched, for a file that is not a MixLab
  // database, is corrupt, comes from a newer MixLab, or cannot be written (unless read_only).
  static RunStore open(const std::filesystem::path& path, const StoreOptions& options = {});

  const std::string& path() const { return db_.path(); }
  Connection& connection() { return db_; }

  // --- recording (a StoreWriter calls these on its thread; tests call them directly) ---
  // Inserts a new run as `running`, owned by this process; returns its id. `created_at_ms` 0
  // means now; a name left empty becomes "<model> <precision> b<batch>".
  std::int64_t insert_run(RunRecord record);
  void mark_started(std::int64_t run_id, std::int64_t started_at_ms, const Environment& env,
                    std::int64_t total_steps, std::int64_t peak_memory_bytes);
  void insert_steps(std::int64_t run_id, std::span<const StepMetrics> steps);
  void insert_epoch(std::int64_t run_id, const EpochMetrics& epoch);
  void insert_layer_times(std::int64_t run_id, std::int64_t step,
                          std::span<const LayerTiming> layers);
  void insert_layer_overflows(std::int64_t run_id, std::int64_t step,
                              std::span<const LayerOverflow> layers);
  void insert_fp8_tensors(std::int64_t run_id, std::int64_t step,
                          std::span<const Fp8TensorStep> tensors);
  void finish_run(std::int64_t run_id, const RunSummary& summary, std::int64_t finished_at_ms);
  // Writes this moment as the heartbeat of those of `run_ids` still `running`.
  void beat(std::span<const std::int64_t> run_ids, std::int64_t now_ms);
  // Marks `running` runs whose recording process has ended as `interrupted`, with figures from
  // the steps they kept and why (owner_gone: on this host its pid, on another host a heartbeat
  // older than kHeartbeatLimit). Returns how many it marked.
  int mark_interrupted_runs();

  // --- reading ---
  // All runs, newest first, without their steps.
  std::vector<RunRecord> list_runs();
  std::optional<RunRecord> find_run(std::int64_t run_id);
  RunRecord run(std::int64_t run_id);  // throws StoreError "no run N in PATH"
  std::vector<StepMetrics> steps(std::int64_t run_id);
  // Streams a run's steps in order without holding them all (exports of long runs).
  void for_each_step(std::int64_t run_id, const std::function<void(const StepMetrics&)>& visit);
  std::vector<EpochMetrics> epochs(std::int64_t run_id);
  std::int64_t step_count(std::int64_t run_id);
  // Per-layer times, in layer order; empty for a run recorded without layer timing.
  std::vector<LayerTimeSummary> layer_times(std::int64_t run_id);
  // Per-layer overflow counts, in layer order; empty for a run without a failed overflow check.
  std::vector<LayerOverflowSummary> layer_overflows(std::int64_t run_id);
  // The FP8 tensors of every training step, by step, layer, part and role (input, kernel,
  // gradient); empty for a run not in mixed_float8.
  std::vector<Fp8TensorRecord> fp8_tensors(std::int64_t run_id);

  // --- the doctor's reports (app/store/doctor_reports.cpp) ---
  // Keeps a report with its runs (which must exist); returns its id.
  std::int64_t insert_doctor_report(DoctorReportRecord report);
  // Newest first; those that a run measured when `run_id` is given.
  std::vector<DoctorReportRecord> doctor_reports(std::optional<std::int64_t> run_id = {});
  std::optional<DoctorReportRecord> find_doctor_report(std::int64_t report_id);

  // --- editing (each throws StoreError for an unknown id) ---
  void rename(std::int64_t run_id, const std::string& name);
  void add_tags(std::int64_t run_id, const std::vector<std::string>& tags);
  void remove_tags(std::int64_t run_id, const std::vector<std::string>& tags);
  void set_note(std::int64_t run_id, const std::string& note);
  // Deletes the run with its steps, epochs and tags.
  void delete_run(std::int64_t run_id);

 private:
  explicit RunStore(Connection db) : db_(std::move(db)) {}
  void require_run(std::int64_t run_id);
  std::vector<std::string> tags_of(std::int64_t run_id);

  Connection db_;
};

}  // namespace mixlab::store
