#include "app/run/run_controller.h"

#include <QMetaType>
#include <exception>
#include <memory>

#include "app/store/run_recorder.h"
#include "app/store/run_store.h"
#include "engine/backend/backend.h"
#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/spec/layer_text.h"
#include "engine/train/run_fields.h"
#include "engine/train/trainer.h"

namespace mixlab::app {

// The trainer's sink on the worker thread: appends every event of the run to the controller's
// buffer, in the order the trainer reports them (no signal per step).
class RunController::BufferSink final : public RunSink {
 public:
  BufferSink(RunController& owner, std::int64_t run_id, QString name, const ModelSpec& spec)
      : owner_(owner), run_id_(run_id), name_(std::move(name)), spec_(spec) {}

  void on_start(const RunInfo& info) override {
    StartedRun started;
    started.run_id = run_id_;
    started.name = name_;
    started.device_name = QString::fromStdString(info.device.name);
    started.total_steps = info.total_steps;
    started.steps_per_epoch = info.steps_per_epoch;
    started.memory_bytes = info.memory.total();
    for (const std::string& note : info.notes) started.notes << QString::fromStdString(note);
    for (std::size_t i = 0; i < spec_.layers.size(); ++i) {
      started.layer_titles << QString::fromStdString(layer_title(spec_, static_cast<int>(i)));
    }
    owner_.push(std::move(started));
  }
  void on_step(const StepMetrics& step) override { owner_.push_step(run_id_, step); }
  void on_epoch(const EpochMetrics& epoch) override {
    owner_.push(MetricsBatch{run_id_, {}, {epoch}});
  }
  void on_layer_overflows(std::int64_t step, const std::vector<LayerOverflow>& layers) override {
    owner_.push(LayerOverflows{run_id_, step, layers});
  }
  void on_layer_timings(std::int64_t step, const std::vector<LayerTiming>& layers) override {
    owner_.push(LayerTimes{run_id_, step, layers});
  }
  void on_fp8_tensors(std::int64_t step, const std::vector<Fp8TensorStep>& tensors) override {
    owner_.push(Fp8Tensors{run_id_, step, tensors});
  }

 private:
  RunController& owner_;
  std::int64_t run_id_;
  QString name_;
  const ModelSpec& spec_;
};

RunController::RunController(std::filesystem::path db_path, QObject* parent)
    : QObject(parent), db_path_(std::move(db_path)) {
  qRegisterMetaType<StartedRun>();
  qRegisterMetaType<RunSummary>();
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

std::vector<RunEvent> RunController::take_events() {
  std::vector<RunEvent> taken;
  std::lock_guard lock(buffer_mutex_);
  taken.swap(buffer_);
  return taken;
}

void RunController::push(RunEvent event) {
  bool was_empty = false;
  {
    std::lock_guard lock(buffer_mutex_);
    was_empty = buffer_.empty();
    buffer_.push_back(std::move(event));
  }
  if (was_empty) emit events_ready();  // queued to the GUI thread
}

void RunController::push_step(std::int64_t run_id, const StepMetrics& step) {
  {
    std::lock_guard lock(buffer_mutex_);
    if (!buffer_.empty()) {
      auto* last = std::get_if<MetricsBatch>(&buffer_.back());
      if (last != nullptr && last->run_id == run_id && last->epochs.empty()) {
        last->steps.push_back(step);
        return;
      }
    }
  }
  push(MetricsBatch{run_id, {step}, {}});
}

void RunController::worker(std::vector<RunRequest> runs) {
  QList<qint64> ids;
  for (const RunRequest& request : runs) {
    if (cancel_.load()) break;  // Stop drops the runs still queued
    const std::int64_t id = run_one(request);
    if (id != 0) ids.push_back(id);
  }
  busy_.store(false);
  push(QueueFinished{ids});
}

std::int64_t RunController::run_one(const RunRequest& request) {
  RunSummary summary;
  summary.status = RunStatus::failed;
  std::optional<store::RunRecorder> recorder;
  std::string display_name;
  // No fallback: a GPU run that cannot start fails with the reason (the panel only starts a GPU
  // run when the CUDA backend is available; this catches what changed since). The failure is
  // recorded with the run.
  std::unique_ptr<Backend> backend;
  std::exception_ptr no_backend;
  try {
    backend = make_backend(request.device, request.config.threads, false).backend;
  } catch (const std::exception&) {
    no_backend = std::current_exception();
  }
  // The settings as the device runs them, the engine's one rule (mixlab-cli train records a
  // CPU run alike): on the CPU without the GPU options.
  const RunConfig config =
      backend ? applicable_config(request.config, backend->device()) : request.config;
  try {
    if (!writer_) writer_ = std::make_unique<store::StoreWriter>(db_path_);
    store::RunRecord record;
    record.name = request.name;
    record.model_name = request.model_name;
    record.model_json = to_json(request.spec);
    record.config = config;
    record.device = request.device;
    record.tags = request.tags;
    record.uid = request.uid;
    // Not a setting but part of what the run was: the history says where its weights came from.
    if (request.config.initial_weights) {
      record.note = "starting weights from " + request.config.initial_weights->origin;
    }
    record.environment.mixlab_version = MIXLAB_VERSION;
    if (record.name.empty()) record.name = store::default_run_name(record);
    display_name = record.name;
    recorder.emplace(*writer_, std::move(record));
  } catch (const std::exception& e) {
    // Without a store the run cannot be kept; the GUI still hears why.
    summary.message = std::string("the run could not be recorded: ") + e.what();
    push(RunFinished{0, summary});
    return 0;
  }
  const std::int64_t id = recorder->run_id();
  const QString name = QString::fromStdString(display_name);
  try {
    if (!backend) std::rethrow_exception(no_backend);
    const DatasetPair data = load_dataset(config.dataset);
    BufferSink buffer(*this, id, name, request.spec);
    store::FanoutSink sink{&buffer, &*recorder};
    summary = train(request.spec, config, data, *backend, sink, cancel_);
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
  push(RunFinished{id, summary});
  return id;
}

}  // namespace mixlab::app
