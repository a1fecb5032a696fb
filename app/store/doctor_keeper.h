// Keeps doctor measurements in the run store, as mixlab-cli doctor --measure (with its sweep
// and what-if) and the Doctor tab's Measure do: each run (tagged "doctor") recorded as it runs,
// then a report linked to the runs measured for it. Nothing measured is lost.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/store/run_recorder.h"
#include "app/store/store_writer.h"
#include "engine/doctor/diagnosis.h"

namespace mixlab::store {

class DoctorKeeper {
 public:
  // Opens the store at `db` (throws StoreError). `model_name` names the runs and the report;
  // `device` is the device the runs train on ("cpu", "cuda:0").
  DoctorKeeper(const std::filesystem::path& db, const doctor::DiagnosisInput& input,
               std::string model_name, std::string device);

  // For MeasureOptions::also_to: a recorder for the run of `config`, tagged "doctor" and `tag`
  // when given ("sweep", "what-if"), with `note`; `spec` when the run trains another model than
  // the keeper's (a what-if's changed width).
  RunSink* begin_run(const RunConfig& config, const std::string& tag = {},
                     const std::string& note = {}, const ModelSpec* spec = nullptr);

  // Once measured: waits for the runs begun since the last report to be committed, keeps the
  // report (`report_json`: doctor::to_json of `diagnosis`) linked to them and returns its id.
  std::int64_t keep_report(const doctor::Diagnosis& diagnosis, const std::string& report_json);

  // The runs the last report links (before any report: none).
  std::vector<std::int64_t> run_ids() const { return reported_; }
  // Waits for the runs begun since the last report to be committed and returns them, leaving
  // them without a report (a what-if's).
  std::vector<std::int64_t> keep_runs();
  const std::filesystem::path& path() const { return writer_.path(); }

 private:
  StoreWriter writer_;
  std::string model_name_;
  std::string model_json_;
  std::string device_;
  std::vector<std::unique_ptr<RunRecorder>> recorders_;
  std::size_t unreported_ = 0;  // recorders_ from here on belong to no report yet
  std::vector<std::int64_t> reported_;
};

}  // namespace mixlab::store
