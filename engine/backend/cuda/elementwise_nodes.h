// The CUDA executor's elementwise nodes, each on MixLab's kernels (kernels.h): Cast, Flatten
// (a view), Activation (softmax row-wise), Rescaling, Normalization, Dropout and ZeroPadding2D.
// Each reads and
// writes one dtype; the plan puts a Cast before them where the input's differs.
#pragma once

#include "engine/backend/cuda/cuda_context.h"
#include "engine/ops/normalization.h"

namespace mixlab::cuda {

class CastNode final : public CudaNode {
 public:
  CastNode(int layer, DType to, std::string label) : CudaNode(layer, to, std::move(label)) {}
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;
};

class FlattenNode final : public CudaNode {
 public:
  using CudaNode::CudaNode;
  bool aliases_input() const override { return true; }
  void forward(CudaContext&, const DTensor&, const DTensor&) override {}
  void backward(CudaContext&, const DTensor&, const DTensor&, const DTensor&,
                const DTensor*) override {}
};

class ActivationNode final : public CudaNode {
 public:
  // `channels`: the row length softmax normalises over (the last dimension).
  // `relu`: Keras's ReLU layer's arguments (fn relu).
  ActivationNode(int layer, ActivationFn fn, int channels, DType dtype, std::string label,
                 const ReluArgs& relu = {})
      : CudaNode(layer, dtype, std::move(label)), fn_(fn), channels_(channels), relu_(relu) {}
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;

 private:
  ActivationFn fn_;
  int channels_;
  ReluArgs relu_;
};

class RescalingNode final : public CudaNode {
 public:
  RescalingNode(int layer, double scale, double offset, DType dtype, std::string label)
      : CudaNode(layer, dtype, std::move(label)),
        scale_(static_cast<float>(scale)),
        offset_(static_cast<float>(offset)) {}
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;

 private:
  float scale_, offset_;
};

// engine/ops/dropout.h's counter-based mask for (seed, layer, step): backward recomputes it.
// `noise_shape`: Keras's (dropout_noise).
class DropoutNode final : public CudaNode {
 public:
  DropoutNode(int layer, double rate, DType dtype, std::string label,
              std::vector<std::int64_t> noise_shape = {})
      : CudaNode(layer, dtype, std::move(label)),
        rate_(rate),
        noise_shape_(std::move(noise_shape)) {}
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;

 private:
  double rate_;
  std::vector<std::int64_t> noise_shape_;
};

// ZeroPadding2D: the input copied into the interior of its output, whose border stays zero
// (the arena is zeroed and nothing else writes it); backward crops the gradient.
// Normalization: (x - mean) / divisor per channel with engine/ops/normalization.h's constants,
// uploaded to the arena when it is bound; backward dy / divisor.
class NormalizationNode final : public CudaNode {
 public:
  NormalizationNode(int layer, const LayerSpec& spec, const LayerInfo& info, DType dtype,
                    std::string label);
  void reserve(DeviceArena& arena) override;
  void bind(const DeviceArena& arena) override;
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;

 private:
  NormalizationConstants constants_;
  DeviceArena::Id constants_id_ = 0;
  float* device_constants_ = nullptr;  // mean[C] then divisor[C]
};

class ZeroPaddingNode final : public CudaNode {
 public:
  ZeroPaddingNode(int batch, const LayerInfo& info, DType dtype, std::string label);
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;

 private:
  int n_, h_, w_, c_, top_, left_, hp_, wp_;
};

}  // namespace mixlab::cuda
