// What the run store keeps of a run: its configuration, model, environment, summary figures,
// tags and note (RunRecord), with its steps (the engine's StepMetrics) and epochs
// (EpochMetrics) in their own tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/train/run_types.h"

namespace mixlab::store {

// A run's status as stored: the engine's RunStatus, plus `interrupted` for a run whose process
// ended without finishing it (killed, crashed, power lost).
enum class RecordStatus : std::uint8_t {
  running,
  finished,
  stopped,
  diverged,
  failed,
  interrupted
};
std::string_view to_string(RecordStatus status);
std::optional<RecordStatus> parse_record_status(std::string_view text);
RecordStatus record_status(RunStatus status);

// Where and with what a run ran.
struct Environment {
  std::string device_kind;         // "cpu", "cuda"
  std::string device_name;         // GPU name or CPU model
  std::string compute_capability;  // "9.0"; empty on the CPU
  std::string driver_version;      // NVIDIA driver; empty on the CPU
  std::string cuda_version;
  std::string cudnn_version;
  std::string cublas_version;
  std::string onednn_version;
  std::string cpu_model;
  int threads = 0;  // CPU threads the backend used
  std::string mixlab_version;
  std::string hostname;
};

// The environment of this process for a run on `device` (its library versions, the CPU model
// from /proc/cpuinfo, the host name).
Environment describe_environment(const DeviceInfo& device, std::string_view mixlab_version);

// A column of a run's row that could not be read: a value changed by hand (sqlite3) or written
// by another program. The rest of the row is read; the column's setting keeps its default.
struct ColumnDamage {
  std::string column;   // the runs table's column: "precision"
  std::string problem;  // "unknown precision 'evil' (float32, mixed_float16, mixed_bfloat16)"
};

struct RunRecord {
  std::int64_t id = 0;     // this store's number for it
  std::string uid;         // 32 hex digits, the same in every store the run is imported into
  std::string name;
  RecordStatus status = RecordStatus::running;
  std::string message;              // why it stopped, diverged, failed or was interrupted
  std::int64_t created_at_ms = 0;   // UTC, milliseconds since 1970
  std::int64_t started_at_ms = 0;   // training began (after loading); 0 if it never did
  std::int64_t finished_at_ms = 0;  // 0 while running
  std::int64_t heartbeat_at_ms = 0;  // its process's last heartbeat (run_owner.h); 0: none known
  std::string model_name;
  std::string model_json;  // the engine's model format
  RunConfig config;
  std::string device;  // the device asked for: "cpu", "cuda:0"
  Environment environment;
  RunSummary summary;            // figures; its status and message mirror the fields above
  std::int64_t total_steps = 0;  // planned
  std::vector<std::string> tags;
  std::string note;
  std::vector<ColumnDamage> damage;  // empty: the whole row was read
};

// "precision: unknown precision 'evil' (...); optimizer: ...", or empty for a sound run.
std::string describe_damage(const RunRecord& record);

// "2026-11-30T02:45:07.123Z"; empty for 0.
std::string format_utc(std::int64_t ms_since_epoch);
std::int64_t now_utc_ms();

// A new globally unique id: 128 random bits as 32 lower-case hex digits.
std::string new_uid();

}  // namespace mixlab::store
