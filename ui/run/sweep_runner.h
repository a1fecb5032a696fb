// Runs a sweep in the GUI: its members one at a time through the window's run controller, as
// ordinary runs (the live charts follow each), recording each member's state in the run store as
// `mixlab-cli sweep` does (app/cli/sweep_local.cpp): a new uid per try written before the run
// starts, the member's state from its run's status when it ends. Stop stops the run in progress
// and the sweep (stopped, the member planned again); resume() runs the members still planned.
#pragma once

#include <QObject>
#include <QString>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "app/run/run_controller.h"
#include "app/store/sweep_plan.h"
#include "app/store/sweeps.h"
#include "engine/interop/keras_model.h"

namespace mixlab::ui {

class SweepRunner : public QObject {
  Q_OBJECT

 public:
  // `launch` starts a run the way the window starts one (false: it could not start).
  using Launch = std::function<bool(app::RunRequest)>;
  SweepRunner(std::filesystem::path db_path, app::RunController* controller, Launch launch,
              QObject* parent = nullptr);
  ~SweepRunner() override;

  // The editor's model, looked up by this name before built-in models and files (it may be
  // unsaved). Taken as it is when a sweep starts or resumes.
  void set_editor_model(std::string name, ModelSpec spec,
                        std::shared_ptr<const ModelWeights> weights = nullptr);

  // Records the sweep and starts its first member; the sweep's id, or 0 (error() says why).
  std::int64_t start(const store::SweepSpec& spec);
  // Runs a stopped sweep's planned members; false (error() says why) when it cannot.
  bool resume(std::int64_t sweep_id);
  // Stops the member in progress and the sweep after it.
  void stop();
  // The window's run queue ended (the member's run, recorded): records the member, starts the
  // next one.
  void queue_finished();

  bool active() const { return sweep_id_ != 0; }
  std::int64_t sweep_id() const { return sweep_id_; }
  QString error() const { return error_; }

 signals:
  // Members ended (done or failed) of all, and the time the rest should take (NaN: unknown).
  void progress(qint64 sweep_id, int ended, int total, double seconds_left);
  void member_ended(qint64 sweep_id);
  void sweep_ended(qint64 sweep_id, const QString& state);

 private:
  bool open_store();
  bool run_from_here(std::int64_t sweep_id);
  void run_next();
  void finish(store::SweepState state, const std::string& message);
  app::RunRequest request_for(const store::SweepMember& member) const;
  const ImportedModel& model(const std::string& name) const;  // throws SpecError

  std::filesystem::path db_path_;
  app::RunController* controller_;
  Launch launch_;
  std::unique_ptr<store::RunStore> store_;
  std::string editor_model_name_;
  ModelSpec editor_model_;
  std::shared_ptr<const ModelWeights> editor_weights_;  // an imported model's, while they fit
  // This run of the sweep's models, resolved once (a Keras file's with its starting weights).
  mutable std::map<std::string, ImportedModel> models_;

  std::int64_t sweep_id_ = 0;  // 0: none running
  store::SweepSpec spec_;
  int member_ = -1;  // the member whose run is in progress
  std::string member_uid_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point member_started_;
  double member_seconds_ = 0.0;  // of the members done in this session
  int timed_ = 0;
  QString error_;
};

}  // namespace mixlab::ui
