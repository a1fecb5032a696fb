#include "app/store/run_rows.h"

#include <variant>

namespace mixlab::store::rows {

namespace {

// A setting's value as its column holds it (booleans as 0 / 1).
FieldValue read_field(const Statement& st, int column, FieldType type) {
  switch (type) {
    case FieldType::integer:
      return st.column_int(column);
    case FieldType::real:
      return st.column_double(column);
    case FieldType::boolean:
      return st.column_int(column) != 0;
    case FieldType::text:
      break;
  }
  return st.column_text(column);
}

}  // namespace

const std::string_view kRecordColumns =
    "id, name, status, message, created_at_ms, started_at_ms, finished_at_ms, model_name, "
    "model_json, device, env_device_kind, env_device_name, env_compute_capability, "
    "env_driver_version, env_cuda_version, env_cudnn_version, env_cublas_version, "
    "env_onednn_version, env_cpu_model, env_threads, env_mixlab_version, env_hostname, "
    "total_steps, steps_done, skipped_steps, epochs_completed, final_loss_scale, "
    "warmup_steps_excluded, median_step_ms, p5_step_ms, p95_step_ms, samples_per_s, final_loss, "
    "final_accuracy, test_loss, test_accuracy, peak_memory_bytes, diverged_at_step, "
    "failed_allocation_bytes, wall_s, note, uid, heartbeat_at_ms";

const std::string& field_columns() {
  static const std::string columns = [] {
    std::string list;
    for (const RunField& f : run_fields()) list += ", " + std::string(f.store_column);
    return list;
  }();
  return columns;
}

void bind_field(Statement& st, int index, const FieldValue& value) {
  std::visit([&](const auto& v) { st.bind(index, v); }, value);
}

RunRecord read_run(const Statement& st) {
  RunRecord r;
  int c = 0;
  r.id = st.column_int(c++);
  r.name = st.column_text(c++);
  const std::string status = st.column_text(c++);
  r.status = parse_record_status(status).value_or(RecordStatus::failed);
  r.message = st.column_text(c++);
  r.created_at_ms = st.column_int(c++);
  r.started_at_ms = st.column_int(c++);
  r.finished_at_ms = st.column_int(c++);
  r.model_name = st.column_text(c++);
  r.model_json = st.column_text(c++);
  r.device = st.column_text(c++);

  Environment& env = r.environment;
  env.device_kind = st.column_text(c++);
  env.device_name = st.column_text(c++);
  env.compute_capability = st.column_text(c++);
  env.driver_version = st.column_text(c++);
  env.cuda_version = st.column_text(c++);
  env.cudnn_version = st.column_text(c++);
  env.cublas_version = st.column_text(c++);
  env.onednn_version = st.column_text(c++);
  env.cpu_model = st.column_text(c++);
  env.threads = static_cast<int>(st.column_int(c++));
  env.mixlab_version = st.column_text(c++);
  env.hostname = st.column_text(c++);

  RunSummary& s = r.summary;
  r.total_steps = st.column_int(c++);
  s.steps = st.column_int(c++);
  s.skipped_steps = st.column_int(c++);
  s.epochs_completed = static_cast<int>(st.column_int(c++));
  s.final_loss_scale = st.column_double(c++);
  s.warmup_steps = st.column_int(c++);
  s.median_step_ms = st.column_double(c++);
  s.p5_step_ms = st.column_double(c++);
  s.p95_step_ms = st.column_double(c++);
  s.samples_per_s = st.column_double(c++);
  s.final_loss = st.column_double(c++);
  s.final_accuracy = st.column_double(c++);
  s.test_loss = st.column_double(c++);
  s.test_accuracy = st.column_double(c++);
  s.peak_memory_bytes = st.column_int(c++);
  s.diverged_at_step = st.column_int(c++);
  s.failed_allocation_bytes = st.column_int(c++);
  s.wall_s = st.column_double(c++);
  r.note = st.column_text(c++);
  r.uid = st.column_text(c++);
  r.heartbeat_at_ms = st.column_int(c++);
  s.status = r.status == RecordStatus::interrupted ? RunStatus::failed
             : r.status == RecordStatus::running   ? RunStatus::running
                                                   : static_cast<RunStatus>(r.status);
  s.message = r.message;

  // In table order: the precision and the optimizer reset what later columns then set. Not
  // range-checked: a run the trainer refused (a negative learning rate) is kept as it was. A
  // value the field table cannot read damages this row alone: the rest is read.
  for (const RunField& f : run_fields()) {
    const int column = c++;
    try {
      restore_field(f, r.config, read_field(st, column, f.type));
    } catch (const FieldError& e) {
      r.damage.push_back({std::string(f.store_column), e.problem()});
    }
  }
  return r;
}

const std::string_view kOwnerColumns =
    "owner_host, owner_boot_id, owner_pid, owner_start_ticks, heartbeat_at_ms";

Owner read_owner(const Statement& st, int first) {
  return Owner{st.column_text(first), st.column_text(first + 1), st.column_int(first + 2),
               st.column_int(first + 3), st.column_int(first + 4)};
}

int bind_summary(Statement& st, int first, const RunSummary& s) {
  int c = first;
  st.bind(c++, s.steps);
  st.bind(c++, s.skipped_steps);
  st.bind(c++, s.epochs_completed);
  st.bind(c++, s.final_loss_scale);
  st.bind(c++, s.warmup_steps);
  st.bind(c++, s.median_step_ms);
  st.bind(c++, s.p5_step_ms);
  st.bind(c++, s.p95_step_ms);
  st.bind(c++, s.samples_per_s);
  st.bind(c++, s.final_loss);
  st.bind(c++, s.final_accuracy);
  st.bind(c++, s.test_loss);
  st.bind(c++, s.test_accuracy);
  st.bind(c++, s.diverged_at_step);
  st.bind(c++, s.failed_allocation_bytes);
  st.bind(c++, s.wall_s);
  return c;
}

const std::string_view kSummaryAssignments =
    "steps_done = ?, skipped_steps = ?, epochs_completed = ?, final_loss_scale = ?, "
    "warmup_steps_excluded = ?, median_step_ms = ?, p5_step_ms = ?, p95_step_ms = ?, "
    "samples_per_s = ?, final_loss = ?, final_accuracy = ?, test_loss = ?, test_accuracy = ?, "
    "diverged_at_step = ?, failed_allocation_bytes = ?, wall_s = ?";

StepMetrics read_step(const Statement& st) {
  StepMetrics m;
  int c = 0;
  m.step = st.column_int(c++);
  m.epoch = static_cast<int>(st.column_int(c++));
  m.wall_offset_s = st.column_double(c++);
  m.step_ms = st.column_double(c++);
  m.data_wait_ms = st.column_double(c++);
  m.forward_ms = st.column_double(c++);
  m.backward_ms = st.column_double(c++);
  m.optimizer_ms = st.column_double(c++);
  m.device_ms = st.column_double(c++);
  m.loss = st.column_double(c++);
  m.accuracy = st.column_double(c++);
  m.loss_scale = st.column_double(c++);
  m.skipped = st.column_int(c++) != 0;
  m.samples = static_cast<int>(st.column_int(c++));
  return m;
}

}  // namespace mixlab::store::rows
