// The doctor's measurement: float32 against a mixed policy on a device, same model, batch, seed
// and synthetic data shaped like the model's input, each policy's per-layer and per-phase times
// with the warm-up left out (mixed_float16 with Keras's dynamic loss scaling).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "engine/backend/backend.h"
#include "engine/doctor/diagnosis.h"
#include "engine/train/run_types.h"

namespace mixlab::doctor {

// The measurement's own settings; the rest of each run's are the input's (DiagnosisInput::run).
struct MeasureOptions {
  std::int64_t steps = 30;
  int warmup = 5;
  bool layer_timing = true;
  // Where each policy's run also goes, given its configuration (the CLI records the runs in the
  // run store): every figure of the run, as train() gives a RunSink. Null: nowhere else.
  std::function<RunSink*(const RunConfig&)> also_to;
};

// The RunConfig a measured policy runs with: the input's run with the policy, Keras's loss
// scaling for it, the options' length, warm-up and layer timing, no evaluation, and synthetic
// data shaped like the model's input.
RunConfig measure_config(const DiagnosisInput& input, Policy policy, const MeasureOptions& options);

// One policy's measured run, with measure_config as the device applies it (applicable_config:
// what also_to receives). Throws BackendError naming the policy when the run fails.
MeasuredRun measure_policy(const DiagnosisInput& input, Policy policy, Backend& backend,
                           const MeasureOptions& options, const std::atomic<bool>& cancel);

// float32, then the input's mixed policy (and mixed_float8's baseline, mixed_bfloat16).
Measurement measure(const DiagnosisInput& input, Backend& backend, const MeasureOptions& options,
                    const std::atomic<bool>& cancel);

// The doctor's micro-benchmark of the model on this device: each policy's layers timed at their
// exact shapes, layout and batch (forward and backward, casts included, per Keras layer) over
// a few training steps on synthetic data, the warm-up left out, nothing recorded: seconds for
// the models MixLab trains on a CPU. diagnose() sets them over the roofline's predictions.
inline constexpr std::int64_t kLayerBenchSteps = 20;
inline constexpr int kLayerBenchWarmup = 5;
Measurement bench_layers(const DiagnosisInput& input, Backend& backend,
                         const std::atomic<bool>& cancel);
// One policy's part of it.
MeasuredRun bench_layers(const DiagnosisInput& input, Policy policy, Backend& backend,
                         const std::atomic<bool>& cancel);

}  // namespace mixlab::doctor
