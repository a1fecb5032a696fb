// The one interface every compute backend implements (CPU on oneDNN, CUDA on cuBLAS/cuDNN).
// A backend compiles a validated model spec into a ModelExecutor: the model's memory planned
// from the shape table and allocated once, its layers' primitives created, ready to run steps.
// The trainer drives an executor step by step and times each part; tests drive single-layer
// executors op by op (the CPU backend is the reference the CUDA backend is checked against).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/device_info.h"
#include "engine/core/precision.h"
#include "engine/ops/optimizer.h"
#include "engine/spec/model_spec.h"
#include "engine/spec/shape_inference.h"

namespace mixlab {

struct ExecutorOptions {
  Policy policy = Policy::float32;
  int batch_size = 32;  // the batch every step runs; a short batch is padded and masked
  OptimizerConfig optimizer;
  std::uint64_t seed = 1;       // weight initialisation (Keras: glorot_uniform, zero bias), dropout
  bool input_gradient = false;  // also compute the gradient w.r.t. the model's input (op tests)
  // --- device executors (CUDA); the CPU backend ignores them ---
  bool tf32 = false;          // float32 policy: TF32 tensor-core matmuls and convolutions
  bool cuda_graphs = false;   // capture the device step once and replay it
  bool layer_timing = false;  // time every layer's forward and backward (slower: events)
};

// What a part of an executor's allocation holds.
enum class MemoryPurpose : std::uint8_t {
  parameters,
  weight_copies,
  gradients,
  optimizer,
  activations,
  workspace,
};

// Bytes of one executor's single allocation, by purpose.
struct MemoryPlan {
  std::int64_t parameter_bytes = 0;    // float32 master weights and biases
  std::int64_t weight_copy_bytes = 0;  // 16-bit (or re-laid-out) copies the layers compute with
  std::int64_t gradient_bytes = 0;     // float32 parameter gradients
  std::int64_t optimizer_bytes = 0;    // optimizer state
  std::int64_t activation_bytes = 0;   // layer outputs kept for backward, at batch_size
  std::int64_t workspace_bytes = 0;    // activation gradients, scratch, library workspaces
  std::int64_t total() const {
    return parameter_bytes + weight_copy_bytes + gradient_bytes + optimizer_bytes +
           activation_bytes + workspace_bytes;
  }
  void add(MemoryPurpose purpose, std::int64_t bytes) {
    switch (purpose) {
      case MemoryPurpose::parameters:
        parameter_bytes += bytes;
        return;
      case MemoryPurpose::weight_copies:
        weight_copy_bytes += bytes;
        return;
      case MemoryPurpose::gradients:
        gradient_bytes += bytes;
        return;
      case MemoryPurpose::optimizer:
        optimizer_bytes += bytes;
        return;
      case MemoryPurpose::activations:
        activation_bytes += bytes;
        return;
      case MemoryPurpose::workspace:
        workspace_bytes += bytes;
        return;
    }
  }
};

// Loss and accuracy of the batch last run forward.
struct BatchLoss {
  double loss = 0.0;     // mean over the batch's real samples
  double correct = 0.0;  // samples predicted right (binary: fraction of outputs, summed)
  int samples = 0;
};

enum class Phase : std::uint8_t { train, eval };

// Loss scaling as a device step runs it (the state machine in engine/ops/loss_scale.h).
struct DeviceLossScaling {
  bool dynamic = false;  // else a fixed scale (1 for none)
  bool enabled = false;  // false: no loss scaling (scale 1; a non-finite gradient ends the run)
  float initial_scale = 1.0f;
  std::int64_t growth_interval = 2000;
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  float min_scale = 1.0f;
};

// What one device step reports, read back once per step.
struct DeviceStepResult {
  BatchLoss batch;
  bool gradients_finite = true;
  bool applied = true;           // the optimizer update ran (false: skipped on overflow)
  float loss_scale = 1.0f;       // the scale the step ran with
  float next_loss_scale = 1.0f;  // after the state machine's update
  double device_ms = 0.0;        // CUDA events around the whole step
  double forward_ms = 0.0;       // device time of forward, loss + backward, update
  double backward_ms = 0.0;
  double optimizer_ms = 0.0;
};

// Device time of one layer in the last step (ExecutorOptions::layer_timing).
struct LayerTiming {
  int layer = 0;
  double forward_ms = 0.0;
  double backward_ms = 0.0;
};

class ModelExecutor {
 public:
  virtual ~ModelExecutor() = default;

