#include "engine/doctor/measure.h"

#include <algorithm>

#include "engine/data/dataset.h"
#include "engine/spec/shape_inference.h"
#include "engine/train/run_fields.h"
#include "engine/train/stats.h"
#include "engine/train/trainer.h"

namespace mixlab::doctor {

namespace {

double median_after(const std::vector<double>& v, std::int64_t warmup) {
  const auto skip = std::min<std::int64_t>(warmup, static_cast<std::int64_t>(v.size()));
  if (static_cast<std::int64_t>(v.size()) <= skip) return 0.0;
  return quantile(std::vector<double>(v.begin() + skip, v.end()), 0.5);
}

// Keeps every step's parts and layer times for their medians, and passes everything on to
// `also` (when there is one).
class MeasureSink final : public RunSink {
 public:
  explicit MeasureSink(RunSink* also) : also_(also) {}
  void on_start(const RunInfo& info) override {
    if (also_ != nullptr) also_->on_start(info);
  }
  void on_step(const StepMetrics& s) override {
    if (steps.empty()) {
      initial_scale = s.loss_scale;
      first_skipped = s.skipped;
    } else if (s.loss_scale < last_scale) {
      ++halvings;
    }
    last_scale = s.loss_scale;
    steps.push_back(s);
    if (also_ != nullptr) also_->on_step(s);
  }
  void on_epoch(const EpochMetrics& epoch) override {
    if (also_ != nullptr) also_->on_epoch(epoch);
  }
  void on_layer_timings(std::int64_t step, const std::vector<LayerTiming>& layers) override {
    for (const LayerTiming& t : layers) {
      const auto i = static_cast<std::size_t>(t.layer);
      if (forward.size() <= i) {
        forward.resize(i + 1);
        backward.resize(i + 1);
      }
      forward[i].push_back(t.forward_ms);
      backward[i].push_back(t.backward_ms);
    }
    if (also_ != nullptr) also_->on_layer_timings(step, layers);
  }
  void on_fp8_tensors(std::int64_t step, const std::vector<Fp8TensorStep>& tensors) override {
    for (const Fp8TensorStep& t : tensors) {
      if (t.values <= 0) continue;
      const double share = static_cast<double>(t.saturated) / static_cast<double>(t.values);
      auto it = std::find_if(fp8.begin(), fp8.end(),
                             [&](const Fp8Saturation& s) { return s.layer == t.layer; });
      if (it == fp8.end()) {
        fp8.push_back({t.layer, std::string(to_string(t.role)), share, step});
      } else if (share > it->share) {
        *it = {t.layer, std::string(to_string(t.role)), share, step};
      }
    }
    if (also_ != nullptr) also_->on_fp8_tensors(step, tensors);
  }
  void on_finish(const RunSummary& summary) override {
    if (also_ != nullptr) also_->on_finish(summary);
  }

  std::vector<StepMetrics> steps;
  std::vector<std::vector<double>> forward, backward;
  std::vector<Fp8Saturation> fp8;
  double initial_scale = 1.0, last_scale = 1.0;
  int halvings = 0;
  bool first_skipped = false;

