#include "app/store/doctor_keeper.h"

#include "app/store/run_store.h"
#include "engine/spec/model_spec.h"

namespace mixlab::store {

DoctorKeeper::DoctorKeeper(const std::filesystem::path& db, const doctor::DiagnosisInput& input,
                           std::string model_name, std::string device)
    : writer_(db),
      model_name_(std::move(model_name)),
      model_json_(to_json(input.spec)),
      device_(std::move(device)) {}

RunSink* DoctorKeeper::begin_run(const RunConfig& config, const std::string& tag,
                                 const std::string& note, const ModelSpec* spec) {
  RunRecord record;
  record.model_name = model_name_;
  record.model_json = spec != nullptr ? to_json(*spec) : model_json_;
  record.config = config;
  record.device = device_;
  record.environment.mixlab_version = MIXLAB_VERSION;
  record.tags = {"doctor"};
  if (!tag.empty()) record.tags.push_back(tag);
  record.note = note;
  recorders_.push_back(std::make_unique<RunRecorder>(writer_, std::move(record)));
  return recorders_.back().get();
}

std::vector<std::int64_t> DoctorKeeper::keep_runs() {
  writer_.flush();
  std::vector<std::int64_t> ids;
  for (; unreported_ < recorders_.size(); ++unreported_) {
    ids.push_back(recorders_[unreported_]->run_id());
  }
  return ids;
}

std::int64_t DoctorKeeper::keep_report(const doctor::Diagnosis& diagnosis,
                                       const std::string& report_json) {
  const std::vector<std::int64_t> runs = keep_runs();
  DoctorReportRecord report;
  report.model_name = model_name_;
  report.device = diagnosis.input.device.name;
  report.batch_size = diagnosis.input.run.batch_size;
  report.mixed_policy = std::string(to_string(diagnosis.input.mixed));
  report.verdict = diagnosis.verdict;
  report.report_json = report_json;
  report.run_ids = runs;
  RunStore store = RunStore::open(writer_.path());
  const std::int64_t id = store.insert_doctor_report(report);
  reported_ = runs;
  return id;
}

}  // namespace mixlab::store
