// The CPU executor: a model lowered to nodes, all memory in one arena, driven step by step.
#pragma once

#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_node.h"

namespace mixlab::cpu {

class CpuExecutor final : public ModelExecutor {
 public:
  CpuExecutor(const ModelSpec& spec, const ShapeTable& table, const ExecutorOptions& options,
              int threads);
  ~CpuExecutor() override;

  const MemoryPlan& memory_plan() const override { return arena_.plan(); }
  int batch_size() const override { return batch_; }

  void load_batch(std::span<const float> images, std::span<const std::int32_t> labels,
                  int n) override;
  void forward(Phase phase, std::uint64_t step) override;
  BatchLoss loss(bool compute_gradient, float loss_scale) override;
  void backward() override;
  bool gradients_finite() override;
  bool apply_gradients(float grad_scale, std::int64_t iteration) override;
  void synchronize() override {}

  std::vector<float> read_output() override;
  std::vector<float> read_activation(int layer) override;
  void set_output_gradient(std::span<const float> dy) override;
  std::vector<float> read_input_gradient() override;
  std::vector<float> read_parameter(int layer, ParamKind kind) override;
  void write_parameter(int layer, ParamKind kind, std::span<const float> values) override;
  std::vector<float> read_gradient(int layer, ParamKind kind) override;

 private:
  // How the loss meets the model's output.
  enum class Head : std::uint8_t {
    probabilities,   // the loss reads the last node's output
    softmax_logits,  // final softmax + crossentropy: the loss reads the softmax's input
    sigmoid_logits,  // final sigmoid + binary crossentropy: likewise
  };

  void lower(const ModelSpec& spec, const ShapeTable& table);
  void plan_and_allocate();
  void initialise_parameters(std::uint64_t seed);
  void refresh_copies();
  // Brings the layer's copies up to date with the master (the forward copy only when asked:
  // the update loop writes elementwise copies itself).
  void refresh_copy(ParamSlot& slot, bool forward_copy);
  ParamSlot& slot(int layer, ParamKind kind);
  void use_threads() const;
  const Tensor& node_input(int k) const { return k == 0 ? input_ : outputs_[k - 1]; }
  Tensor grad_view(int buffer, const Tensor& like) const;
  std::vector<float> to_host(const Tensor& t) const;
  // A slot's master or gradient as float32 in Keras's layout.
  std::vector<float> to_keras_layout(const ParamSlot& slot, dnnl::memory from);

  ExecutorOptions options_;
  int threads_;
  int batch_;
  LossKind loss_kind_;
  CpuContext ctx_;
  Arena arena_;
  std::vector<std::unique_ptr<CpuNode>> nodes_;
  std::vector<Tensor> outputs_;        // node k's output; its input is node_input(k)
  std::vector<Arena::Id> output_ids_;  // reservation per node (aliasing nodes: unused)
  std::vector<int> layer_last_node_;   // Keras layer -> its last node
  Tensor input_;                       // (batch, input shape) float32
  Arena::Id input_id_ = 0, labels_id_ = 0, grad_ids_[2] = {0, 0};
  Arena::Id loss_values_id_ = 0, loss_grads_id_ = 0, scratchpad_id_ = 0;
  std::int64_t classes_ = 0;  // elements of the model's output per sample
  Head head_ = Head::probabilities;
  int first_param_node_ = -1;  // backward stops below it unless the input gradient is wanted
  int real_samples_ = 0;       // of the loaded batch

  // Parameters: flat float32 master and state arrays with every slot at its offset; gradients
  // in one region, each slot at its byte offset.
  std::vector<ParamSlot*> slots_;
  std::int64_t param_floats_ = 0;
  Arena::Id master_id_ = 0, grad_id_ = 0, state_ids_[2] = {0, 0};
  int state_arrays_ = 0;

  // Backward bookkeeping.
  int backward_from_ = -1;  // node whose output gradient is seeded in grad buffer 0
  Tensor input_gradient_;   // after backward, with options_.input_gradient
};

}  // namespace mixlab::cpu
