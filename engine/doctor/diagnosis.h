// The doctor's diagnosis: the cost model run for float32 and a mixed policy on one device, the
// rules that explain the difference (each naming layers, figures, a cause, a fix and the gain
// the model predicts for it), measurement set beside prediction where there is one, and the
// verdict in plain words, first. Qt-free; mixlab-cli doctor and the Doctor tab present it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/doctor/confidence.h"
#include "engine/doctor/cost_model.h"

namespace mixlab::doctor {

enum class Severity : std::uint8_t { info, low, medium, high };
std::string_view to_string(Severity severity);

// A change the doctor can make itself (mixlab-cli doctor --what-if): a field of the run or of a
// layer, and its new value.
struct SuggestedChange {
  enum class Field : std::uint8_t {
    none,
    batch_size,
    units,           // of `layer` (Dense)
    filters,         // of `layer` (Conv2D)
    input_channels,  // the model input's last dimension
    cuda_graphs,
    data_on_device,
    layer_float32,    // `layer` kept in float32 under the mixed policy ("dtype": "float32")
    layer_bfloat16,   // `layer` kept out of FP8 under mixed_float8 ("dtype": "bfloat16")
    key_dim,          // of `layer` (MultiHeadAttention): its queries' and keys' head size
    sequence_length,  // the model input's first dimension (its steps), for sequence models
  };
  Field field = Field::none;
  int layer = -1;
  std::int64_t value = 0;
  explicit operator bool() const { return field != Field::none; }
};
std::string_view to_string(SuggestedChange::Field field);

struct Finding {
  std::string id;  // "alignment", "weight-bound", ...: what kind of finding (the rule)
  Severity severity = Severity::info;
  std::vector<int> layers;  // 0-based Keras layer indices it concerns
  std::string message;      // one sentence, with the figures
  std::string suggestion;   // the change to make; empty when there is none
  // The speed-up the model predicts for the suggestion (1.25: 25% faster per sample);
  // 0 where it is not predicted.
  double predicted_gain = 0.0;
  std::map<std::string, double> figures;  // the figures behind it, by name
  SuggestedChange change;  // the suggestion as a change, where it is one
};

// mixed_float8: the FP8 tensor of a layer with the largest share of saturated values (clipped
// to its format's largest) in any step of a measured run.
struct Fp8Saturation {
  int layer = 0;
  std::string tensor;  // "input", "kernel", "gradient"
  double share = 0.0;  // saturated / values in that step
  std::int64_t step = 0;
};

// One policy's measured run (a warm-up left out).
struct MeasuredRun {
  Policy policy = Policy::float32;
  std::int64_t steps = 0;
  double step_ms = 0.0;  // median
  double data_wait_ms = 0.0;
  double forward_ms = 0.0;
  double backward_ms = 0.0;
  double optimizer_ms = 0.0;
  std::int64_t skipped_steps = 0;
  double initial_loss_scale = 1.0;
  double final_loss_scale = 1.0;
  int scale_halvings = 0;           // steps after which the scale dropped
  bool first_step_skipped = false;  // overflow at the initial scale
  // Median forward and backward ms per Keras layer (empty: not timed).
  std::vector<double> layer_forward_ms, layer_backward_ms;
  std::string run_id;  // in the run store, when recorded
  // mixed_float8: each FP8 layer's worst tensor (every step counted: saturation is numerics).
  std::vector<Fp8Saturation> fp8_saturation;
  // Read from the layer-times cache (layer_cache.h): "timed 2026-12-05 11:40 UTC, kept in
  // PATH"; empty when timed now.
  std::string cached;
};

struct Measurement {
  MeasuredRun float32;
  MeasuredRun mixed;
  // mixed_float8 is also set against mixed_bfloat16, what FP8 replaces: its run.
  std::optional<MeasuredRun> baseline;
  double speedup() const { return float32.step_ms / mixed.step_ms; }
};

struct DiagnosisInput {
  ModelSpec spec;
  DeviceProfile device;
  Policy mixed = Policy::mixed_float16;  // set against float32
  // The run the diagnosis is made at, as mixlab-cli's options or the Run panel set it: its
  // batch size, optimizer, seed, threads and GPU options, and whatever setting the field table
  // (engine/train/run_fields.h) gains, with no copy here. The precision, loss scaling, length
  // and dataset are the doctor's own (measure_config): float32 and `mixed`, each with Keras's
  // loss scaling, on synthetic data shaped like the model's input.
  RunConfig run;
};

struct Diagnosis {
  DiagnosisInput input;
  StepCost float32;
  StepCost mixed;
  // mixed_float8: mixed_bfloat16's step, which FP8 is set against as well (the gain it
  // promises is over bfloat16, not float32).
  std::optional<StepCost> baseline;
  std::optional<Measurement> measured;
  // Each policy's layers timed on this device (bench_layers), set over the model's predictions
  // (apply_layer_times); absent for a device that is not here.
  std::optional<Measurement> layer_times;
  std::vector<Finding> findings;  // most severe first, then by predicted gain
  std::string verdict;
  // The held-out zoo's error for this device class and mode (confidence.h), set by the caller
  // that knows where the zoo's summary is (the CLI, the Doctor tab); absent otherwise.
  std::optional<Confidence> confidence;