 private:
  RunSink* also_;
};

}  // namespace

RunConfig measure_config(const DiagnosisInput& input, Policy policy,
                         const MeasureOptions& options) {
  const ShapeTable table = infer_shapes(input.spec);
  // The run's own settings (batch size, optimizer, seed, threads, GPU options, and any the
  // field table gains), then what the measurement sets itself.
  RunConfig config = input.run;
  config.precision = policy;
  config.loss_scale = LossScaleConfig::keras_default(policy);
  config.steps = options.steps;
  // Eight batches of distinct samples (as mixlab-cli bench), passed over as often as needed.
  constexpr std::int64_t kBatches = 8;
  config.epochs = static_cast<int>((options.steps + kBatches - 1) / kBatches);
  config.evaluate = false;
  config.warmup_steps = options.warmup;
  config.layer_timing = options.layer_timing;
  config.initial_weights = nullptr;  // the seed's: a suggested change may reshape a layer
  config.dataset = synthetic_for_model(input.spec, table, kBatches * input.run.batch_size);
  return config;
}

MeasuredRun measure_policy(const DiagnosisInput& input, Policy policy, Backend& backend,
                           const MeasureOptions& options, const std::atomic<bool>& cancel) {
  const RunConfig config =
      applicable_config(measure_config(input, policy, options), backend.device());
  const DatasetPair data = load_dataset(config.dataset);
  MeasureSink sink(options.also_to ? options.also_to(config) : nullptr);
  const RunSummary s = train(input.spec, config, data, backend, sink, cancel);
  if (s.status != RunStatus::finished) {
    throw BackendError(std::string(to_string(policy)) + " at batch " +
                       std::to_string(input.run.batch_size) + " " + std::string(to_string(s.status)) +
                       ": " + s.message);
  }
  MeasuredRun m;
  m.policy = policy;
  const std::int64_t warm = s.warmup_steps;
  std::vector<double> step, wait, fwd, bwd, opt;
  for (const StepMetrics& st : sink.steps) {
    step.push_back(st.step_ms);
    wait.push_back(st.data_wait_ms);
    fwd.push_back(st.forward_ms);
    bwd.push_back(st.backward_ms);
    opt.push_back(st.optimizer_ms);
  }
  m.steps = s.steps;
  m.step_ms = s.median_step_ms;
  m.data_wait_ms = median_after(wait, warm);
  m.forward_ms = median_after(fwd, warm);
  m.backward_ms = median_after(bwd, warm);
  m.optimizer_ms = median_after(opt, warm);
  m.skipped_steps = s.skipped_steps;
  m.initial_loss_scale = sink.initial_scale;
  m.final_loss_scale = s.final_loss_scale;
  m.scale_halvings = sink.halvings;
  m.first_step_skipped = sink.first_skipped;
  m.fp8_saturation = std::move(sink.fp8);
  std::sort(m.fp8_saturation.begin(), m.fp8_saturation.end(),
            [](const Fp8Saturation& a, const Fp8Saturation& b) { return a.layer < b.layer; });
  for (std::size_t i = 0; i < sink.forward.size(); ++i) {
    m.layer_forward_ms.push_back(median_after(sink.forward[i], warm));
    m.layer_backward_ms.push_back(median_after(sink.backward[i], warm));
  }
  return m;
}

MeasuredRun bench_layers(const DiagnosisInput& input, Policy policy, Backend& backend,
                         const std::atomic<bool>& cancel) {
  MeasureOptions options;
  options.steps = kLayerBenchSteps;
  options.warmup = kLayerBenchWarmup;
  options.layer_timing = true;
  return measure_policy(input, policy, backend, options, cancel);
}

Measurement bench_layers(const DiagnosisInput& input, Backend& backend,
                         const std::atomic<bool>& cancel) {
  Measurement m;
  m.float32 = bench_layers(input, Policy::float32, backend, cancel);
  m.mixed = bench_layers(input, input.mixed, backend, cancel);
  if (input.mixed == Policy::mixed_float8) {
    m.baseline = bench_layers(input, Policy::mixed_bfloat16, backend, cancel);
  }
  return m;
}

Measurement measure(const DiagnosisInput& input, Backend& backend, const MeasureOptions& options,
                    const std::atomic<bool>& cancel) {
  Measurement m;
  m.float32 = measure_policy(input, Policy::float32, backend, options, cancel);
  m.mixed = measure_policy(input, input.mixed, backend, options, cancel);
  if (input.mixed == Policy::mixed_float8) {
    m.baseline = measure_policy(input, Policy::mixed_bfloat16, backend, options, cancel);
  }
  return m;
}

}  // namespace mixlab::doctor
