#include "app/store/schema.h"

#include <string>

#include "app/store/run_store.h"

namespace mixlab::store {

namespace {

// Version 1: runs with their configuration, environment and summary; steps, epochs and tags in
// their own tables, deleted with their run. Timestamps are UTC milliseconds since 1970; NaN
// figures are NULL.
constexpr std::string_view kVersion1 = R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN
    ('running', 'finished', 'stopped', 'diverged', 'failed', 'interrupted')),
  message TEXT NOT NULL DEFAULT '',
  created_at_ms INTEGER NOT NULL,
  started_at_ms INTEGER,
  finished_at_ms INTEGER,
  model_name TEXT NOT NULL,
  model_json TEXT NOT NULL,
  -- configuration
  precision TEXT NOT NULL,
  loss_scaling TEXT NOT NULL,
  batch_size INTEGER NOT NULL,
  epochs INTEGER NOT NULL,
  steps INTEGER NOT NULL,
  optimizer TEXT NOT NULL,
  learning_rate REAL NOT NULL,
  momentum REAL NOT NULL,
  nesterov INTEGER NOT NULL,
  beta_1 REAL NOT NULL,
  beta_2 REAL NOT NULL,
  epsilon REAL NOT NULL,
  seed INTEGER NOT NULL,
  threads INTEGER NOT NULL,
  dataset TEXT NOT NULL,
  evaluate INTEGER NOT NULL,
  warmup_steps INTEGER NOT NULL,
  device TEXT NOT NULL,
  -- environment
  env_device_kind TEXT NOT NULL DEFAULT '',
  env_device_name TEXT NOT NULL DEFAULT '',
  env_compute_capability TEXT NOT NULL DEFAULT '',
  env_driver_version TEXT NOT NULL DEFAULT '',
  env_cuda_version TEXT NOT NULL DEFAULT '',
  env_cudnn_version TEXT NOT NULL DEFAULT '',
  env_cublas_version TEXT NOT NULL DEFAULT '',
  env_onednn_version TEXT NOT NULL DEFAULT '',
  env_cpu_model TEXT NOT NULL DEFAULT '',
  env_threads INTEGER NOT NULL DEFAULT 0,
  env_mixlab_version TEXT NOT NULL DEFAULT '',
  env_hostname TEXT NOT NULL DEFAULT '',
  -- summary
  total_steps INTEGER NOT NULL DEFAULT 0,
  steps_done INTEGER NOT NULL DEFAULT 0,
  skipped_steps INTEGER NOT NULL DEFAULT 0,
  epochs_completed INTEGER NOT NULL DEFAULT 0,
  final_loss_scale REAL,
  warmup_steps_excluded INTEGER NOT NULL DEFAULT 0,
  median_step_ms REAL,
  p5_step_ms REAL,
  p95_step_ms REAL,
  samples_per_s REAL,
  final_loss REAL,
  final_accuracy REAL,
  test_loss REAL,
  test_accuracy REAL,
  peak_memory_bytes INTEGER NOT NULL DEFAULT 0,
  diverged_at_step INTEGER NOT NULL DEFAULT -1,
  failed_allocation_bytes INTEGER NOT NULL DEFAULT 0,
  wall_s REAL NOT NULL DEFAULT 0,
  note TEXT NOT NULL DEFAULT '',
  -- the process recording a running run: tells one still running from one interrupted
  owner_host TEXT NOT NULL DEFAULT '',
  owner_boot_id TEXT NOT NULL DEFAULT '',
  owner_pid INTEGER NOT NULL DEFAULT 0,
  owner_start_ticks INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_by_created ON runs (created_at_ms);
CREATE INDEX runs_by_status ON runs (status);

CREATE TABLE steps (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  epoch INTEGER NOT NULL,
  wall_offset_s REAL NOT NULL,
  step_ms REAL,
  data_wait_ms REAL,
  forward_ms REAL,
  backward_ms REAL,
  optimizer_ms REAL,
  device_ms REAL,
  loss REAL,
  accuracy REAL,
  loss_scale REAL,
  skipped INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

CREATE TABLE epochs (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  epoch INTEGER NOT NULL,
  steps INTEGER NOT NULL,
  train_loss REAL,
  train_accuracy REAL,
  test_loss REAL,
  test_accuracy REAL,
  time_s REAL,
  samples_per_s REAL,
  PRIMARY KEY (run_id, epoch)
) WITHOUT ROWID;

CREATE TABLE run_tags (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  tag TEXT NOT NULL,
  PRIMARY KEY (run_id, tag)
) WITHOUT ROWID;
)sql";

// Version 2: the GPU options of a run's configuration (RunConfig::tf32, cuda_graphs,
// data_on_device, layer_timing); runs recorded before have them off.
constexpr std::string_view kVersion2 = R"sql(
ALTER TABLE runs ADD COLUMN tf32 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cuda_graphs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN data_on_device INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN layer_timing INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 3: per-layer forward and backward times of the steps of runs with
// RunConfig::layer_timing (the CPU's clock or a GPU's events), one row per step and layer.
constexpr std::string_view kVersion3 = R"sql(
CREATE TABLE layer_times (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  layer INTEGER NOT NULL,
  forward_ms REAL,
  backward_ms REAL,
  PRIMARY KEY (run_id, step, layer)
) WITHOUT ROWID;
)sql";

