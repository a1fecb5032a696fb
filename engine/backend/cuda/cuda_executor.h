// The CUDA executor: a model lowered to nodes (cuBLASLt matmuls, cuDNN convolutions and pooling,
// MixLab's kernels), all device memory in one allocation planned from the shape table, and a
// training step that runs as one asynchronous launch (optionally a CUDA graph) with the
// loss-scale state on the device.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/kernels.h"

namespace mixlab::cuda {

using Purpose = MemoryPurpose;

// Reservations first, then one cudaMalloc; each reservation 256-byte aligned (what cuBLASLt's
// and cuDNN's fastest kernels expect).
class DeviceArena {
 public:
  using Id = std::size_t;
  DeviceArena() = default;
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  Id reserve(std::size_t bytes, Purpose purpose);
  // Allocates and zeroes the arena. Throws AllocationError with the bytes needed, the bytes free
  // and the plan's parts when the GPU has too little memory.
  void allocate(const std::string& device_name);
  std::byte* ptr(Id id) const { return base_ + offsets_.at(id); }
  template <class T>
  T* as(Id id) const {
    return reinterpret_cast<T*>(ptr(id));
  }
  const MemoryPlan& plan() const { return plan_; }
  std::size_t size() const { return size_; }

 private:
  std::vector<std::size_t> offsets_;
  std::size_t size_ = 0;
  MemoryPlan plan_;
  std::byte* base_ = nullptr;
};

// A device tensor: (batch, ...) elements of a dtype.
struct DTensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  std::vector<std::int64_t> dims;  // batch first
  std::int64_t elements() const {
    std::int64_t n = 1;
    for (auto d : dims) n *= d;
    return n;
  }
  std::size_t bytes() const { return static_cast<std::size_t>(elements()) * dtype_bytes(dtype); }
};

// A trainable parameter group of one layer, at `offset` elements into the flat master,
// gradient, optimizer-state and 16-bit copy arrays.
struct ParamSlot {
  int layer = 0;
  ParamKind kind = ParamKind::kernel;
  std::int64_t count = 0;
  std::int64_t offset = 0;
  std::int64_t fan_in = 0, fan_out = 0;
  DType compute = DType::f32;  // the layer's: f32 reads the master, 16 bits the copy
  // A Conv2D kernel is kept as (filters, kh, kw, in) for cuDNN's NHWC filters; Keras's layout is
  // (kh, kw, in, filters). Zero for every other slot (same layout as Keras).
  int conv_kh = 0, conv_kw = 0, conv_in = 0, conv_out = 0;
};

// What nodes run with.
struct CudaContext {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t dnn = nullptr;
  void* lt_workspace = nullptr;
  std::size_t lt_workspace_bytes = 0;
  void* dnn_workspace = nullptr;
  const StepParams* params = nullptr;  // device
  std::uint64_t seed = 1;
  bool tf32 = false;
  // Flat parameter arrays (device).
  float* master = nullptr;
  float* grads = nullptr;
  void* copy16 = nullptr;  // the policy's 16-bit copy (null under float32)
  DType copy_dtype = DType::f32;

  const void* weights(const ParamSlot& slot) const;
  float* gradient(const ParamSlot& slot) const { return grads + slot.offset; }
};

class CudaNode {
 public:
  CudaNode(int layer, DType out_dtype, std::string label)
      : layer(layer), out_dtype(out_dtype), label(std::move(label)) {}
  virtual ~CudaNode() = default;
  virtual bool aliases_input() const { return false; }
  // Extra device buffers (reserved before, bound after the allocation); library setup needing
  // device memory (algorithm benchmarks) runs in prepare(), after binding.
  virtual void reserve(DeviceArena& arena) { (void)arena; }
  virtual void bind(const DeviceArena& arena, CudaContext& ctx) {
    (void)arena;
    (void)ctx;
  }
  virtual std::size_t dnn_workspace_bytes() const { return 0; }
  virtual void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) = 0;
  // dy may be overwritten (fused activations compute their gradient in place); dx is null when
  // the input gradient is not needed.
  virtual void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                        const DTensor* dx) = 0;
  virtual std::vector<ParamSlot*> params() { return {}; }

  const int layer;
  const DType out_dtype;
  const std::string label;  // "layer 3 (Dense)"
};

class CudaExecutor final : public ModelExecutor {
 public:
  CudaExecutor(const ModelSpec& spec, const ShapeTable& table, const ExecutorOptions& options,
               int device, const DeviceInfo& info);
  ~CudaExecutor() override;

  const MemoryPlan& memory_plan() const override { return arena_.plan(); }
  int batch_size() const override { return batch_; }

  void load_batch(std::span<const float> images, std::span<const std::int32_t> labels,
                  int n) override;
  void forward(Phase phase, std::uint64_t step) override;
  BatchLoss loss(bool compute_gradient, float loss_scale) override;
  void backward() override;
  bool gradients_finite() override;
  bool apply_gradients(float grad_scale, std::int64_t iteration) override;
  void synchronize() override;

  std::vector<float> read_output() override;
  std::vector<float> read_activation(int layer) override;
  void set_output_gradient(std::span<const float> dy) override;
  std::vector<float> read_input_gradient() override;
  std::vector<float> read_parameter(int layer, ParamKind kind) override;
  void write_parameter(int layer, ParamKind kind, std::span<const float> values) override;
  std::vector<float> read_gradient(int layer, ParamKind kind) override;

