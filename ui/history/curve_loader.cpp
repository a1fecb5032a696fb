#include "ui/history/curve_loader.h"

#include <QMetaObject>
#include <exception>
#include <memory>
#include <utility>

#include "app/store/run_store.h"

namespace mixlab::ui {

namespace {

// Thrown from inside for_each_step to leave a cancelled read at once.
struct Cancelled {};

}  // namespace

CurveLoader::CurveLoader(std::filesystem::path db_path, QObject* parent)
    : QObject(parent), db_path_(std::move(db_path)) {}

CurveLoader::~CurveLoader() {
  cancel();
}

void CurveLoader::cancel() {
  ++generation_;  // whatever the old thread already posted is dropped on arrival
  busy_ = false;
  if (worker_.joinable()) {
    worker_.request_stop();
    worker_.join();
  }
}

void CurveLoader::load(const QList<qint64>& run_ids, bool by_time) {
  cancel();
  busy_ = true;
  const int generation = generation_;
  // Runs on the GUI thread: results of a load cancelled since they were posted do not count.
  const auto post = [this, generation](auto deliver) {
    QMetaObject::invokeMethod(
        this,
        [this, generation, deliver = std::move(deliver)] {
          if (generation == generation_) deliver();
        },
        Qt::QueuedConnection);
  };
  worker_ = std::jthread([this, post, path = db_path_, run_ids, by_time](std::stop_token stop) {
    try {
      // Its own connection, read-only: a RunStore is used from one thread.
      store::RunStore store = store::RunStore::open(
          path, store::StoreOptions{.read_only = true, .mark_interrupted = false});
      for (const qint64 id : run_ids) {
        if (stop.stop_requested()) return;
        auto curves = std::make_shared<RunCurves>();
        curves->run_id = id;
        const auto count = std::size_t(store.step_count(id));
        curves->step_ms.reserve(count);
        curves->loss.reserve(count);
        store.for_each_step(id, [&](const StepMetrics& s) {
          if (stop.stop_requested()) throw Cancelled{};
          const double x = by_time ? s.wall_offset_s : double(s.step);
          curves->step_ms.emplace_back(x, s.step_ms);
          curves->loss.emplace_back(x, s.loss);
        });
        post([this, curves] { emit loaded(*curves); });
      }
      post([this] {
        busy_ = false;
        emit finished();
      });
    } catch (const Cancelled&) {
    } catch (const std::exception& e) {
      post([this, message = QString::fromUtf8(e.what())] {
        busy_ = false;
        emit failed(message);
      });
    }
  });
}

}  // namespace mixlab::ui
