// Nodes without oneDNN primitives: cast, activation (softmax by rows), rescaling, dropout and
// flatten. They read their input in any storage and write their own, so a dtype change at a
// Keras layer boundary costs no extra pass. Their math is engine/ops/, shared with CUDA.
#pragma once

#include <vector>
#include "engine/backend/cpu/cpu_node.h"

#include "engine/ops/activation.h"
#include "engine/ops/normalization.h"

namespace mixlab::cpu {

// MixLab's elementwise loop as the merge and activation nodes run it: an add of two (n) tensors
// into a third, all in `storage`; the best seconds of a few rounds (the doctor's calibration).
double elementwise_add_seconds(Storage storage, std::int64_t n);

// Converts to another storage (Keras's autocast of a layer's inputs to its compute dtype).
class CastNode : public CpuNode {
 public:
  CastNode(int layer_index, Storage to);
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;
};

// An activation: elementwise, or softmax over the last axis (rows of `row_length`; the rows
// are staged as float32 in two arena buffers of `elements`).
class ActivationNode : public CpuNode {
 public:
  // `relu`: the arguments of Keras's ReLU layer (fn relu).
  ActivationNode(int layer_index, ActivationFn fn, std::int64_t row_length, std::int64_t elements,
                 Storage storage, const ReluArgs& relu = {});
  std::size_t reserve(Arena& arena) override;
  void bind(const Arena& arena, const dnnl::memory& scratchpad) override;
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;
  ActivationFn fn() const { return fn_; }

 private:
  ActivationFn fn_;
  ReluArgs relu_;
  std::int64_t row_length_;
  std::int64_t elements_;
  Arena::Id stage_ids_[2] = {0, 0};
  float* stage_[2] = {nullptr, nullptr};  // (elements) float32, softmax only
};

class RescalingNode : public CpuNode {
 public:
  RescalingNode(int layer_index, double scale, double offset, Storage storage);
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;

 private:
  float scale_, offset_;
};

// Inverted dropout; the mask is recomputed in backward from (seed, layer, step). `noise_shape`:
// Keras's (engine/ops/dropout.h's dropout_noise).
class DropoutNode : public CpuNode {
 public:
  DropoutNode(int layer_index, double rate, Storage storage,
              std::vector<std::int64_t> noise_shape = {});
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;

 private:
  double rate_;
  std::vector<std::int64_t> noise_shape_;
  std::uint64_t step_ = 0;  // of the last training forward
  bool trained_ = false;    // the last forward applied the mask
};

// Normalization: (x - mean) / divisor per channel, constants from engine/ops/normalization.h
// rounded to the layer's dtype; backward dy / divisor.
class NormalizationNode : public CpuNode {
 public:
  NormalizationNode(int layer_index, const LayerSpec& layer, const LayerInfo& info, DType dtype,
                    Storage storage);
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;

 private:
  NormalizationConstants constants_;
};

// ZeroPadding2D: copies each image into the middle of a zeroed larger one (NHWC); backward
// takes the middle of the gradient.
class ZeroPaddingNode : public CpuNode {
 public:
  ZeroPaddingNode(int layer_index, const LayerInfo& info, Storage storage);
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;

 private:
  // Calls f(input index, output index, count) for each input row of W * C contiguous values.
  template <class F>
  void rows(std::int64_t batch, F f) const;
  std::int64_t h_, w_, c_, out_h_, out_w_;
  int top_, left_;
};

// Flatten: NHWC is already Keras's flattening order, so the output is the input's buffer.
class FlattenNode : public CpuNode {
 public:
  FlattenNode(int layer_index, Storage storage);
  bool aliases_input() const override { return true; }
  void forward(CpuContext&, const Tensor&, const Tensor&, Phase, std::uint64_t) override {}
  void backward(CpuContext&, const Tensor&, const Tensor&, const Tensor&, const Tensor*) override {}
};

}  // namespace mixlab::cpu