  // float32's predicted step time over the mixed policy's: below 1, mixed is slower.
  double predicted_speedup() const { return float32.step_s() / mixed.step_s(); }
  // mixed_bfloat16's predicted step time over mixed_float8's; 0 without a baseline.
  double predicted_fp8_speedup() const {
    return baseline ? baseline->step_s() / mixed.step_s() : 0.0;
  }
};

// A timing of the model's layers on this machine's device (`device`, its profile), to scale to
// the diagnosis's device (scaling.h): `doctor --profile GPU --from cuda`.
struct ScaleFrom {
  DeviceProfile device;
  Measurement times;
};

struct DiagnosisInput;
// The input with the change made. Throws ConfigError for a change that does not fit the model
// (units of a layer that is not a Dense).
DiagnosisInput apply_change(const DiagnosisInput& input, const SuggestedChange& change);
// "batch size 1024", "layer 3 units 4096", "CUDA graphs on".
std::string describe(const SuggestedChange& change);

// Predicts (from the layers timed here where `layer_times` has them, else the roofline model),
// runs every rule and writes the verdict. Throws ConfigError (batch below 1) and SpecError (an
// invalid model) naming the problem.
// With `scale_from`, the layers timed on another device are scaled to this one where their
// kernels match (the rest modelled).
Diagnosis diagnose(const DiagnosisInput& input,
                   const std::optional<Measurement>& measured = std::nullopt,
                   const std::optional<Measurement>& layer_times = std::nullopt,
                   const std::optional<ScaleFrom>& scale_from = std::nullopt);

// "1.23x slower" / "1.23x faster" / "as fast" for a speed-up (new over old time's inverse).
std::string speedup_words(double speedup);

// The rules, each on its own (diagnose() runs them all): tests build one case that fires each.
namespace rules {
std::vector<Finding> capability(const Diagnosis& d);
std::vector<Finding> alignment(const Diagnosis& d);
// Part of `alignment`: a MultiHeadAttention's key_dim (value_dim) and the sequence length.
std::vector<Finding> attention_alignment(const Diagnosis& d);
std::vector<Finding> quantization(const Diagnosis& d);
std::vector<Finding> memory_bound(const Diagnosis& d);
std::vector<Finding> normalization_bound(const Diagnosis& d);
// MultiHeadAttention's cores taking a large share of the mixed step: their steps x steps
// weights per head through memory, and what cuDNN's fused attention would gain (a what-if).
std::vector<Finding> attention_bound(const Diagnosis& d);
std::vector<Finding> weight_bound(const Diagnosis& d);
std::vector<Finding> overhead_bound(const Diagnosis& d);
std::vector<Finding> input_bound(const Diagnosis& d);
std::vector<Finding> loss_scaling(const Diagnosis& d);
std::vector<Finding> memory_fit(const Diagnosis& d);
std::vector<Finding> measured_vs_predicted(const Diagnosis& d);
std::vector<Finding> mixed_no_gain(const Diagnosis& d);
// mixed_float8: what the FP8 tensor cores gain over mixed_bfloat16, the layers they do not
// reach (dimensions off multiples of 16, convolutions on a GPU) or do not pay for (the casts
// cost more than the GEMMs save), and the layers whose measured saturation says to keep them
// in bfloat16.
inline constexpr double kFp8SaturationThreshold = 0.01;
std::vector<Finding> fp8(const Diagnosis& d);
}  // namespace rules

}  // namespace mixlab::doctor
