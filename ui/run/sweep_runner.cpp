#include "ui/run/sweep_runner.h"

#include <QFileInfo>
#include <QThread>
#include <algorithm>
#include <cmath>
#include <utility>

#include "app/store/run_store.h"
#include "engine/core/error.h"
#include "engine/spec/shape_inference.h"
#include "engine/train/run_fields.h"
#include "resources/builtin_models.h"

namespace mixlab::ui {

SweepRunner::SweepRunner(std::filesystem::path db_path, app::RunController* controller,
                         Launch launch, QObject* parent)
    : QObject(parent),
      db_path_(std::move(db_path)),
      controller_(controller),
      launch_(std::move(launch)) {}

SweepRunner::~SweepRunner() = default;

void SweepRunner::set_editor_model(std::string name, ModelSpec spec,
                                   std::shared_ptr<const ModelWeights> weights) {
  editor_model_name_ = std::move(name);
  editor_model_ = std::move(spec);
  editor_weights_ = std::move(weights);
}

bool SweepRunner::open_store() {
  if (store_) return true;
  try {
    store_ = std::make_unique<store::RunStore>(store::RunStore::open(db_path_));
  } catch (const std::exception& e) {
    error_ = tr("Cannot open the run history: %1").arg(QString::fromUtf8(e.what()));
    return false;
  }
  return true;
}

std::int64_t SweepRunner::start(const store::SweepSpec& spec) {
  error_.clear();
  if (active()) {
    error_ = tr("A sweep is running: stop it first");
    return 0;
  }
  if (!open_store()) return 0;
  try {
    const std::int64_t id = store::insert_sweep(*store_, store::planned_sweep(spec));
    spec_ = spec;
    return run_from_here(id) ? id : 0;
  } catch (const std::exception& e) {
    error_ = QString::fromUtf8(e.what());
    return 0;
  }
}

bool SweepRunner::resume(std::int64_t sweep_id) {
  error_.clear();
  if (active()) {
    error_ = tr("A sweep is running: stop it first");
    return false;
  }
  if (!open_store()) return false;
  try {
    const std::optional<store::SweepRecord> sweep = store::find_sweep(*store_, sweep_id);
    if (!sweep) throw store::StoreError("no sweep " + std::to_string(sweep_id));
    if (sweep->executor != "local")
      throw store::StoreError("a Slurm sweep resumes with mixlab-cli sweep resume");
    spec_ = store::parse_sweep_json(sweep->spec_json, "sweep " + std::to_string(sweep_id));
    store::claim_sweep(*store_, sweep_id);  // throws while another live process runs it
    store::settle_running_members(*store_, sweep_id);  // members a killed process left running
    return run_from_here(sweep_id);
  } catch (const std::exception& e) {
    error_ = QString::fromUtf8(e.what());
    return false;
  }
}

bool SweepRunner::run_from_here(std::int64_t sweep_id) {
  sweep_id_ = sweep_id;
  models_.clear();
  stopping_ = false;
  member_ = -1;
  member_seconds_ = 0.0;
  timed_ = 0;
  run_next();
  return error_.isEmpty();
}

void SweepRunner::stop() {
  if (!active()) return;
  stopping_ = true;
  controller_->stop();
}

void SweepRunner::run_next() {
  for (;;) {
    const store::SweepRecord sweep = *store::find_sweep(*store_, sweep_id_);
    const int total = static_cast<int>(sweep.members.size());
    const int planned = sweep.count(store::MemberState::planned);
    const double each = timed_ > 0 ? member_seconds_ / timed_ : NAN;
    emit progress(sweep_id_, total - planned, total, each * planned);
    const store::SweepMemberRecord* next = nullptr;
    for (const store::SweepMemberRecord& m : sweep.members) {
      if (m.state == store::MemberState::planned) {
        next = &m;
        break;
      }
    }
    if (next == nullptr) {
      finish(store::SweepState::finished, "");
      return;
    }
    if (stopping_) {
      finish(store::SweepState::stopped, "stopped; Resume in the Sweeps tab continues it");
      return;
    }
    app::RunRequest request;
    try {
      request = request_for(store::parse_sweep_member(next->settings_json));
    } catch (const Error& e) {
      // A model that is gone, a setting this version refuses: the member fails, the rest run.
      store::set_member(*store_, sweep_id_, next->member, store::MemberState::failed, std::nullopt,
                        e.what());
      emit member_ended(sweep_id_);
      continue;
    }
    member_ = next->member;
    member_uid_ = store::new_uid();
    store::start_member(*store_, sweep_id_, member_, member_uid_);
    request.uid = member_uid_;
    request.tags = {"sweep-" + std::to_string(sweep_id_)};
    member_started_ = std::chrono::steady_clock::now();
    if (!launch_(std::move(request))) {
      store::set_member(*store_, sweep_id_, member_, store::MemberState::planned, std::nullopt, "");
      member_ = -1;
      error_ = tr("The sweep could not start a run");
      finish(store::SweepState::stopped, "a run could not start");
      return;
    }
    return;
  }
}

void SweepRunner::queue_finished() {
  if (!active() || member_ < 0) return;
  const int member = std::exchange(member_, -1);
  try {
    const store::MemberOutcome outcome =
        store::member_outcome(store::find_run_by_uid(*store_, member_uid_),
                              {store::MemberState::failed, {}, "the run could not be recorded"});
    const store::MemberState state = outcome.state;
    if (state == store::MemberState::planned) stopping_ = true;  // the run was stopped
    if (state == store::MemberState::done) {
      member_seconds_ +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - member_started_).count();
      ++timed_;
    }
    store::end_member(*store_, sweep_id_, member, outcome);
    emit member_ended(sweep_id_);
    run_next();
  } catch (const std::exception& e) {
    error_ = QString::fromUtf8(e.what());
    sweep_id_ = 0;  // the store is unusable: leave the sweep as it is recorded
    emit sweep_ended(0, QStringLiteral("failed"));
  }
}