// Version 4: the doctor's reports (mixlab-cli doctor --measure, the Doctor tab): the diagnosis
// as JSON with its verdict, and the runs that measured it.
constexpr std::string_view kVersion4 = R"sql(
CREATE TABLE doctor_reports (
  id INTEGER PRIMARY KEY,
  created_at_ms INTEGER NOT NULL,
  model_name TEXT NOT NULL,
  device TEXT NOT NULL,
  batch_size INTEGER NOT NULL,
  mixed_policy TEXT NOT NULL,
  verdict TEXT NOT NULL,
  report_json TEXT NOT NULL
);
CREATE TABLE doctor_report_runs (
  report_id INTEGER NOT NULL REFERENCES doctor_reports (id) ON DELETE CASCADE,
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  PRIMARY KEY (report_id, run_id)
) WITHOUT ROWID;
CREATE INDEX doctor_report_runs_by_run ON doctor_report_runs (run_id);
)sql";

// Version 5: runs carry a globally unique id (`mixlab-cli runs import` adds a run once however
// often its file is imported; new runs get 128 random bits, runs recorded before get one made
// from their own columns here), and sweeps: a grid of runs
// with its planned members, each member's state and the run that carried it out.
constexpr std::string_view kVersion5 = R"sql(
ALTER TABLE runs ADD COLUMN uid TEXT NOT NULL DEFAULT '';
-- From what the run already has, so that copies of one old file get the same ids: its creation
-- time, its number and the process that recorded it (32 hex digits).
UPDATE runs SET uid = printf('%011x%05x%08x%08x', created_at_ms, id & 1048575,
                             owner_pid & 4294967295, owner_start_ticks & 4294967295)
  WHERE uid = '';
CREATE UNIQUE INDEX runs_by_uid ON runs (uid);

CREATE TABLE sweeps (
  id INTEGER PRIMARY KEY,
  uid TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  executor TEXT NOT NULL CHECK (executor IN ('local', 'slurm')),
  state TEXT NOT NULL CHECK (state IN ('running', 'stopped', 'finished', 'cancelled')),
  spec_json TEXT NOT NULL,
  message TEXT NOT NULL DEFAULT '',
  -- the Slurm executor's job array and the shared folder its tasks write to
  slurm_job_id TEXT NOT NULL DEFAULT '',
  shared_dir TEXT NOT NULL DEFAULT '',
  -- the process running or following the sweep: tells one still going from one killed
  owner_host TEXT NOT NULL DEFAULT '',
  owner_boot_id TEXT NOT NULL DEFAULT '',
  owner_pid INTEGER NOT NULL DEFAULT 0,
  owner_start_ticks INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE sweep_members (
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  member INTEGER NOT NULL,
  settings_json TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('planned', 'running', 'done', 'failed')),
  run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL,
  -- the uid given to the run of the member's last try (local executor)
  run_uid TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (sweep_id, member)
) WITHOUT ROWID;
CREATE INDEX sweep_members_by_run ON sweep_members (run_id);
)sql";

// Version 6: the heartbeat of a running run's process (UTC ms, every kHeartbeatInterval in
// app/store/run_owner.h): on another host it is the only sign that the process still lives.
// Runs recorded before have none (NULL) and keep the older rule: never taken as ended there.
constexpr std::string_view kVersion6 = R"sql(
ALTER TABLE runs ADD COLUMN heartbeat_at_ms INTEGER;
)sql";

