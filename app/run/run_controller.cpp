#include "app/run/run_controller.h"

#include <QMetaType>

#include "app/store/run_recorder.h"
#include "app/store/run_store.h"
#include "engine/backend/backend.h"
#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"

namespace mixlab::app {

// The trainer's sink on the worker thread: appends to the locked buffer (no signal per step)
// and announces the run's start with its figures as values.
class RunController::BufferSink final : public RunSink {
 public:
  BufferSink(RunController& owner, std::int64_t run_id, QString name)
      : owner_(owner), run_id_(run_id), name_(std::move(name)) {}

  void on_start(const RunInfo& info) override {
    StartedRun started;
    started.run_id = run_id_;
    started.name = name_;
    started.device_name = QString::fromStdString(info.device.name);
    started.total_steps = info.total_steps;
    started.steps_per_epoch = info.steps_per_epoch;
    started.memory_bytes = info.memory.total();
    for (const std::string& note : info.notes) started.notes << QString::fromStdString(note);
    emit owner_.run_started(started);
  }
  void on_step(const StepMetrics& step) override {
    std::lock_guard lock(owner_.buffer_mutex_);
    owner_.batch_for(run_id_).steps.push_back(step);
  }
  void on_epoch(const EpochMetrics& epoch) override {
    std::lock_guard lock(owner_.buffer_mutex_);
    owner_.batch_for(run_id_).epochs.push_back(epoch);
  }

 private:
  RunController& owner_;
  std::int64_t run_id_;
  QString name_;
};

RunController::RunController(std::filesystem::path db_path, QObject* parent)
    : QObject(parent), db_path_(std::move(db_path)) {
  qRegisterMetaType<StartedRun>();
  qRegisterMetaType<RunSummary>();
  qRegisterMetaType<QList<qint64>>();
}

RunController::~RunController() {
  cancel_.store(true);
  if (thread_.joinable()) thread_.join();
}

bool RunController::start(std::vector<RunRequest> runs) {
  if (busy_.exchange(true)) return false;
  if (thread_.joinable()) thread_.join();  // the previous queue's thread has ended
  cancel_.store(false);
  thread_ = std::thread(&RunController::worker, this, std::move(runs));
  return true;
}

void RunController::stop() {
  cancel_.store(true);
}

std::vector<MetricsBatch> RunController::take_metrics() {
  std::vector<MetricsBatch> taken;
  std::lock_guard lock(buffer_mutex_);
  taken.swap(buffer_);
  return taken;
}

MetricsBatch& RunController::batch_for(std::int64_t run_id) {
  if (buffer_.empty() || buffer_.back().run_id != run_id) buffer_.push_back({run_id, {}, {}});
  return buffer_.back();
}

void RunController::worker(std::vector<RunRequest> runs) {
  QList<qint64> ids;
  for (const RunRequest& request : runs) {
    if (cancel_.load()) break;  // Stop drops the runs still queued
    const std::int64_t id = run_one(request);
    if (id != 0) ids.push_back(id);
  }
  busy_.store(false);
  emit queue_finished(ids);
}

std::int64_t RunController::run_one(const RunRequest& request) {
  RunSummary summary;
  summary.status = RunStatus::failed;
  std::optional<store::RunRecorder> recorder;
  std::string display_name;
  try {
    if (!writer_) writer_ = std::make_unique<store::StoreWriter>(db_path_);
    store::RunRecord record;
    record.name = request.name;
    record.model_name = request.model_name;
    record.model_json = to_json(request.spec);
    record.config = request.config;
    record.device = request.device;
    record.tags = request.tags;
    record.environment.mixlab_version = MIXLAB_VERSION;
    if (record.name.empty()) record.name = store::default_run_name(record);
    display_name = record.name;
    recorder.emplace(*writer_, std::move(record));
  } catch (const std::exception& e) {
    // Without a store the run cannot be kept; the GUI still hears why.
    summary.message = std::string("the run could not be recorded: ") + e.what();
    emit run_finished(0, summary);
    return 0;
  }
  const std::int64_t id = recorder->run_id();
  const QString name = QString::fromStdString(display_name);
  try {
    // No fallback: a GPU run that cannot start fails with the reason (the panel only starts a
    // GPU run when the CUDA backend is available; this catches what changed since).
    const BackendChoice choice = make_backend(request.device, request.config.threads, false);
    const DatasetPair data = load_dataset(request.config.dataset);
    BufferSink buffer(*this, id, name);
    store::FanoutSink sink{&buffer, &*recorder};
    summary = train(request.spec, request.config, data, *choice.backend, sink, cancel_);
  } catch (const std::exception& e) {
    // A dataset that cannot be read, a model that does not fit it: recorded as failed.
    summary = RunSummary{};
    summary.status = RunStatus::failed;
    summary.message = e.what();
    recorder->fail(summary.message);
  }
  try {
    writer_->flush();
  } catch (const std::exception& e) {
    summary.message += std::string(summary.message.empty() ? "" : "; ") +
                       "the run was not fully recorded: " + e.what();
  }
  emit run_finished(id, summary);
  return id;
}

}  // namespace mixlab::app
