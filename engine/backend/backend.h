// The one interface every compute backend implements (CPU on oneDNN, CUDA on cuBLAS/cuDNN).
// A backend compiles a validated model spec into a ModelExecutor: the execution plan
// (engine/plan) built with the backend's lowering rules, a node created per planned node, the
// memory allocated once, ready to run steps. The trainer drives every executor through one step
// protocol; tests drive single-layer executors op by op through OpAccess (the CPU backend is the
// reference the CUDA backend is checked against).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/device_info.h"
#include "engine/core/precision.h"
#include "engine/ops/fp8_scaling.h"
#include "engine/ops/loss_scale.h"
#include "engine/ops/optimizer.h"
#include "engine/plan/execution_plan.h"
#include "engine/spec/model_spec.h"
#include "engine/spec/model_weights.h"
#include "engine/spec/shape_inference.h"

namespace mixlab {

// Which kernels run a MultiHeadAttention's core on a GPU (issue 29): cuDNN 9's fused scaled
// dot-product attention (float16 and bfloat16 from compute capability 8.0; a run it cannot take
// fails saying why), MixLab's unfused ones (cuBLASLt's strided-batched products with the scores
// through memory and a float32 softmax), or the fused where cuDNN takes the shape, else the
// unfused (automatic). The CPU runs attention unfused whatever the setting.
enum class AttentionKernels : std::uint8_t { automatic, unfused, fused };
inline std::string_view to_string(AttentionKernels kernels) {
  switch (kernels) {
    case AttentionKernels::automatic:
      return "auto";
    case AttentionKernels::unfused:
      return "unfused";
    case AttentionKernels::fused:
      return "fused";
  }
  return "?";
}
inline std::optional<AttentionKernels> parse_attention_kernels(std::string_view text) {
  if (text == "auto") return AttentionKernels::automatic;
  if (text == "unfused") return AttentionKernels::unfused;
  if (text == "fused") return AttentionKernels::fused;
  return std::nullopt;
}

struct ExecutorOptions {
  Policy policy = Policy::float32;
  int batch_size = 32;  // the batch every step runs; a short batch is padded and masked
  OptimizerConfig optimizer;
  std::uint64_t seed = 1;       // weight initialisation (Keras: glorot_uniform, zero bias), dropout
  bool input_gradient = false;  // also compute the gradient w.r.t. the model's input (op tests)
  // Starting weights written over the seeded initialisation (an imported Keras model's); null:
  // the seed's alone.
  std::shared_ptr<const ModelWeights> initial_weights;
  // Time every layer's forward and backward in training steps (CUDA events on a GPU, the clock
  // on the CPU; slower: a GPU step then synchronises per layer).
  bool layer_timing = false;
  // --- CUDA only; the CPU backend ignores them ---
  bool tf32 = false;         // float32 policy: TF32 tensor-core matmuls and convolutions
  bool cuda_graphs = false;  // capture the device step once and replay it
  AttentionKernels attention = AttentionKernels::automatic;
  // --- mixed_float8: the delayed scaling of each FP8 tensor ---
  Fp8Recipe fp8;
};

// Loss and accuracy of one batch.
struct BatchLoss {
  double loss = 0.0;     // mean over the batch's real samples
  double correct = 0.0;  // samples predicted right (binary: fraction of outputs, summed)
  int samples = 0;
};

enum class Phase : std::uint8_t { train, eval };

// A layer's gradients on a training step whose overflow check failed: how many of its values
// were NaN or inf (after the rounding to its weights' 16-bit type that the check applies), of
// how many. Where loss scaling overflows, or attention's scores do.
struct LayerOverflow {
  int layer = 0;
  std::int64_t nonfinite = 0;
  std::int64_t values = 0;
};

// Sorts by layer, merges a layer's entries and drops the layers without non-finite values.
inline std::vector<LayerOverflow> merge_layer_overflows(std::vector<LayerOverflow> entries) {
  std::stable_sort(
      entries.begin(), entries.end(),
      [](const LayerOverflow& a, const LayerOverflow& b) { return a.layer < b.layer; });
  std::vector<LayerOverflow> out;
  for (const LayerOverflow& e : entries) {
    if (!out.empty() && out.back().layer == e.layer) {
      out.back().nonfinite += e.nonfinite;
      out.back().values += e.values;
    } else {
      out.push_back(e);
    }
  }
  std::erase_if(out, [](const LayerOverflow& e) { return e.nonfinite == 0; });
  return out;
}

// mixed_float8 (issue 30): one FP8 tensor of a layer in a training step. A layer has a matmul
// part per FP8 matmul (MultiHeadAttention: its query, key, value and output projections, in
// that order), each with three tensors.
enum class Fp8Role : std::uint8_t { input, kernel, gradient };
inline std::string_view to_string(Fp8Role role) {
  switch (role) {
    case Fp8Role::input:
      return "input";
    case Fp8Role::kernel:
      return "kernel";
    case Fp8Role::gradient:
      return "gradient";
  }
  return "?";
}
inline std::optional<Fp8Role> parse_fp8_role(std::string_view text) {
  for (Fp8Role r : {Fp8Role::input, Fp8Role::kernel, Fp8Role::gradient}) {
    if (text == to_string(r)) return r;
  }
  return std::nullopt;
}

struct Fp8TensorStep {
  int layer = 0;
  int part = 0;  // which of the layer's FP8 matmuls
  Fp8Role role = Fp8Role::input;
  float amax = 0.0f;        // the step's largest magnitude (NaN when it held one)
  float scale = 1.0f;       // the dequantising scale the step used (Keras's `scale`)
  float next_scale = 1.0f;  // after the step's update, the next step's
  std::int64_t values = 0;
  std::int64_t saturated = 0;  // values whose x / scale reached past the format's maximum
  std::int64_t flushed = 0;    // nonzero values rounded to zero
};

// Numbers each layer's FP8 matmuls in the order their nodes ran: three rows (input, kernel,
// gradient) a matmul (both backends' StepResult::fp8).
inline void number_fp8_parts(std::vector<Fp8TensorStep>& rows) {
  std::map<int, int> seen;
  for (Fp8TensorStep& r : rows) r.part = seen[r.layer]++ / 3;
}

// What one step reports. Times are the device's (CUDA events) on a GPU and the host's clock on
// the CPU, where the step runs on the calling thread.
struct StepResult {
  BatchLoss batch;
  bool gradients_finite = true;  // train: every parameter gradient was finite
  bool applied = false;          // train: the optimizer update ran (false: skipped on overflow)
  double loss_scale = 1.0;       // the scale this step ran with
  double next_loss_scale = 1.0;  // after the loss-scale state machine's update
  double forward_ms = 0.0;       // forward; loss + backward; overflow check + update
  double backward_ms = 0.0;
  double optimizer_ms = 0.0;
  double device_ms = std::numeric_limits<double>::quiet_NaN();  // the whole step on a device
  // train, gradients_finite false: the layers with non-finite gradients, in layer order (empty
  // otherwise).
  std::vector<LayerOverflow> overflows;
  // train, mixed_float8: each FP8 tensor's amax, scales and rounding counts, in layer order.
  std::vector<Fp8TensorStep> fp8;
};

// Time of one layer in the last training step (ExecutorOptions::layer_timing), every node that
// belongs to it summed.
struct LayerTiming {
  int layer = 0;
  double forward_ms = 0.0;
  double backward_ms = 0.0;
};

class OpAccess;

// A compiled model. One step protocol on every backend: load a batch, launch a step, finish it
// (a device overlaps the next batch's copy with the step in between; the CPU runs the step in
// launch_step). The loss-scale state lives in the executor.
class ModelExecutor {
 public:
  virtual ~ModelExecutor() = default;

