// The CPU executor: one oneDNN (or MixLab) node per node of the execution plan, all memory in
// one arena, the step protocol run on the calling thread (launch_step does the work,
// finish_step hands over its result).
#pragma once

#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_node.h"
#include "engine/backend/op_access.h"

namespace mixlab::cpu {

using mixlab::kCpuLowering;  // how it lowers (engine/plan/execution_plan.h)

class CpuExecutor final : public ModelExecutor, private OpAccess {
 public:
  CpuExecutor(const ModelSpec& spec, const ShapeTable& table, const ExecutionPlan& plan,
              const ExecutorOptions& options, int threads);
  ~CpuExecutor() override;

  const MemoryPlan& memory_plan() const override { return arena_.plan(); }
  int batch_size() const override { return batch_; }
  void set_loss_scaling(const LossScaleConfig& config) override;
  void load_batch(std::span<const float> images, std::span<const std::int32_t> labels,
                  int n) override;
  // The batches are in host memory already: there is no device to keep the dataset on.
  bool upload_dataset(std::span<const std::uint8_t>, std::span<const std::int32_t>) override {
    return false;
  }
  void load_batch_indices(std::span<const std::int64_t> indices, int n) override;
  void launch_step(Phase phase, std::uint64_t step) override;
  StepResult finish_step() override;
  std::vector<LayerTiming> layer_timings() const override { return layer_timings_; }
  std::int64_t device_memory_bytes() const override { return 0; }
  OpAccess& ops() override { return *this; }
  std::vector<std::string> notes() const override { return notes_; }

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

  void lower(const ModelSpec& spec, const ShapeTable& table);
  void allocate();
  void initialise_parameters(std::uint64_t seed);
  void refresh_copies();
  // Brings the layer's copies up to date with the master (the forward copy only when asked:
  // the update loop writes elementwise copies itself).
  void refresh_copy(ParamSlot& slot, bool forward_copy);
  ParamSlot& slot(int layer, ParamKind kind);
  void use_threads() const;
  // A tensor a node reads: a node's output, or the batch (kPlanInput).
  const Tensor& tensor(int node) const {
    return node == kPlanInput ? input_ : outputs_[static_cast<std::size_t>(node)];
  }
  const Tensor& node_input(int k) const {
    return tensor(plan_.nodes[static_cast<std::size_t>(k)].input());
  }
  Tensor grad_view(int buffer, const Tensor& like) const;
  std::vector<float> to_host(const Tensor& t) const;
  // A slot's master or gradient as float32 in Keras's layout.
  std::vector<float> to_keras_layout(const ParamSlot& slot, dnnl::memory from);

  // The parts of a step. `timed`: per-layer times into layer_timings_.
  void run_forward(Phase phase, std::uint64_t step, bool timed);
  // The batch's loss; with compute_gradient, seeds backward with loss_scale * dLoss/dOutput.
  BatchLoss compute_loss(bool compute_gradient, float loss_scale);
  void run_backward(bool timed);
  // The gradient of node k's input i: written, or added to an earlier reader's.
  void input_gradient(int k, int i, const Tensor& dy, const Tensor* const* xs, int count);
  bool gradients_finite() const;
  // Per layer, its gradients' non-finite values (StepResult::overflows).
  std::vector<LayerOverflow> layer_overflows() const;
  // One optimizer update with gradients times grad_scale; returns whether every gradient was
  // finite (checked in the same pass).
  bool apply_gradients(float grad_scale, std::int64_t iteration);

  ExecutorOptions options_;
  ExecutionPlan plan_;
  int threads_;
  int batch_;
  CpuContext ctx_;
  Arena arena_;
  std::vector<std::unique_ptr<CpuNode>> nodes_;  // one per plan node
  std::vector<std::string> notes_;               // for the run (ModelExecutor::notes)
  std::vector<Tensor> outputs_;                  // node k's output; its input is node_input(k)
  Tensor input_;                                 // (batch, input shape) float32
  std::int32_t* labels_ = nullptr;               // (batch)
  float* loss_rows_ = nullptr;                   // (batch, classes): dLoss/dOutput in float32
  std::vector<void*> grad_buffers_;              // the plan's activation-gradient buffers
  int real_samples_ = 0;                         // of the loaded batch

  // Parameters: flat float32 master and state arrays with every slot at its offset (oneDNN's
  // layouts may pad a slot beyond its Keras count); gradients in one region, each slot at its
  // byte offset.
  std::vector<ParamSlot*> slots_;
  std::int64_t param_floats_ = 0;
  float* state_[2] = {nullptr, nullptr};  // (param_floats_) each: SGD velocity, Adam m and v
  int state_arrays_ = 0;

  // Backward bookkeeping.
  int backward_from_ = -1;  // node whose output gradient is seeded (in its plan grad buffer)
  Tensor input_gradient_;   // after backward, with options_.input_gradient

  // The step protocol.
  LossScaleConfig scaling_;
  LossScaleState<double> scale_state_;
  std::int64_t iteration_ = 0;  // applied updates so far
  bool step_done_ = false;      // launch_step ran, finish_step has not taken its result
  StepResult result_;
  std::vector<LayerTiming> layer_timings_;  // one per Keras layer, with options_.layer_timing
  std::vector<double> node_forward_ms_, node_backward_ms_;
};

}  // namespace mixlab::cpu
