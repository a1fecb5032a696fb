// The run controller: runs training on a worker thread, one queued run after another, records
// each in the run store (through the process's StoreWriter), and hands the GUI one ordered
// stream of events (a run's start, steps, epochs, layer times, finish; the queue's end) through
// a locked buffer the GUI drains on its own timer (take_events, RunFeed). Events are values,
// never pointers into live engine state. Qt Core only: no widgets.
#pragma once

#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "app/store/store_writer.h"
#include "engine/spec/model_spec.h"
#include "engine/train/run_types.h"

namespace mixlab::app {

struct RunRequest {
  ModelSpec spec;
  std::string model_name;
  RunConfig config;
  std::string device = "cpu";  // "cpu" or "cuda:N"
  std::string name;            // empty: the store's "<model> <precision> b<batch>"
  std::vector<std::string> tags;
  std::string uid;  // empty: a new one; a sweep member's run gets the uid it recorded first
};

// Steps or epochs of one run, as the live view takes them.
struct MetricsBatch {
  std::int64_t run_id = 0;
  std::vector<StepMetrics> steps;
  std::vector<EpochMetrics> epochs;
  bool empty() const { return steps.empty() && epochs.empty(); }
};

// A run as the GUI learns of it when it starts.
struct StartedRun {
  std::int64_t run_id = 0;
  QString name;
  QString device_name;
  std::int64_t total_steps = 0;
  std::int64_t steps_per_epoch = 0;
  std::int64_t memory_bytes = 0;
  QStringList notes;         // what the run's options did on its device (RunInfo::notes)
  QStringList layer_titles;  // every layer as the editor names it (engine/spec/layer_text.h)
};

// One event of a run queue, in the order the worker produced it: a run's start, its steps
// (consecutive ones in one event), epochs, per-layer times and finish, and the queue's end.
struct RunFinished {
  std::int64_t run_id = 0;  // 0: the run could not even be recorded
  RunSummary summary;       // its status is the stored one; the message says why it ended
};
struct LayerTimes {
  std::int64_t run_id = 0;
  std::int64_t step = 0;
  std::vector<LayerTiming> layers;
};
// A training step whose overflow check failed: its layers with non-finite gradients.
struct LayerOverflows {
  std::int64_t run_id = 0;
  std::int64_t step = 0;
  std::vector<LayerOverflow> layers;
};
// mixed_float8: a training step's FP8 tensors (StepResult::fp8).
struct Fp8Tensors {
  std::int64_t run_id = 0;
  std::int64_t step = 0;
  std::vector<Fp8TensorStep> tensors;
};
struct QueueFinished {
  QList<qint64> run_ids;  // in order; a run that could not even be recorded has none
};
using RunEvent = std::variant<StartedRun, MetricsBatch, LayerTimes, LayerOverflows, Fp8Tensors,
                              RunFinished, QueueFinished>;

class RunController : public QObject {
  Q_OBJECT

 public:
  // `db_path`: the run database. It is opened on first use; an error then reaches the GUI as a
  // failed run's message (the application stays up).
  explicit RunController(std::filesystem::path db_path, QObject* parent = nullptr);
  // Stops a run in progress (within one step) and waits for the worker.
  ~RunController() override;

  const std::filesystem::path& db_path() const { return db_path_; }

  // Runs these one after another (one for Start; two for the float32-vs-mixed A/B) on the
  // worker thread. Returns at once; false (nothing started) while runs are still going.
  bool start(std::vector<RunRequest> runs);
  // Stops the run in progress within one step (it is recorded as `stopped`) and drops the
  // queued ones.
  void stop();
  bool busy() const { return busy_.load(); }

  // Takes the events produced since the last call, in order: the GUI thread calls it (RunFeed)
  // on a 30-50 ms timer after events_ready(). It holds the lock only to swap a vector out.
  std::vector<RunEvent> take_events();

 signals:
  // Events wait in the buffer that was empty until now: emitted once until the next
  // take_events(), not per event (a run of 10,000 steps a second emits a few).
  void events_ready();

 private:
  class BufferSink;
  void worker(std::vector<RunRequest> runs);
  // Runs one request to its end; returns its run id (0 when it could not even be recorded).
  std::int64_t run_one(const RunRequest& request);
  // Appends an event (lock not held); steps of the run the last event holds join it.
  void push(RunEvent event);
  void push_step(std::int64_t run_id, const StepMetrics& step);

  std::filesystem::path db_path_;
  std::unique_ptr<store::StoreWriter> writer_;  // the worker's; opened on first use
  std::thread thread_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> busy_{false};

  std::mutex buffer_mutex_;
  std::vector<RunEvent> buffer_;  // guarded by buffer_mutex_
};

}  // namespace mixlab::app

Q_DECLARE_METATYPE(mixlab::app::StartedRun)
Q_DECLARE_METATYPE(mixlab::RunSummary)
