// RunStore's doctor reports (schema version 4): a diagnosis kept as JSON with the runs that
// measured it.
#include <sqlite3.h>

#include "app/store/run_store.h"

namespace mixlab::store {

std::int64_t RunStore::insert_doctor_report(DoctorReportRecord report) {
  Transaction tx(db_);
  Statement st = db_.prepare(
      "INSERT INTO doctor_reports (created_at_ms, model_name, device, batch_size, mixed_policy, "
      "verdict, report_json) VALUES (?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, report.created_at_ms != 0 ? report.created_at_ms : now_utc_ms())
      .bind(2, report.model_name)
      .bind(3, report.device)
      .bind(4, report.batch_size)
      .bind(5, report.mixed_policy)
      .bind(6, report.verdict)
      .bind(7, report.report_json);
  st.run();
  const std::int64_t id = db_.last_insert_id();
  Statement link =
      db_.prepare("INSERT INTO doctor_report_runs (report_id, run_id) VALUES (?, ?)");
  for (const std::int64_t run_id : report.run_ids) {
    if (!find_run(run_id)) {
      throw StoreError("a doctor report names run " + std::to_string(run_id) + ", not in " +
                       db_.path());
    }
    link.bind(1, id).bind(2, run_id);
    link.run();
  }
  tx.commit();
  return id;
}

std::vector<DoctorReportRecord> RunStore::doctor_reports(std::optional<std::int64_t> run_id) {
  Statement st = db_.prepare(
      run_id ? "SELECT id, created_at_ms, model_name, device, batch_size, mixed_policy, verdict, "
               "report_json FROM doctor_reports WHERE id IN (SELECT report_id FROM "
               "doctor_report_runs WHERE run_id = ?) ORDER BY id DESC"
             : "SELECT id, created_at_ms, model_name, device, batch_size, mixed_policy, verdict, "
               "report_json FROM doctor_reports ORDER BY id DESC");
  if (run_id) st.bind(1, *run_id);
  std::vector<DoctorReportRecord> out;
  while (st.step()) {
    DoctorReportRecord r;
    r.id = st.column_int(0);
    r.created_at_ms = st.column_int(1);
    r.model_name = st.column_text(2);
    r.device = st.column_text(3);
    r.batch_size = static_cast<int>(st.column_int(4));
    r.mixed_policy = st.column_text(5);
    r.verdict = st.column_text(6);
    r.report_json = st.column_text(7);
    out.push_back(std::move(r));
  }
  Statement runs =
      db_.prepare("SELECT run_id FROM doctor_report_runs WHERE report_id = ? ORDER BY run_id");
  for (DoctorReportRecord& r : out) {
    runs.bind(1, r.id);
    while (runs.step()) r.run_ids.push_back(runs.column_int(0));
    runs.reset();
  }
  return out;
}

std::optional<DoctorReportRecord> RunStore::find_doctor_report(std::int64_t report_id) {
  for (DoctorReportRecord& r : doctor_reports()) {
    if (r.id == report_id) return std::move(r);
  }
  return std::nullopt;
}

}  // namespace mixlab::store