// Version 7: a sweep whose Slurm job array was never submitted (its folder could not be made,
// sbatch refused it) is 'failed', with the reason; a Slurm sweep keeps the options it was
// submitted with (slurm_options, JSON), so that `sweep resume` submits it again. SQLite cannot
// change a CHECK: sweeps is made anew, its members kept aside meanwhile (dropping sweeps would
// delete them through their foreign key).
constexpr std::string_view kVersion7 = R"sql(
CREATE TEMP TABLE sweep_members_kept AS SELECT * FROM sweep_members;
DROP TABLE sweep_members;
CREATE TABLE sweeps_7 (
  id INTEGER PRIMARY KEY,
  uid TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  executor TEXT NOT NULL CHECK (executor IN ('local', 'slurm')),
  state TEXT NOT NULL CHECK (state IN ('running', 'stopped', 'finished', 'cancelled', 'failed')),
  spec_json TEXT NOT NULL,
  message TEXT NOT NULL DEFAULT '',
  slurm_job_id TEXT NOT NULL DEFAULT '',
  shared_dir TEXT NOT NULL DEFAULT '',
  owner_host TEXT NOT NULL DEFAULT '',
  owner_boot_id TEXT NOT NULL DEFAULT '',
  owner_pid INTEGER NOT NULL DEFAULT 0,
  owner_start_ticks INTEGER NOT NULL DEFAULT 0,
  slurm_options TEXT NOT NULL DEFAULT ''
);
INSERT INTO sweeps_7 (id, uid, name, created_at_ms, executor, state, spec_json, message,
                      slurm_job_id, shared_dir, owner_host, owner_boot_id, owner_pid,
                      owner_start_ticks)
  SELECT id, uid, name, created_at_ms, executor, state, spec_json, message, slurm_job_id,
         shared_dir, owner_host, owner_boot_id, owner_pid, owner_start_ticks FROM sweeps;
DROP TABLE sweeps;
ALTER TABLE sweeps_7 RENAME TO sweeps;
CREATE TABLE sweep_members (
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id) ON DELETE CASCADE,
  member INTEGER NOT NULL,
  settings_json TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('planned', 'running', 'done', 'failed')),
  run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL,
  run_uid TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (sweep_id, member)
) WITHOUT ROWID;
INSERT INTO sweep_members (sweep_id, member, settings_json, state, run_id, run_uid, message)
  SELECT sweep_id, member, settings_json, state, run_id, run_uid, message FROM sweep_members_kept;
DROP TABLE sweep_members_kept;
CREATE INDEX sweep_members_by_run ON sweep_members (run_id);
)sql";

// Version 8 (issue 29): the attention kernels a run asked for (RunConfig::attention), and the
// per-layer overflow counts of the training steps whose overflow check failed (the loss-scaling
// demo): how many of a layer's gradient values were NaN or inf, of how many.
constexpr std::string_view kVersion8 = R"sql(
ALTER TABLE runs ADD COLUMN attention TEXT NOT NULL DEFAULT 'auto';
CREATE TABLE layer_overflows (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  layer INTEGER NOT NULL,
  nonfinite INTEGER NOT NULL,
  n_values INTEGER NOT NULL,
  PRIMARY KEY (run_id, step, layer)
) WITHOUT ROWID;
)sql";

// Version 9 (issue 30): mixed_float8's delayed-scaling settings (RunConfig::fp8), at their
// defaults for the runs before them, and each training step's FP8 tensors (StepResult::fp8):
// amax (NULL for NaN, which SQLite cannot keep), the scale used and the next, how many values
// saturated or were flushed to zero.
constexpr std::string_view kVersion9 = R"sql(
ALTER TABLE runs ADD COLUMN fp8_history INTEGER NOT NULL DEFAULT 1024;
ALTER TABLE runs ADD COLUMN fp8_amax TEXT NOT NULL DEFAULT 'max';
ALTER TABLE runs ADD COLUMN fp8_margin INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN fp8_format TEXT NOT NULL DEFAULT 'hybrid';
CREATE TABLE fp8_tensors (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  layer INTEGER NOT NULL,
  part INTEGER NOT NULL,
  role TEXT NOT NULL,
  amax REAL,
  scale REAL NOT NULL,
  next_scale REAL NOT NULL,
  n_values INTEGER NOT NULL,
  saturated INTEGER NOT NULL,
  flushed INTEGER NOT NULL,
  PRIMARY KEY (run_id, step, layer, part, role)
) WITHOUT ROWID;
)sql";

constexpr Migration kMigrations[] = {{1, kVersion1}, {2, kVersion2}, {3, kVersion3},
                                     {4, kVersion4}, {5, kVersion5}, {6, kVersion6},
                                     {7, kVersion7}, {8, kVersion8}, {9, kVersion9}};
static_assert(std::size(kMigrations) == kSchemaVersion, "one migration per schema version");

}  // namespace

std::span<const Migration> schema_migrations() {
  return kMigrations;
}

void migrate(Connection& db, std::span<const Migration> steps, int target) {
  Transaction tx(db);
  const auto from = static_cast<int>(db.query_int("PRAGMA user_version"));
  for (const Migration& m : steps) {
    if (m.version <= from || m.version > target) continue;
    try {
      db.exec(m.sql);
    } catch (const StoreError& e) {
      throw StoreError("migrating " + db.path() + " to schema version " +
                           std::to_string(m.version) + " failed; it was left at version " +
                           std::to_string(from) + ": " + e.what(),
                       e.code());
    }
  }
  db.exec("PRAGMA user_version = " + std::to_string(target));
  db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
  tx.commit();
}

}  // namespace mixlab::store
