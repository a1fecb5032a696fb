// The sequence layers on the CPU, as MixLab's own OpenMP loops (each is a pass over memory, and
// a row of a few hundred features): Embedding (a gather of table rows by token id, a scatter-add
// back), PositionEmbedding (the table's first rows for every sample, summed over the batch back)
// and LayerNormalization (engine/ops/layer_norm.h's math, shared with CUDA). Each reads its input
// in any storage and writes its own; their parameters are float32 (Keras reads an Embedding's
// float32 table and casts the rows it takes; a normalization's statistics and affine transform
// are float32).
#pragma once

#include "engine/backend/cpu/cpu_node.h"
#include "engine/ops/layer_norm.h"

namespace mixlab::cpu {

// (batch, steps) float32 ids -> (batch, steps, output_dim).
class EmbeddingNode : public CpuNode {
 public:
  EmbeddingNode(const LayerSpec& spec, int layer_index, Storage storage);
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;
  std::vector<ParamSlot*> params() override { return {&table_}; }

 private:
  std::int64_t vocabulary_, width_;
  ParamSlot table_;
};

// (batch, steps, features): its table's rows 0..steps-1 for every sample.
class PositionEmbeddingNode : public CpuNode {
 public:
  PositionEmbeddingNode(const LayerSpec& spec, const LayerInfo& info, Storage storage);
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;
  std::vector<ParamSlot*> params() override { return {&table_}; }

 private:
  std::int64_t positions_, width_;
  ParamSlot table_;
};

class LayerNormNode : public CpuNode {
 public:
  LayerNormNode(const LayerSpec& spec, const LayerInfo& info, std::int64_t batch, Storage storage);
  std::size_t reserve(Arena& arena) override;
  void bind(const Arena& arena, const dnnl::memory& scratchpad) override;
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;
  std::vector<ParamSlot*> params() override;

 private:
  LayerNormArgs args_;
  std::int64_t rows_, width_;
  ParamSlot gamma_, beta_;
  Arena::Id stats_id_ = 0;
  RowStats* stats_ = nullptr;  // (rows) of the last forward
  float* partials_ = nullptr;  // (threads, 2, width): dgamma and dbeta per thread
  int threads_ = 1;
};

}  // namespace mixlab::cpu
