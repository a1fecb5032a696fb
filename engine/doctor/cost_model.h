// The doctor's roofline cost model: for a model, a batch size, a policy and a device profile,
// every layer's every phase (forward, backward to data, backward to weights) and the step's own
// work (the input batch, the loss, loss scaling's unscale and check, the optimizer with its
// master-weight reads and 16-bit copy writes, casts) as FLOPs, bytes by element width and kernel
// launches (library calls on the CPU), and a predicted time:
//   max(FLOPs / the roof of the dtype that computes, bytes / bandwidth) + launches x overhead.
// Matmuls and convolutions (as implicit GEMMs) on a GPU also pay tile and wave quantization
// (NVIDIA, "Deep Learning Performance: Matrix Multiplication Background", tiles 256x128 down to
// 64x64, waves over the SMs) and, in 16 bits, dimensions that miss tensor-core alignment.
// The model is planned as the device's backend would lower it (engine/plan). Qt-free.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/device_info.h"
#include "engine/doctor/device_profile.h"
#include "engine/ops/optimizer.h"
#include "engine/plan/execution_plan.h"
#include "engine/spec/model_spec.h"
#include "engine/train/run_types.h"

namespace mixlab::doctor {

enum class CostPhase : std::uint8_t {
  data,              // the input batch: gathered, and copied to a GPU
  forward,
  loss,              // the loss and its gradient
  backward_data,     // gradients to a layer's input
  backward_weights,  // gradients to its kernel and bias
  loss_scaling,      // unscale and the finite check
  optimizer,         // the update, its state, the 16-bit copies
};
std::string_view to_string(CostPhase phase);

// Where the time goes, for the stacked bar.
enum class TimeKind : std::uint8_t {
  matmul,
  convolution,
  elementwise,  // activations, pooling, dropout, rescaling, the loss
  casts,        // dtype conversions, and the CPU's rounding where it emulates 16 bits
  optimizer,
  loss_scaling,
  data,
  overhead,  // launches and library calls
};
inline constexpr int kTimeKinds = 8;
std::string_view to_string(TimeKind kind);

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;  // (m x k) times (k x n)
};

// How well a GEMM fills the device: the output is cut into tiles (the last ones partly empty),
// the tiles run in waves of one per SM (the last wave partly empty).
struct GemmQuantization {
  int tile_m = 0, tile_n = 0;
  int split_k = 1;  // parts the reduction is split into when the output has too few tiles
  std::int64_t tiles = 0;  // output tiles times split_k
  std::int64_t waves = 0;
  double tile_efficiency = 1.0;  // useful / computed elements of the tiles
  double wave_efficiency = 1.0;  // tiles / (waves x SMs)
  double efficiency() const { return tile_efficiency * wave_efficiency; }
};
// With one tile size.
GemmQuantization quantize_gemm(const GemmShape& gemm, int tile_m, int tile_n, int sm_count);
// With the tile a library would pick: the best of 256x128, 128x128, 128x64 and 64x64, larger
// tiles preferred (their operands are reused more) unless a smaller one wastes less; a GEMM
// with fewer output tiles than SMs and a long reduction splits it (split-K, as cuBLAS and cuDNN's
// weight-gradient kernels do), each part at least 512 deep.
GemmQuantization quantize_gemm(const GemmShape& gemm, int sm_count);

// The multiple a 16-bit GEMM dimension should have for tensor cores (NVIDIA's guide: 8 for
// float16 and bfloat16, 16 for FP8).
inline constexpr std::int64_t kTensorCoreMultiple16Bit = 8;
// cuBLASLt's FP8 matmuls need every dimension a multiple of 16 (its documentation, "FP8 data
// types": leading dimensions multiples of 16 bytes; Transformer Engine asserts the same).
inline constexpr std::int64_t kTensorCoreMultipleFp8 = 16;

struct CostItem {
  int node = -1;   // in the plan; -1 for the step's own work
  int layer = -1;  // the Keras layer; -1 for the step's own work
  CostPhase phase = CostPhase::forward;
  TimeKind kind = TimeKind::elementwise;
  std::string label;  // "layer 3 (Dense) forward"
  DType dtype = DType::f32;  // what the math runs in (a matmul's inputs), or what is written
  double flops = 0.0;
  double bytes_f32 = 0.0;  // read and written in 4-byte elements
  double bytes_16 = 0.0;   // read and written in 2-byte elements
  double bytes_8 = 0.0;    // read and written in 1-byte elements (FP8 operands)
  int launches = 0;
  bool gemm = false;  // a matmul or an implicit-GEMM convolution
  GemmShape shape;
  GemmQuantization quantization;  // a GPU's; efficiency 1 on the CPU
  // The dimension that misses tensor-core alignment (16-bit GEMMs on a GPU): its name ("batch",
  // "units", "input features", "filters", "input channels") and value; empty when aligned.
  std::string misaligned;
  std::int64_t misaligned_value = 0;
  // Misaligned, and the profile's libraries predate tensor cores for such GEMMs
  // (library_rules.h): it runs on the CUDA cores.
  bool misaligned_without_tensor_cores = false;
  bool emulated = false;  // 16-bit math done in float32 (the CPU without native kernels)
  // mixed_float8: the GEMM reads E4M3 / E5M2 operands on FP8 tensor cores.
  bool fp8 = false;
  // mixed_float8 on a GPU with FP8 tensor cores: the dimension that keeps an FP8 layer's GEMM
  // off them (not a multiple of kTensorCoreMultipleFp8; it runs in bfloat16) and its value.
  std::string fp8_misaligned;
  std::int64_t fp8_misaligned_value = 0;
  double peak_flops = 0.0;  // the roof the math ran against, after everything above
  double compute_s = 0.0;
  double memory_s = 0.0;
  double overhead_s = 0.0;
  // Timed on the device (apply_layer_times): the three times above are scaled so that the
  // layer's items add up to its measured time; model_s keeps the roofline model's own.
  bool measured = false;
  double model_s = 0.0;
  // Scaled from the layer timed on another device (scale_layer_times): model_s keeps this
  // device's roofline model's own time.
  bool scaled = false;

