// The CUDA executor: one node per node of the execution plan (cuBLASLt matmuls, cuDNN
// convolutions and pooling, MixLab's kernels), all device memory in one allocation laid out by
// the plan, and the step protocol as one asynchronous launch per step (optionally a CUDA graph)
// with the loss-scale state on the device. The file pair is the executor's frame: creation,
// lowering, allocation and op-level access; the step lives in cuda_step.cpp, batch staging in
// batch_staging.*, the nodes in their own files.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/batch_staging.h"
#include "engine/backend/cuda/cuda_context.h"
#include "engine/backend/cuda/sequence_nodes.h"
#include "engine/backend/op_access.h"

namespace mixlab::cuda {

using mixlab::kCudaLowering;  // how it lowers (engine/plan/execution_plan.h)

// A stretch of the gradient array whose slots' layers compute in one dtype (alignment gaps
// included): the overflow check rounds it to that type, as the CPU backend does.
struct GradientRun {
  std::int64_t begin = 0, count = 0;
  DType raw = DType::f32;
};

class CudaExecutor final : public ModelExecutor, private OpAccess {
 public:
  CudaExecutor(const ModelSpec& spec, const ShapeTable& table, const ExecutionPlan& plan,
               const ExecutorOptions& options, int device, const DeviceInfo& info);
  ~CudaExecutor() override;

  const MemoryPlan& memory_plan() const override { return arena_.plan(); }
  int batch_size() const override { return plan_.batch; }
  void set_loss_scaling(const LossScaleConfig& config) override;
  void load_batch(std::span<const float> images, std::span<const std::int32_t> labels,
                  int n) override;
  bool upload_dataset(std::span<const std::uint8_t> images,
                      std::span<const std::int32_t> labels) override;
  void load_batch_indices(std::span<const std::int64_t> indices, int n) override;
  void launch_step(Phase phase, std::uint64_t step) override;
  StepResult finish_step() override;
  std::vector<LayerTiming> layer_timings() const override { return layer_timings_; }
  std::int64_t device_memory_bytes() const override;
  OpAccess& ops() override { return *this; }
  std::vector<std::string> notes() const override;

 private:
  // --- OpAccess ---
  void forward(Phase phase, std::uint64_t step) override;
  void set_output_gradient(std::span<const float> dy) override;
  void backward() override;
  std::vector<float> read_output() override;
  std::vector<float> read_activation(int layer) override;
  std::vector<float> read_input_gradient() override;
  std::vector<float> read_parameter(int layer, ParamKind kind) override;
  void write_parameter(int layer, ParamKind kind, std::span<const float> values) override;
  std::vector<float> read_gradient(int layer, ParamKind kind) override;

  // Frees what the executor holds outside its members' destructors (streams, handles, events,
  // pinned memory); nodes first, as they use the handles. Safe to call twice.
  void release();
  void lower(const ModelSpec& spec, const ShapeTable& table);
  void allocate();
  void initialise_parameters(std::uint64_t seed);
  void refresh_copy(const ParamSlot& slot);
  ParamSlot& slot(int layer, ParamKind kind);
  // A tensor a node reads: a node's output, or the batch (kPlanInput).
  const DTensor& tensor(int node) const {
    return node == kPlanInput ? input_ : outputs_[static_cast<std::size_t>(node)];
  }
  const DTensor& node_input(int k) const {
    return tensor(plan_.nodes[static_cast<std::size_t>(k)].input());
  }
  // The gradient of node k's input i: written, or added to an earlier reader's.
  void input_gradient(int k, int i, const DTensor& dy, std::span<const DTensor* const> xs);
  DTensor grad_view(int buffer, const DTensor& like) const;
  std::vector<float> to_host(const DTensor& t);
  void no_step_in_flight(const char* call) const;

  // --- the step (cuda_step.cpp) ---
  // Writes the step parameters and takes the loaded batch (if a new one is pending) into the
  // input: a copy, or the gather from the dataset on the device.
  void prepare_step(std::uint64_t step, bool train);
  void write_params(std::uint64_t step, bool train);
  // The training step's device work after the batch is in place: forward, loss, backward,
  // overflow check, loss-scale update, optimizer (captured once in a graph with cuda_graphs).
  void enqueue_train_body();
  void capture_graph();
  void run_forward(bool timed);
  void run_loss(bool compute_gradient);
  void run_backward(bool timed);
  // Reads the device state into the pinned mirror (synchronises), lets `edit` change it and
  // writes it back (asynchronously, before whatever is enqueued next).
  template <class Edit>
  void edit_state(Edit edit);
  void read_state();
  void collect_layer_timings();
  std::vector<LayerOverflow> layer_overflows();

  ExecutorOptions options_;
  ExecutionPlan plan_;
  int device_;
  DeviceInfo info_;
  CudaContext ctx_;
  DeviceArena arena_;
  std::unique_ptr<BatchStaging> staging_;
  std::vector<std::unique_ptr<CudaNode>> nodes_;  // one per plan node
  std::string fp8_note_;  // the starting weights' FP8 states (Fp8StateRestorer::note)
  FusedAttentionCache fused_attention_;           // the attention nodes' cuDNN plans, by shape
  std::vector<DTensor> outputs_;                  // node k's (batch, out shape); input: node_input
  DTensor input_;                                 // (batch, input shape) float32
  std::int32_t* labels_ = nullptr;                // (batch)
  float* loss_rows_ = nullptr;                    // (batch, classes) float32: the loss's staging
  std::vector<void*> grad_buffers_;               // the plan's activation-gradient buffers
  float* opt_state_[2] = {nullptr, nullptr};      // (param floats): SGD velocity, Adam m and v
  StepParams* params_ = nullptr;                  // device: this step's number, samples, phase
  DeviceState* state_ = nullptr;                  // device: loss sums, flags, the loss scale
  int real_samples_ = 0;
  int backward_from_ = -1;
  DTensor input_gradient_;
  std::vector<ParamSlot*> slots_;
  std::vector<GradientRun> gradient_runs_;

  // Host side of the step: the step parameters and the state mirror, pinned.
  std::byte* pinned_ = nullptr;
  StepParams* host_params_ = nullptr;
  DeviceState* host_state_ = nullptr;
  cudaEvent_t params_copied_ = nullptr;

  // The device step.
  LossScaleConfig scaling_;
  OptimizerParams optimizer_;
  cudaEvent_t ev_start_ = nullptr, ev_forward_ = nullptr, ev_backward_ = nullptr, ev_end_ = nullptr;
  bool step_in_flight_ = false;
  Phase step_phase_ = Phase::train;
  int step_samples_ = 0;
  std::int64_t eager_steps_ = 0;  // training steps run before the graph is captured
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  // Per-layer timing: an event before each node and after the last, forward and backward.
  std::vector<cudaEvent_t> node_events_fwd_, node_events_bwd_;
  std::vector<LayerTiming> layer_timings_;
  int timed_backward_from_ = -1, timed_backward_stop_ = 0;
};

}  // namespace mixlab::cuda
