// The run controller: runs training on a worker thread, one queued run after another, records
// each in the run store (through the process's StoreWriter), and hands metrics to the GUI
// through a locked buffer the GUI drains on its own timer (take_metrics). Signals carry values,
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
};

// What the worker produced since the last take_metrics().
struct MetricsBatch {
  std::int64_t run_id = 0;  // 0: no run has produced anything yet
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
  QStringList notes;  // what the run's options did on its device (RunInfo::notes)
};

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

  // Takes what the worker produced since the last call, one batch per run in run order: the GUI
  // thread calls it on a 30–50 ms timer. It holds the lock only to swap a vector out.
  std::vector<MetricsBatch> take_metrics();

 signals:
  void run_started(const mixlab::app::StartedRun& run);
  // status is the stored one: finished, stopped, diverged or failed (with the message).
  void run_finished(qint64 run_id, const mixlab::RunSummary& summary);
  // Every run of one start() call has ended; ids in order (a run that could not even be
  // recorded has none).
  void queue_finished(const QList<qint64>& run_ids);

 private:
  class BufferSink;
  void worker(std::vector<RunRequest> runs);
  // Runs one request to its end; returns its run id (0 when it could not even be recorded).
  std::int64_t run_one(const RunRequest& request);
  // The buffer's batch for `run_id`, appended when the last one is another run's (lock held).
  MetricsBatch& batch_for(std::int64_t run_id);

  std::filesystem::path db_path_;
  std::unique_ptr<store::StoreWriter> writer_;  // the worker's; opened on first use
  std::thread thread_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> busy_{false};

  std::mutex buffer_mutex_;
  std::vector<MetricsBatch> buffer_;  // guarded by buffer_mutex_
};

}  // namespace mixlab::app

Q_DECLARE_METATYPE(mixlab::app::StartedRun)
Q_DECLARE_METATYPE(mixlab::RunSummary)
