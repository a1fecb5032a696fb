#include "ui/doctor/doctor_runs.h"

#include <QCoreApplication>
#include <algorithm>
#include <vector>

#include "app/store/run_store.h"
#include "engine/train/stats.h"

namespace mixlab::ui {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("DoctorRuns", text); }

double median_after(std::vector<double> v, std::int64_t warmup) {
  const auto skip = std::min<std::int64_t>(warmup, static_cast<std::int64_t>(v.size()));
  if (static_cast<std::int64_t>(v.size()) <= skip) return 0.0;
  v.erase(v.begin(), v.begin() + skip);
  return quantile(std::move(v), 0.5);
}

doctor::MeasuredRun measured_run(store::RunStore& store, const store::RunRecord& r) {
  doctor::MeasuredRun m;
  m.policy = r.config.precision;
  m.run_id = std::to_string(r.id);
  const std::vector<StepMetrics> steps = store.steps(r.id);
  std::vector<double> wait, fwd, bwd, opt;
  double last_scale = 0;
  for (const StepMetrics& s : steps) {
    wait.push_back(s.data_wait_ms);
    fwd.push_back(s.forward_ms);
    bwd.push_back(s.backward_ms);
    opt.push_back(s.optimizer_ms);
    if (&s == &steps.front()) {
      m.initial_loss_scale = s.loss_scale;
      m.first_step_skipped = s.skipped;
    } else if (s.loss_scale < last_scale) {
      ++m.scale_halvings;
    }
    last_scale = s.loss_scale;
  }
  const std::int64_t warm = r.summary.warmup_steps;
  m.steps = static_cast<std::int64_t>(steps.size());
  m.step_ms = r.summary.median_step_ms;
  m.data_wait_ms = median_after(wait, warm);
  m.forward_ms = median_after(fwd, warm);
  m.backward_ms = median_after(bwd, warm);
  m.optimizer_ms = median_after(opt, warm);
  m.skipped_steps = r.summary.skipped_steps;
  m.final_loss_scale = r.summary.final_loss_scale;
  for (const store::LayerTimeSummary& l : store.layer_times(r.id)) {
    const auto i = static_cast<std::size_t>(l.layer);
    m.layer_forward_ms.resize(std::max(m.layer_forward_ms.size(), i + 1), 0.0);
    m.layer_backward_ms.resize(m.layer_forward_ms.size(), 0.0);
    m.layer_forward_ms[i] = l.forward_ms;
    m.layer_backward_ms[i] = l.backward_ms;
  }
  return m;
}

}  // namespace

std::optional<RunPair> load_run_pair(const std::filesystem::path& db, qint64 float32_run,
                                     qint64 mixed_run, QString* error) {
  try {
    store::RunStore store = store::RunStore::open(db, {.read_only = true});
    const store::RunRecord f32 = store.run(float32_run);
    const store::RunRecord mixed = store.run(mixed_run);
    if (f32.config.precision != Policy::float32 || mixed.config.precision == Policy::float32 ||
        f32.model_json != mixed.model_json || f32.config.batch_size != mixed.config.batch_size) {
      *error = tr("Runs %1 and %2 are not a float32 and a mixed run of one model and batch size")
                   .arg(float32_run)
                   .arg(mixed_run);
      return std::nullopt;
    }
    if (!(f32.summary.median_step_ms > 0) || !(mixed.summary.median_step_ms > 0)) {
      *error = tr("Runs %1 and %2 need measured steps to be diagnosed")
                   .arg(float32_run)
                   .arg(mixed_run);
      return std::nullopt;
    }
    RunPair pair;
    pair.float32_run = float32_run;
    pair.mixed_run = mixed_run;
    pair.spec = parse_model_json(mixed.model_json, "run " + std::to_string(mixed_run));
    pair.run = mixed.config;
    pair.mixed = mixed.config.precision;
    pair.device = mixed.device;
    pair.measured.float32 = measured_run(store, f32);
    pair.measured.mixed = measured_run(store, mixed);
    return pair;
  } catch (const std::exception& e) {
    *error = QString::fromUtf8(e.what());
    return std::nullopt;
  }
}

}  // namespace mixlab::ui