void SweepRunner::finish(store::SweepState state, const std::string& message) {
  const std::int64_t id = std::exchange(sweep_id_, 0);
  store::set_sweep_state(*store_, id, state, message);
  emit sweep_ended(id, QString::fromUtf8(store::to_string(state).data()));
}

const ImportedModel& SweepRunner::model(const std::string& name) const {
  if (const auto it = models_.find(name); it != models_.end()) return it->second;
  ImportedModel model;
  if (name == editor_model_name_) {
    model.spec = editor_model_;
    model.weights = editor_weights_;
  } else if (const auto json = builtin_model_json(name)) {
    model.spec = parse_model_json(*json, "built-in model " + quote(name));
  } else if (std::error_code ec; std::filesystem::exists(name, ec)) {
    model = load_model_source(name);  // MixLab or Keras, as mixlab-cli train reads it
  } else {
    throw SpecError("sweep model " + quote(name) +
                    ": no model file and no built-in model of that name");
  }
  return models_.emplace(name, std::move(model)).first->second;
}

app::RunRequest SweepRunner::request_for(const store::SweepMember& member) const {
  app::RunRequest r;
  const ImportedModel& source = model(member.model);
  r.spec = source.spec;
  r.config.initial_weights = source.weights;  // a .keras member's, as its train run would have
  r.model_name = r.spec.name.empty()
                     ? QFileInfo(QString::fromStdString(member.model)).baseName().toStdString()
                     : r.spec.name;
  // The member's settings in table order (a later field's own value wins over what an earlier
  // one implies), the rest at their defaults: the sweep recorded every setting that was not.
  for (const RunField& field : run_fields()) {
    if (field.cli_flag.empty()) continue;
    const std::string value = member.value(field.cli_flag);
    if (!value.empty()) set_field_text(field, r.config, value);
  }
  if (r.config.threads == 0) r.config.threads = std::max(1, QThread::idealThreadCount() - 1);
  // A synthetic set takes each model's input shape and outputs, as the run panel's does.
  if (r.config.dataset.kind == DatasetSpec::Kind::synthetic ||
      r.config.dataset.kind == DatasetSpec::Kind::tokens) {
    r.config.dataset =
        synthetic_for_model(r.spec, infer_shapes(r.spec), r.config.dataset.train_size);
  }
  r.device = spec_.device == "auto" ? "cpu" : spec_.device;
  return r;
}

}  // namespace mixlab::ui