  virtual const MemoryPlan& memory_plan() const = 0;
  virtual int batch_size() const = 0;

  // --- one step, in the parts the trainer times ---
  // Copies n <= batch_size samples in: images (n, input shape) float32, labels (n).
  virtual void load_batch(std::span<const float> images, std::span<const std::int32_t> labels,
                          int n) = 0;
  // `step` varies dropout's mask from step to step.
  virtual void forward(Phase phase, std::uint64_t step) = 0;
  // The loss of the loaded batch; with compute_gradient, seeds backward with
  // loss_scale * dLoss/dOutput (in the output layer's dtype).
  virtual BatchLoss loss(bool compute_gradient, float loss_scale) = 0;
  virtual void backward() = 0;
  // Whether every parameter gradient is finite (the loss-scaling overflow check).
  virtual bool gradients_finite() = 0;
  // One optimizer update with gradients multiplied by grad_scale (1 / loss scale); `iteration`
  // counts applied updates from 1. Refreshes the weight copies the layers compute with. Returns
  // whether every gradient was finite, checked in the same pass: without loss scaling the trainer
  // skips the separate gradients_finite() pass (a non-finite gradient then ends the run anyway).
  virtual bool apply_gradients(float grad_scale, std::int64_t iteration) = 0;
  virtual void synchronize() = 0;

  // --- op-level access, float32 on the host, Keras layouts ---
  virtual std::vector<float> read_output() = 0;  // (batch, output shape) of the last layer
  virtual std::vector<float> read_activation(int layer) = 0;  // output of layer i
  // Seeds backward with dLoss/dOutput directly instead of loss(); (batch, output shape).
  virtual void set_output_gradient(std::span<const float> dy) = 0;
  // (batch, input shape); needs ExecutorOptions::input_gradient.
  virtual std::vector<float> read_input_gradient() = 0;
  virtual std::vector<float> read_parameter(int layer, ParamKind kind) = 0;
  virtual void write_parameter(int layer, ParamKind kind, std::span<const float> values) = 0;
  virtual std::vector<float> read_gradient(int layer, ParamKind kind) = 0;

  // --- the device step (CUDA): load, forward, loss, backward, overflow check, loss-scale
  // update and optimizer as one asynchronous launch with the loss-scale state on the device, so
  // that a step costs one host round trip (and can be captured in a CUDA graph). Backends
  // without it keep the defaults; the trainer then drives the parts above. ---
  virtual bool has_device_step() const { return false; }
  // Sets the loss scaling the device steps run with and resets its state.
  virtual void set_device_loss_scaling(const DeviceLossScaling& scaling) { (void)scaling; }
  // Starts one training step on the batch loaded last; `step` varies dropout's mask.
  virtual void launch_step(std::uint64_t step) { (void)step; }
  // Waits for the step launch_step() started and reads its result. A batch may be loaded
  // between the two calls: its copy overlaps the step.
  virtual DeviceStepResult finish_step() { return {}; }
  // Keeps the whole training split on the device when it fits (returns false when it does not,
  // or the backend has no such option); load_batch_indices() then gathers a batch there.
  virtual bool upload_dataset(std::span<const std::uint8_t> images,
                              std::span<const std::int32_t> labels) {
    (void)images;
    (void)labels;
    return false;
  }
  virtual void load_batch_indices(std::span<const std::int64_t> indices, int n) {
    (void)indices;
    (void)n;
  }
  // Per-layer device times of the last step (empty unless ExecutorOptions::layer_timing).
  virtual std::vector<LayerTiming> layer_timings() { return {}; }
  // Device memory in use by this executor, library workspaces included (0: not measured).
  virtual std::int64_t device_memory_bytes() const { return 0; }
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
