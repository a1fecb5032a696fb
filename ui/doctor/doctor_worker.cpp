#include "ui/doctor/doctor_worker.h"

#include <QMetaObject>
#include <QStringList>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "app/store/doctor_keeper.h"
#include "app/store/run_recorder.h"
#include "engine/backend/backend.h"
#include "engine/doctor/layer_cache.h"
#include "engine/doctor/local_profile.h"
#include "engine/doctor/report_json.h"
#include "ui/qt_text.h"

namespace mixlab::ui {
namespace {

// Progress lines at most this often: a step of a small model takes microseconds.
constexpr auto kProgressInterval = std::chrono::milliseconds(250);

// Hands the GUI thread a line of progress as each measured policy's run goes ("Measuring
// mixed_float16: step 12 of 30 (float32: median step 1.23 ms)"), on the worker thread.
class ProgressSink final : public RunSink {
 public:
  explicit ProgressSink(std::function<void(QString)> say) : say_(std::move(say)) {}

  // A policy's run starts.
  void begin(const RunConfig& config) {
    policy_ = qt_text(to_string(config.precision));
    steps_ = config.steps;
    last_ = {};
  }
  void on_step(const StepMetrics& step) override {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < kProgressInterval) return;
    last_ = now;
    QString text = DoctorWorker::tr("Measuring %1: step %2 of %3")
                       .arg(policy_)
                       .arg(step.step + 1)
                       .arg(steps_);
    if (!done_.isEmpty()) text += QStringLiteral(" (%1)").arg(done_.join(QStringLiteral(", ")));
    say_(text);
  }
  void on_finish(const RunSummary& summary) override {
    done_ << DoctorWorker::tr("%1: median step %2 ms")
                 .arg(policy_)
                 .arg(summary.median_step_ms, 0, 'f', 2);
    say_(done_.join(QStringLiteral(", ")));
  }

 private:
  std::function<void(QString)> say_;
  QString policy_;
  std::int64_t steps_ = 0;
  QStringList done_;  // each finished policy's median step
  std::chrono::steady_clock::time_point last_;
};

}  // namespace

DoctorWorker::DoctorWorker(QObject* parent) : QObject(parent) {}

DoctorWorker::~DoctorWorker() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

template <typename Deliver>
void DoctorWorker::post(int generation, Deliver deliver) {
  QMetaObject::invokeMethod(
      this,
      [this, generation, deliver = std::move(deliver)] {
        if (generation != generation_) return;
        busy_ = false;
        deliver();
      },
      Qt::QueuedConnection);
}

template <typename Job>
void DoctorWorker::start(Job job) {
  if (thread_.joinable()) thread_.join();
  cancel_ = false;
  busy_ = true;
  thread_ = std::jthread(std::move(job));
}

bool DoctorWorker::profile_device(const DoctorDevice& device) {
  if (busy_) return false;
  task_ = Task::profiling;
  const int generation = ++generation_;
  start([this, generation, name = device.backend_device, threads = device.threads,
         info = device.info] {
    const QString id = QString::fromStdString(name);
    try {
      bool measured_now = false;
      std::string not_measured;
      const doctor::DeviceProfile profile =
          name == "cpu"
              ? doctor::local_cpu_profile(threads, doctor::default_cpu_profile_cache(), false,
                                          &measured_now)
              : doctor::local_gpu_profile(std::stoi(name.substr(name.find(':') + 1)), info,
                                          doctor::default_gpu_profile_cache(), false,
                                          &measured_now, &not_measured);
      post(generation, [this, id, profile, measured_now,
                        why = QString::fromStdString(not_measured)] {
        emit device_profiled(id, profile, measured_now, why);
      });
    } catch (const std::exception& e) {
      post(generation, [this, id, message = QString::fromUtf8(e.what())] {
        emit device_profile_failed(id, message);
      });
    }
  });
  return true;
}

