// The sequence layers on the CUDA executor, on MixLab's kernels (kernels_sequence.cu):
// Embedding, PositionEmbedding and LayerNormalization; MultiHeadAttention's core on cuBLASLt and
// those kernels, or on cuDNN's fused attention. Their parameters are read from the
// float32 masters (Keras reads an Embedding's float32 table and casts the rows it takes; a
// normalization computes in float32), their outputs written in the layer's dtype.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/cuda_context.h"
#include "engine/backend/cuda/dense_lt.h"
#include "engine/backend/cuda/fused_attention.h"
#include "engine/backend/cuda/layouts.h"

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

// MultiHeadAttention's core: the executor calls forward_inputs and backward_input; input 0's
// backward computes all three gradients (in the node's buffers), each then cast into its input's
// gradient buffer. Two ways to run it, chosen when it is built (AttentionKernels):
// - fused: cuDNN 9's scaled dot-product attention (fused_attention.h), forward and backward, the
//   scores never in memory; float16 and bfloat16 from compute capability 8.0, shapes cuDNN takes;
// - unfused: six cuBLASLt strided-batched products, a head at a time (layouts.h's
//   attention_products), with the scores and weights in memory in the layer's dtype and
//   MixLab's float32 softmax and its backward between them (kernels::attention_softmax*).
// cuDNN compiles a fused attention's kernels when it builds its plans (a second or more each):
// the layers of one shape share them, or the reason there are none. One per executor.
struct FusedAttentionBuilt {
  std::shared_ptr<const FusedAttention> kernels;
  std::string why_not;
};
using FusedAttentionCache =
    std::map<std::tuple<int, int, int, int, int, bool, DType>, FusedAttentionBuilt>;

class AttentionNode final : public CudaNode {
 public:
  // `compute_capability` as 8.9; `kernels` automatic takes the fused kernels where cuDNN builds
  // them for this shape, else the unfused; fused throws BackendError saying why it cannot.
  AttentionNode(CudaContext& ctx, const ExecutionPlan& plan, const PlanNode& node,
                AttentionKernels kernels, double compute_capability, FusedAttentionCache& cache);
  ~AttentionNode() override;
  void reserve(DeviceArena& arena) override;
  void bind(const DeviceArena& arena) override;
  std::size_t dnn_workspace_bytes() const override;
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;

  void forward_inputs(CudaContext& ctx, std::span<const DTensor* const> xs, const DTensor& y);
  // y: the forward's output (the fused backward reads it).
  void backward_input(CudaContext& ctx, std::span<const DTensor* const> xs, const DTensor& y,
                      const DTensor& dy, int i, const DTensor& dx);
  bool fused() const { return fused_ != nullptr; }
  // Why the unfused kernels run under `auto` (empty when fused, or when asked for unfused).
  const std::string& unfused_reason() const { return unfused_reason_; }

 private:
  kernels::AttentionShape shape_;
  DType dtype_;
  std::shared_ptr<const FusedAttention> fused_;
  std::string unfused_reason_;
  AttentionProducts products_;
  LtMatmul scores_, values_, probs_grad_, values_grad_, keys_grad_, query_grad_;
  // Unfused: the weights P (batch, heads, steps, steps) in dtype, kept for the backward; dP
  // float32 and dS in dtype (workspace). Fused: the softmax's statistics (batch, heads, steps)
  // float32, kept. Both: dq, dk, dv (float32 unfused, dtype fused).
  DeviceArena::Id kept_id_ = 0, dprobs_id_ = 0, dscores_id_ = 0, grads_id_ = 0;
  void* kept_ = nullptr;
  float* dprobs_ = nullptr;
  void* dscores_ = nullptr;
  void* grads_ = nullptr;
};

}  // namespace mixlab::cuda
