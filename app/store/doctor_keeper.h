// Keeps a doctor measurement in the run store, as mixlab-cli doctor --measure and the Doctor
// tab's Measure both do: each policy's run (tagged "doctor") recorded as it runs, then the
// report linked to the two runs. Nothing measured is lost.
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

  // For MeasureOptions::also_to: a recorder for the run of `config`.
  RunSink* begin_run(const RunConfig& config);

  // Once measured: waits for the runs to be committed, keeps the report (`report_json`:
  // doctor::to_json of `diagnosis`) linked to them and returns its id.
  std::int64_t keep_report(const doctor::Diagnosis& diagnosis, const std::string& report_json);

  std::vector<std::int64_t> run_ids() const;
  const std::filesystem::path& path() const { return writer_.path(); }

 private:
  StoreWriter writer_;
  std::string model_name_;
  std::string model_json_;
  std::string device_;
  std::vector<std::unique_ptr<RunRecorder>> recorders_;
};

}  // namespace mixlab::store
