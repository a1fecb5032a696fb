// The GUI's end of a RunController's event stream: after events_ready() it waits one drain
// interval (so that a fast run's steps arrive in bulk), takes every event in order and hands
// each on as a signal. The live view draws from it and the main window follows runs and queues
// through it: nothing relays metrics by hand, and a run's last steps are always handed on
// before its end. Connect with direct connections (the default within the GUI thread).
#pragma once

#include <QList>
#include <QObject>
#include <vector>

#include "app/run/run_controller.h"

class QTimer;

namespace mixlab::app {

class RunFeed : public QObject {
  Q_OBJECT

 public:
  static constexpr int kDrainIntervalMs = 40;  // 25 updates a second: smooth, cheap for the GUI

  explicit RunFeed(RunController* controller, QObject* parent = nullptr);

  // Takes and hands on what is waiting now (the timer does it; tests may too).
  void drain();

 signals:
  void run_started(const mixlab::app::StartedRun& run);
  void metrics(const mixlab::app::MetricsBatch& batch);
  void layer_times(const mixlab::app::LayerTimes& times);
  void layer_overflows(const mixlab::app::LayerOverflows& overflows);
  void fp8_tensors(const mixlab::app::Fp8Tensors& tensors);
  void run_finished(qint64 run_id, const mixlab::RunSummary& summary);
  void queue_finished(const QList<qint64>& run_ids);

 private:
  RunController* controller_;
  QTimer* timer_;
};

}  // namespace mixlab::app
