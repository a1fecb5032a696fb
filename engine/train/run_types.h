// What a training run is given (RunConfig) and what leaves it (per-step and per-epoch metrics,
// the summary), through a RunSink: the engine never prints.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/ops/optimizer.h"
#include "engine/ops/loss_scale.h"

namespace mixlab {

struct RunConfig {
  Policy precision = Policy::float32;
  LossScaleConfig loss_scale;  // none
  int batch_size = 32;
  int epochs = 1;
  std::int64_t steps =
      0;  // > 0: stop after this many steps (the epochs then only bound data passes)
  OptimizerConfig optimizer = default_optimizer(OptimizerKind::adam);
  std::uint64_t seed = 42;
  int threads = 0;  // 0: every core
  DatasetSpec dataset;
  bool evaluate = true;   // on the test split after each epoch
  int warmup_steps = 10;  // left out of step-time summaries (fewer when the run is short)
  // GPU options (the CPU backend ignores them):
  bool tf32 = false;            // float32 policy: TF32 tensor-core matmuls and convolutions
  bool cuda_graphs = false;     // capture the training step once and replay it
  bool data_on_device = false;  // keep the training split on the GPU when it fits
  AttentionKernels attention = AttentionKernels::automatic;  // MultiHeadAttention's cores
  Fp8Recipe fp8;  // mixed_float8: the delayed scaling (history, amax reduction, margin, formats)
  bool layer_timing = false;    // per-layer forward/backward device times (RunSink)
  // Not a run setting (run_fields.h): starting weights from an imported Keras model, written
  // over the seed's initialisation. Null: the seed's alone.
  std::shared_ptr<const ModelWeights> initial_weights;
};

enum class RunStatus : std::uint8_t { running, finished, stopped, diverged, failed };
std::string_view to_string(RunStatus status);

inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

struct StepMetrics {
  std::int64_t step = 0;       // 0-based over the run
  int epoch = 0;               // 0-based
  double wall_offset_s = 0.0;  // since the run started
  double step_ms = 0.0;        // wall-clock of the whole step, data wait included
  double data_wait_ms = 0.0;
  double forward_ms = 0.0;
  double backward_ms = 0.0;         // loss and backward
  double optimizer_ms = 0.0;        // overflow check, update, weight-copy refresh
  double device_ms = kNotMeasured;  // device-side time where the backend measures it
  double loss = 0.0;
  double accuracy = 0.0;
  double loss_scale = 1.0;  // the scale this step ran with
  bool skipped = false;     // update skipped: non-finite gradients
  int samples = 0;
};

struct EpochMetrics {
  int epoch = 0;
  std::int64_t steps = 0;
  double train_loss = 0.0;  // mean over the epoch's finite steps, weighted by samples
  double train_accuracy = 0.0;
  double test_loss = kNotMeasured;
  double test_accuracy = kNotMeasured;
  double time_s = 0.0;  // training, without evaluation
  double samples_per_s = 0.0;
};

struct RunInfo {
  std::string model_name;
  DeviceInfo device;
  MemoryPlan memory;
  ShapeTable table;
  std::int64_t total_steps = 0;
  std::int64_t steps_per_epoch = 0;
  std::int64_t train_samples = 0;
  std::int64_t test_samples = 0;
  std::vector<std::string> notes;  // what the run's options did here ("the training split is
                                   // kept on the device")
};

struct RunSummary {
  RunStatus status = RunStatus::running;
  std::string message;  // why it stopped, diverged or failed
  std::int64_t steps = 0;
  std::int64_t skipped_steps = 0;
  int epochs_completed = 0;
  double final_loss_scale = 1.0;
  std::int64_t warmup_steps = 0;  // left out of the step-time figures
  double median_step_ms = kNotMeasured;
  double p5_step_ms = kNotMeasured;
  double p95_step_ms = kNotMeasured;
  double samples_per_s = kNotMeasured;  // samples of the measured steps / their total time
  double final_loss = kNotMeasured;     // last epoch's train loss
  double final_accuracy = kNotMeasured;
  double test_loss = kNotMeasured;
  double test_accuracy = kNotMeasured;
  std::int64_t peak_memory_bytes = 0;  // the executor's arena
  std::int64_t diverged_at_step = -1;
  std::int64_t failed_allocation_bytes = 0;
  double wall_s = 0.0;
};

// Receives a run's results, on the thread that runs it. Implementations must be quick (buffer
// and hand off); the trainer waits for them.
class RunSink {
 public:
  virtual ~RunSink() = default;
  virtual void on_start(const RunInfo& info) { (void)info; }
  virtual void on_step(const StepMetrics& step) { (void)step; }
  virtual void on_epoch(const EpochMetrics& epoch) { (void)epoch; }
  // Per-layer device times of one step, with RunConfig::layer_timing on a backend that has them.
  virtual void on_layer_timings(std::int64_t step, const std::vector<LayerTiming>& layers) {
    (void)step;
    (void)layers;
  }
  // The layers with non-finite gradients on a training step whose overflow check failed
  // (StepResult::overflows), before that step's on_step.
  virtual void on_layer_overflows(std::int64_t step, const std::vector<LayerOverflow>& layers) {
    (void)step;
    (void)layers;
  }
  // mixed_float8: each FP8 tensor's figures of a training step (StepResult::fp8), before that
  // step's on_step.
  virtual void on_fp8_tensors(std::int64_t step, const std::vector<Fp8TensorStep>& tensors) {
    (void)step;
    (void)tensors;
  }
  virtual void on_finish(const RunSummary& summary) { (void)summary; }
};

}  // namespace mixlab