  // The allocation by purpose: the execution plan's buffers and what the libraries added.
  virtual const MemoryPlan& memory_plan() const = 0;
  virtual int batch_size() const = 0;
  // The loss scaling training steps run with; resets its state (scale, good steps).
  virtual void set_loss_scaling(const LossScaleConfig& config) = 0;

  // Copies n <= batch_size samples in for the next step: images (n, input shape) float32,
  // labels (n). Rows beyond n are padding (masked out of the loss).
  virtual void load_batch(std::span<const float> images, std::span<const std::int32_t> labels,
                          int n) = 0;
  // Keeps the whole training split on the device when the backend has one and it fits
  // (returns false otherwise: batches then come through load_batch); load_batch_indices()
  // then gathers a batch there.
  virtual bool upload_dataset(std::span<const std::uint8_t> images,
                              std::span<const std::int32_t> labels) = 0;
  virtual void load_batch_indices(std::span<const std::int64_t> indices, int n) = 0;

  // Starts a step on the batch loaded last. train: forward, loss, backward, overflow check,
  // loss-scale update and optimizer; eval: forward and loss. `step` varies dropout's mask.
  virtual void launch_step(Phase phase, std::uint64_t step) = 0;
  // Waits for the step launch_step() started and returns what it did.
  virtual StepResult finish_step() = 0;