bool DoctorWorker::measure(const doctor::DiagnosisInput& input, const std::string& device,
                           const doctor::MeasureOptions& options) {
  if (busy_) return false;
  task_ = Task::measuring;
  const int generation = ++generation_;
  start([this, generation, input, device, options = doctor::MeasureOptions(options),
         db = store_path_]() mutable {
    // Read only by the GUI thread's queued call.
    ProgressSink progress_sink([this, generation](QString text) {
      QMetaObject::invokeMethod(
          this,
          [this, generation, text = std::move(text)] {
            if (generation == generation_) emit progress(text);
          },
          Qt::QueuedConnection);
    });
    // Each policy's run also goes to the run store, as mixlab-cli doctor --measure keeps it.
    std::optional<store::DoctorKeeper> keeper;
    QString keep_error;
    if (!db.empty()) {
      try {
        keeper.emplace(db, input, input.spec.name.empty() ? "model" : input.spec.name, device);
      } catch (const std::exception& e) {
        keep_error = QString::fromUtf8(e.what());
      }
    }
    std::vector<std::unique_ptr<store::FanoutSink>> fanouts;
    options.also_to = [&](const RunConfig& config) -> RunSink* {
      progress_sink.begin(config);
      if (!keeper) return &progress_sink;
      fanouts.push_back(std::make_unique<store::FanoutSink>(
          std::initializer_list<RunSink*>{&progress_sink, keeper->begin_run(config)}));
      return fanouts.back().get();
    };
    try {
      BackendChoice choice = make_backend(device, input.run.threads, false);
      const doctor::Measurement m = doctor::measure(input, *choice.backend, options, cancel_);
      post(generation, [this, m, input] { emit measured(m, input); });
      if (keeper) {
        try {
          const doctor::Diagnosis d = doctor::diagnose(input, m);
          const std::int64_t report = keeper->keep_report(d, doctor::to_json(d).dump());
          const std::vector<std::int64_t> runs = keeper->run_ids();
          keep_error.clear();
          const QString text = tr("Kept in the history: runs %1 and %2, report %3")
                                   .arg(runs.at(0))
                                   .arg(runs.at(1))
                                   .arg(report);
          post(generation, [this, text] { emit kept(text, true); });
        } catch (const std::exception& e) {
          keep_error = QString::fromUtf8(e.what());
        }
      }
      if (!keep_error.isEmpty()) {
        post(generation, [this, keep_error] {
          emit kept(tr("Not kept in the history: %1").arg(keep_error), false);
        });
      }
    } catch (const std::exception& e) {
      const bool cancelled = cancel_;
      post(generation, [this, cancelled, message = QString::fromUtf8(e.what())] {
        emit measure_failed(message, cancelled);
      });
    }
  });
  return true;
}

bool DoctorWorker::time_layers(const doctor::DiagnosisInput& input, const std::string& device) {
  if (busy_) return false;
  task_ = Task::timing;
  const int generation = ++generation_;
  start([this, generation, input, device] {
    try {
      BackendChoice choice = make_backend(device, input.run.threads, false);
      doctor::LayerCacheUse use;
      const std::filesystem::path cache = doctor::default_layer_cache();
      const doctor::Measurement m =
          doctor::cached_bench_layers(input, *choice.backend, cache, false, cancel_, &use);
      QString note = use.timed == 0 ? tr("read from %1").arg(QString::fromStdString(cache.string()))
                                    : tr("timed now (%1 steps a policy), kept in %2")
                                          .arg(doctor::kLayerBenchSteps)
                                          .arg(QString::fromStdString(cache.string()));
      if (!use.note.empty()) note += QStringLiteral("; ") + QString::fromStdString(use.note);
      post(generation, [this, m, input, note] { emit layers_timed(m, input, note); });
    } catch (const std::exception& e) {
      post(generation, [this, input, message = QString::fromUtf8(e.what())] {
        emit timing_failed(message, input);
      });
    }
  });
  return true;
}

void DoctorWorker::cancel() {
  if (!measuring() && !timing()) return;
  const bool measurement = measuring();
  cancel_ = true;
  ++generation_;  // what the job still sends is dropped
  busy_ = false;
  if (measurement) emit measure_failed(tr("Cancelled"), true);
}

}  // namespace mixlab::ui

// The moc output compiled here rather than in the target's shared mocs_compilation.cpp, which
// would tie this file to every other moc'd header of mixlab_ui.
#include "moc_doctor_worker.cpp"
