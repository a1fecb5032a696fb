// The Doctor tab's slow work, on a thread of its own so that the window stays responsive:
// measuring this CPU's roofs (a few seconds the first time; cached after) and the A/B
// measurement of float32 against the mixed policy on a device of this machine (seconds to
// minutes). One job at a time. Results reach the GUI thread as values through queued calls;
// those of a job cancelled since are dropped on arrival.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <filesystem>
#include <string>
#include <thread>

#include "engine/doctor/diagnosis.h"
#include "engine/doctor/measure.h"
#include "ui/doctor/doctor_devices.h"

namespace mixlab::ui {

class DoctorWorker : public QObject {
  Q_OBJECT

 public:
  explicit DoctorWorker(QObject* parent = nullptr);
  // Cancels the job and waits for its thread: a measurement stops within a step, a calibration
  // (which cannot be stopped) within its few seconds.
  ~DoctorWorker() override;

  bool busy() const { return busy_; }
  bool measuring() const { return busy_ && task_ == Task::measuring; }
  bool timing() const { return busy_ && task_ == Task::timing; }  // else busy: profiling a device

  // The profile of one of this machine's devices (doctor::local_cpu_profile or
  // local_gpu_profile, with the default caches): emits device_profiled, or
  // device_profile_failed. False, doing nothing, while a job runs.
  bool profile_device(const DoctorDevice& device);
  // doctor::measure of `input` on `device` ("cpu", "cuda:N"): emits progress as the runs go
  // (at most four times a second, and as each policy's run ends), then measured, or
  // measure_failed (cancelled when cancel() stopped it). False, doing
  // nothing, while a job runs.
  bool measure(const doctor::DiagnosisInput& input, const std::string& device,
               const doctor::MeasureOptions& options);
  // doctor::cached_bench_layers of `input` on `device` (each layer timed in both policies, or
  // read from ~/.cache/mixlab/layer-times.json): emits layers_timed, or timing_failed. False,
  // doing nothing, while a job runs.
  bool time_layers(const doctor::DiagnosisInput& input, const std::string& device);
  // Stops a measurement or a timing between steps and drops whatever it still sends (a
  // calibration goes on: its profile is worth having). A cancelled measurement emits
  // measure_failed(cancelled); a cancelled timing nothing (the view cancels it for a new input).
  void cancel();
  // Where measurements are kept (store::DoctorKeeper: both runs, tagged "doctor", and the
  // report, as mixlab-cli doctor --measure keeps them); empty: nowhere.
  void set_store_path(const std::filesystem::path& db) { store_path_ = db; }

 signals:
  // `backend_device` names the device ("cpu", "cuda:0"); `not_measured`, when not empty, why a
  // GPU's roofs are its published figures instead.
  void device_profiled(const QString& backend_device, const mixlab::doctor::DeviceProfile& profile,
                       bool measured_now, const QString& not_measured);
  void device_profile_failed(const QString& backend_device, const QString& message);
  void progress(const QString& text);
  void measured(const mixlab::doctor::Measurement& measurement,
                const mixlab::doctor::DiagnosisInput& input);
  void measure_failed(const QString& message, bool cancelled);
  // `note`: where the times came from ("read from PATH", "timed now"), and any cache problem.
  void layers_timed(const mixlab::doctor::Measurement& times,
                    const mixlab::doctor::DiagnosisInput& input, const QString& note);
  void timing_failed(const QString& message, const mixlab::doctor::DiagnosisInput& input);
  // After measured: where the measurement was kept ("runs 12 and 13, report 4 in PATH"), or why
  // it could not be (`ok` false); the measurement itself stands either way.
  void kept(const QString& text, bool ok);

 private:
  // Joins the last job's thread (done, or finishing a cancelled job) and starts `job` on a new
  // one; `job` hands results to the GUI thread with post().
  template <typename Job>
  void start(Job job);
  // Runs `deliver` on the GUI thread unless the job it belongs to was cancelled since.
  template <typename Deliver>
  void post(int generation, Deliver deliver);

  std::jthread thread_;
  std::atomic<bool> cancel_{false};
  int generation_ = 0;  // of the job whose results count (GUI thread only)
  bool busy_ = false;
  enum class Task { profiling, measuring, timing };
  Task task_ = Task::profiling;
  std::filesystem::path store_path_;  // copied into each measurement's job
};

}  // namespace mixlab::ui
