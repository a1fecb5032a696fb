// The sequence layers on the CUDA executor, on MixLab's kernels (kernels_sequence.cu):
// Embedding, PositionEmbedding and LayerNormalization. Their parameters are read from the
// float32 masters (Keras reads an Embedding's float32 table and casts the rows it takes; a
// normalization computes in float32), their outputs written in the layer's dtype.
#pragma once

#include <span>

#include "engine/backend/cuda/cuda_context.h"

namespace mixlab::cuda {

class EmbeddingNode final : public CudaNode {
 public:
  EmbeddingNode(const ExecutionPlan& plan, const PlanNode& node, const LayerSpec& spec);
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;
  std::vector<ParamSlot*> params() override { return {&table_}; }

 private:
  std::int64_t vocabulary_;
  int width_;
  ParamSlot table_;
};

class PositionEmbeddingNode final : public CudaNode {
 public:
  PositionEmbeddingNode(const ExecutionPlan& plan, const PlanNode& node);
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;
  std::vector<ParamSlot*> params() override { return {&table_}; }

 private:
  ParamSlot table_;
};

class LayerNormNode final : public CudaNode {
 public:
  LayerNormNode(const ExecutionPlan& plan, const PlanNode& node, const LayerSpec& spec);
  void reserve(DeviceArena& arena) override;
  void bind(const DeviceArena& arena) override;
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;
  std::vector<ParamSlot*> params() override;

 private:
  float epsilon_;
  std::int64_t rows_;
  int width_;
  std::vector<ParamSlot> slots_;  // Keras's order: gamma, beta (each if present)
  ParamSlot* gamma_ = nullptr;
  ParamSlot* beta_ = nullptr;
  DeviceArena::Id stats_id_ = 0, partials_id_ = 0;
  void* stats_ = nullptr;      // (rows) RowStats of the last forward
  float* partials_ = nullptr;  // dgamma / dbeta partial sums
};

// MultiHeadAttention's core (kernels::attention_*): the executor calls forward_inputs and
// backward_input; input 0's backward computes all three gradients (float32, in the node's
// buffers), each then cast into its input's gradient buffer.
class AttentionNode final : public CudaNode {
 public:
  AttentionNode(const ExecutionPlan& plan, const PlanNode& node);
  void reserve(DeviceArena& arena) override;
  void bind(const DeviceArena& arena) override;
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;

  void forward_inputs(CudaContext& ctx, std::span<const DTensor* const> xs, const DTensor& y);
  void backward_input(CudaContext& ctx, std::span<const DTensor* const> xs, const DTensor& dy,
                      int i, const DTensor& dx);

 private:
  kernels::AttentionShape shape_;
  DeviceArena::Id probs_id_ = 0, grads_id_ = 0;
  float* probs_ = nullptr;
  float* grads_ = nullptr;  // dq, dk, dv
};

}  // namespace mixlab::cuda