  double bytes() const { return bytes_f32 + bytes_16 + bytes_8; }
  double time_s() const { return (compute_s > memory_s ? compute_s : memory_s) + overhead_s; }
  // FLOPs per byte moved.
  double intensity() const { return bytes() > 0 ? flops / bytes() : 0.0; }
  bool memory_bound() const { return memory_s > compute_s; }
};

struct StepCost {
  Policy policy = Policy::float32;
  int batch = 0;
  PolicySupport support;  // the engine's rule for this device and policy
  std::vector<CostItem> items;
  MemoryPlan memory;           // the plan's, for training at this batch
  std::int64_t device_memory_bytes = 0;  // the profile's (0: not known)
  std::int64_t params = 0;

  bool fits() const { return device_memory_bytes == 0 || memory.total() <= device_memory_bytes; }
  // The step: every item in turn, but a GPU's input copy overlaps the step before (staging)
  // and shows only where it is longer.
  double step_s() const;
  double seconds(TimeKind kind) const;  // overhead apart from each item's kernel time
  double seconds(CostPhase phase) const;
  // A layer's forward (phase forward) or backward (backward_data + backward_weights) time.
  double layer_seconds(int layer, bool backward) const;
  double kernel_s() const;    // without launch overhead
  double overhead_s() const;  // launches x overhead
  int launches() const;
  double bytes() const;
  double flops() const;
  bool data_overlapped = false;  // a GPU: the copy runs beside the step
  // Whether (and how) layers were timed on the device: apply_layer_times.
  std::string measured_source;
  bool layer_measured(int layer) const;
  // Whether (and from where) layers were scaled from another device's timing:
  // scale_layer_times; why a layer was not, where it was modelled instead.
  std::string scaled_source;
  std::map<int, std::string> modelled_why;
  bool layer_scaled(int layer) const;
  // "measured", "scaled" or "modelled".
  std::string_view layer_source(int layer) const;
  // A layer's time (forward and backward) as the roofline model predicts it, measured or not.
  double layer_model_seconds(int layer) const;
};

// Measured per-layer times (ms, per Keras layer; a layer without a figure keeps the model's)
// set over the model's: each layer's forward items and its backward items are scaled to add up
// to its measured forward and backward time, the optimizer's and loss scaling's to the measured
// optimizer phase (when given, above 0); a layer the model gives no item but the device spends
// time on gets one of its own. `source` says how they were measured ("micro-benchmark: ...").
void apply_layer_times(StepCost& cost, const std::vector<double>& forward_ms,
                       const std::vector<double>& backward_ms, double optimizer_ms,
                       std::string source);

// The step of `run` (its batch size, optimizer and GPU options: TF32 for float32 matmuls, CUDA
// graphs replaying the launches, the training split kept on the GPU) under `policy`, with
// loss scaling under mixed_float16 as Keras runs it. Throws ConfigError for a batch size below 1
// and SpecError for an invalid model.
// Whether cuDNN 9's fused attention runs an attention node on this device (a GPU of compute
// capability 8.0 or later, 16-bit tensors, heads of at most 128 in multiples of 8), and if not,
// why ("" when it does).
bool fused_attention_applies(const DeviceProfile& device, const PlanNode& node);
// Whether the model predicts cuDNN's fused attention where it applies: on a GPU, as a run with
// RunConfig::attention auto or fused takes it (unfused keeps MixLab's kernels).
bool predicts_fused_attention(const DeviceProfile& device, const RunConfig& run);
std::string fused_attention_blocker(const DeviceProfile& device, const PlanNode& node);

// mixed_float8's FP8 GEMMs run on the device's FP8 tensor cores (a GPU of compute capability
// 8.9 or later whose profile has an FP8 rate); elsewhere they are emulated (the CPU) or not
// predicted (an older GPU: policy_support refuses the policy).
bool has_fp8_roof(const DeviceProfile& device);

StepCost predict_step(const ModelSpec& spec, Policy policy, const RunConfig& run,
                      const DeviceProfile& device);

// The roofline bound of the step: the same counts against the device's bare roofs (its matmul
// peak for every GEMM, no launch overhead, no small-batch or convolution discount): how fast the
// hardware could run it, to set a measured step against.
double roofline_bound_s(const ModelSpec& spec, Policy policy, const RunConfig& run,
                        const DeviceProfile& device);

// What a misaligned 16-bit GEMM keeps of the tensor cores' rate on this device where its
// libraries run it on them: the measured figure, else kMisalignedEfficiencyEstimate.
double misaligned_efficiency(const DeviceProfile& device);

// Bytes a tensor element of `dtype` takes on the device: a CPU without bfloat16 kernels keeps
// 16-bit values in float32 (it emulates them).
std::int64_t storage_bytes(const DeviceProfile& device, DType dtype);

}  // namespace mixlab::doctor
