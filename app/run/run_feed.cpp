#include "app/run/run_feed.h"

#include <QTimer>

namespace mixlab::app {

namespace {

// Overloads for std::visit.
template <class... F>
struct Visitor : F... {
  using F::operator()...;
};
template <class... F>
Visitor(F...) -> Visitor<F...>;

}  // namespace

RunFeed::RunFeed(RunController* controller, QObject* parent)
    : QObject(parent), controller_(controller), timer_(new QTimer(this)) {
  timer_->setSingleShot(true);
  timer_->setInterval(kDrainIntervalMs);
  connect(timer_, &QTimer::timeout, this, &RunFeed::drain);
  connect(controller_, &RunController::events_ready, this, [this] {
    if (!timer_->isActive()) timer_->start();
  });
}

void RunFeed::drain() {
  timer_->stop();
  for (const RunEvent& event : controller_->take_events()) {
    std::visit(Visitor{
                   [this](const StartedRun& e) { emit run_started(e); },
                   [this](const MetricsBatch& e) { emit metrics(e); },
                   [this](const LayerTimes& e) { emit layer_times(e); },
                   [this](const LayerOverflows& e) { emit layer_overflows(e); },
                   [this](const Fp8Tensors& e) { emit fp8_tensors(e); },
                   [this](const RunFinished& e) { emit run_finished(e.run_id, e.summary); },
                   [this](const QueueFinished& e) { emit queue_finished(e.run_ids); },
               },
               event);
  }
}

}  // namespace mixlab::app