  bool has_device_step() const override { return true; }
  void set_device_loss_scaling(const DeviceLossScaling& scaling) override;
  void launch_step(std::uint64_t step) override;
  DeviceStepResult finish_step() override;
  bool upload_dataset(std::span<const std::uint8_t> images,
                      std::span<const std::int32_t> labels) override;
  void load_batch_indices(std::span<const std::int64_t> indices, int n) override;
  std::vector<LayerTiming> layer_timings() override { return layer_timings_; }
  std::int64_t device_memory_bytes() const override;

 private:
  enum class Head : std::uint8_t { probabilities, softmax_logits, sigmoid_logits };
  enum class Pending : std::uint8_t { none, images, indices };

  // Frees what the executor holds outside its members' destructors (streams, handles, events,
  // pinned and dataset memory); nodes first, as they use the handles. Safe to call twice.
  void release();
  void lower(const ModelSpec& spec, const ShapeTable& table);
  void plan_and_allocate();
  void initialise_parameters(std::uint64_t seed);
  void refresh_copy(const ParamSlot& slot);
  ParamSlot& slot(int layer, ParamKind kind);
  const DTensor& node_input(int k) const { return k == 0 ? input_ : outputs_[k - 1]; }
  DTensor grad_view(int buffer, const DTensor& like) const;
  std::vector<float> to_host(const DTensor& t);
  void check_labels(std::span<const std::int32_t> labels, int n) const;

  // The staging of a batch: host -> pinned slot -> device incoming buffer (copy stream);
  // prepare_step() moves it into the input and label buffers on the compute stream.
  std::byte* next_staging_slot();
  void stage_and_copy(std::byte* slot, std::size_t bytes);
  // Writes the step parameters and takes the loaded batch (if a new one is pending) into the
  // input: a copy, or the gather from the dataset on the device.
  void prepare_step(std::uint64_t step, bool train);
  void write_params(std::uint64_t step, bool train);
  void no_step_in_flight(const char* call) const;
  // The step's device work after the batch is in place: forward, loss, backward, overflow
  // check, loss-scale update, optimizer (captured once in a graph with cuda_graphs).
  void enqueue_step_body();
  void run_forward(bool timed);
  void run_loss(bool compute_gradient);
  void run_backward(bool timed);
  // Reads the device state into the pinned mirror (synchronises), lets `edit` change it and
  // writes it back (asynchronously, before whatever is enqueued next).
  template <class Edit>
  void edit_state(Edit edit);
  void read_state();

  ExecutorOptions options_;
  int device_;
  DeviceInfo info_;
  int batch_;
  LossKind loss_kind_;
  DType copy_dtype_ = DType::f32;  // the policy's 16-bit type; f32: no copies
  CudaContext ctx_;
  cudaStream_t copy_stream_ = nullptr;
  DeviceArena arena_;
  std::vector<std::unique_ptr<CudaNode>> nodes_;
  std::vector<DTensor> outputs_;
  std::vector<DeviceArena::Id> output_ids_;
  std::vector<int> layer_last_node_;
  DTensor input_;
  std::int32_t* labels_ = nullptr;
  DeviceArena::Id input_id_ = 0, labels_id_ = 0, grad_ids_[2] = {0, 0}, scratch_id_ = 0;
  DeviceArena::Id incoming_id_ = 0, params_id_ = 0, state_id_ = 0;
  DeviceArena::Id lt_ws_id_ = 0, dnn_ws_id_ = 0;
  DeviceArena::Id master_id_ = 0, grad_id_ = 0, copy_id_ = 0, opt_ids_[2] = {0, 0};
  std::int64_t classes_ = 0;
  Head head_ = Head::probabilities;
  int first_param_node_ = -1;
  int real_samples_ = 0;
  int backward_from_ = -1;
  DTensor input_gradient_;
  std::vector<ParamSlot*> slots_;
  std::int64_t param_floats_ = 0;
  int state_arrays_ = 0;

  // Host side of the step: pinned staging (two slots, used in turn), parameters, state mirror.
  std::byte* pinned_ = nullptr;
  std::size_t staging_bytes_ = 0;
  int staging_next_ = 0;
  cudaEvent_t staging_copied_[2] = {nullptr, nullptr};
  cudaEvent_t batch_ready_ = nullptr, incoming_consumed_ = nullptr, params_copied_ = nullptr;
  StepParams* host_params_ = nullptr;
  DeviceState* host_state_ = nullptr;
  Pending pending_ = Pending::none;
  int pending_n_ = 0;
  StepParams* params_ = nullptr;  // device
  DeviceState* state_ = nullptr;  // device

  // The device step.
  DeviceLossScaling scaling_;
  LossScaleRule<float> rule_;
  OptimizerParams optimizer_;
  cudaEvent_t ev_start_ = nullptr, ev_forward_ = nullptr, ev_backward_ = nullptr, ev_end_ = nullptr;
  bool step_in_flight_ = false;
  int step_samples_ = 0;
  std::int64_t eager_steps_ = 0;  // steps run before the graph is captured
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  // Per-layer timing: an event before each node and after the last, forward and backward.
  std::vector<cudaEvent_t> node_events_fwd_, node_events_bwd_;
  std::vector<LayerTiming> layer_timings_;
  int timed_backward_from_ = -1, timed_backward_stop_ = 0;

  // The training split kept on the device (upload_dataset).
  std::uint8_t* dataset_images_ = nullptr;
  std::int32_t* dataset_labels_ = nullptr;
  std::int64_t dataset_size_ = 0;
  std::int64_t sample_elements_ = 0;
  std::size_t dataset_bytes_ = 0;
};

}  // namespace mixlab::cuda