  // Per-layer times of the last training step (empty unless ExecutorOptions::layer_timing).
  virtual std::vector<LayerTiming> layer_timings() const = 0;
  // Device memory in use by this executor, library workspaces included (0: not measured).
  virtual std::int64_t device_memory_bytes() const = 0;

  // Op-level access for tests (engine/backend/op_access.h); not a training path.
  virtual OpAccess& ops() = 0;

  // What the compiled model chose that its run should say (a GPU: which kernels run each
  // attention core); a run keeps them among its notes.
  virtual std::vector<std::string> notes() const { return {}; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceInfo device() const = 0;
  // Throws SpecError / ConfigError for what this backend cannot run, AllocationError when the
  // memory plan does not fit.
  virtual std::unique_ptr<ModelExecutor> compile(const ModelSpec& spec, const ShapeTable& table,
                                                 const ExecutorOptions& options) = 0;
};

// The oneDNN backend; threads 0 means every core.
std::unique_ptr<Backend> make_cpu_backend(int threads = 0);

// What this CPU does at a thread count, measured through oneDNN as the CPU backend runs it (the
// doctor's profile of the local CPU): a few seconds.
struct CpuCalibration {
  std::string cpu;        // model name
  int threads = 0;
  CpuIsa isa = CpuIsa::baseline;
  std::string onednn;     // "2.6.3 avx2": the library and the ISA it ran at
  double f32_matmul_flops = 0.0;   // FLOP/s of a (512 x 1024) x (1024 x 1024) inner product
  double bf16_matmul_flops = 0.0;  // the same in bfloat16; 0 without oneDNN bf16 kernels
  double f32_small_matmul_flops = 0.0;  // at 32 rows (a small batch): the median of three widths
  double f32_conv_flops = 0.0;     // FLOP/s of a 3x3, 64 -> 64 channel convolution, 32x16x16
  // The same library's rate on narrow layers, which its wide-layer figures do not predict
  // (oneDNN's bf16 kernels gain little on 16 channels): a 3x3, 16 -> 16 channel convolution,
  // 32x32x32; and both shapes in bfloat16 (0 without oneDNN bf16 kernels).
  double f32_narrow_conv_flops = 0.0;
  double bf16_conv_flops = 0.0;
  double bf16_narrow_conv_flops = 0.0;
  // The narrow bfloat16 convolution's weight gradient (float32 out), which oneDNN computes at a
  // fraction of its forward rate on this kind of layer (0 without bf16 kernels).
  double bf16_narrow_conv_weights_flops = 0.0;
  // The memory-bound layers' own rates, in the bytes the doctor's cost model counts for them: an
  // elementwise add of 2M elements on MixLab's loops, and oneDNN's batch normalization (training
  // forward and backward, 32x32x32x16), in float32 and in bfloat16 (0 without bf16 kernels).
  double f32_elementwise_bytes_per_s = 0.0;
  double bf16_elementwise_bytes_per_s = 0.0;
  double f32_bnorm_bytes_per_s = 0.0;
  double bf16_bnorm_bytes_per_s = 0.0;
  double stream_bytes_per_s = 0.0; // an in-place a += s * b over 64 MiB arrays: bytes/s
  double pooling_bytes_per_s = 0.0;  // 2x2 max pooling for training, 32x28x28x16: bytes in+out/s
  double call_overhead_s = 0.0;    // a small layer's call beyond its work
};
CpuCalibration calibrate_cpu(int threads);

// What a present GPU does, measured through the CUDA backend as it computes (cuBLASLt matmuls,
// device copies), with the properties the roofline model needs (cudaDeviceGetAttribute): the
// doctor's profile of a GPU of this machine. About a second.
struct GpuCalibration {
  std::string gpu;                 // "NVIDIA H200"
  std::string compute_capability;  // "9.0"
  std::string libraries;  // DeviceInfo::library_versions() of the backend that measured it
  int sm_count = 0;
  double clock_mhz = 0.0;          // the SMs' peak clock
  std::int64_t memory_bytes = 0;
  std::int64_t l2_bytes = 0;
  double memory_bus_bytes_per_s = 0.0;  // the theoretical: 2 x memory clock x bus width
  // FLOP/s of a (4096 x 4096) x (4096 x 4096) cuBLASLt matmul; 0 where the GPU has no such path.
  double f32_matmul_flops = 0.0;   // float32 on the CUDA cores
  double tf32_matmul_flops = 0.0;  // float32 on TF32 tensor cores (8.0 on)
  double f16_matmul_flops = 0.0;   // float16 in and out, float32 accumulation
  double bf16_matmul_flops = 0.0;  // the same in bfloat16 (8.0 on)
  // A 16-bit matmul with K = 4095 (rows off 16 bytes) over one with K = 4096, M = N = 4096, in
  // FLOP/s: how much of the tensor cores' rate a misaligned GEMM keeps. 0: not measured (a
  // cache written before it was).
  double misaligned_matmul_efficiency = 0.0;
  double copy_bytes_per_s = 0.0;       // a 256 MiB device-to-device copy: bytes read + written/s
  double host_copy_bytes_per_s = 0.0;  // a 64 MiB copy from pinned host memory
  double call_overhead_s = 0.0;        // a 64^3 matmul's share of back-to-back calls
};
// Throws BackendError naming why when the CUDA backend cannot run on GPU `gpu` (0-based).
GpuCalibration calibrate_gpu(int gpu);

// A backend for a device name: "cpu", "cuda" (the first GPU), "cuda:N", or "auto" (the first
// GPU the CUDA backend can train on, else the CPU). Throws ConfigError for an unknown name, and
// BackendError naming why for a GPU that cannot be used, unless `fallback` lets it run on the
// CPU instead; `note` then says why (empty when the device asked for is used).
struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string device;  // "cpu" or "cuda:N", what was chosen
  std::string note;    // why the CPU runs instead of the GPU asked for
};
BackendChoice make_backend(std::string_view device, int threads, bool fallback);
// Throws the ConfigError make_backend() throws for a name that is no device ("cpu", "cuda",
// "cuda:N", "auto"), without making a backend: options are checked before any work.
void check_device_name(std::string_view device);
// Why the CUDA backend cannot train here (empty when it can): not built, its library or the
// CUDA libraries it needs missing (with the loader's message), no driver, no GPU.
std::string cuda_backend_unavailable_reason();
// The same for GPU `gpu` ("cuda:N"): empty when the CUDA backend can train on it.
std::string cuda_device_unavailable_reason(int gpu);

// The CPU, then every CUDA GPU found (when built with the CUDA backend; none without a driver).
std::vector<DeviceInfo> available_devices();
bool built_with_cuda();
// The CPU's model name from /proc/cpuinfo ("unknown CPU" when it has none).
std::string cpu_model_name();

// Whether each backend can train on this machine, and why not when it cannot: for
// `--version`, `self-test` and the About dialog.
struct BackendStatus {
  std::string name;        // "cpu", "cuda"
  bool available = false;  // can train here now
  std::string detail;      // the device and library, or why the backend is unavailable
};
std::vector<BackendStatus> backend_statuses();

}  // namespace mixlab
