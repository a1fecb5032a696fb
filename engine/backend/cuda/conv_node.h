// Conv2D on cuDNN (NHWC, KRSC filters; conv_dnn.h). Keras's asymmetric 'same' padding (an even
// window) is done by copying the input into a zero-bordered buffer and convolving it 'valid'.
#pragma once

#include <memory>

#include "engine/backend/cuda/conv_dnn.h"
#include "engine/backend/cuda/cuda_context.h"

namespace mixlab::cuda {

class ConvNode final : public CudaNode {
 public:
  ConvNode(CudaContext& ctx, const ExecutionPlan& plan, const PlanNode& node,
           const LayerSpec& spec, const LayerInfo& info);

  std::vector<ParamSlot*> params() override;
  std::size_t dnn_workspace_bytes() const override { return conv_->workspace_bytes(); }
  void reserve(DeviceArena& arena) override;
  void bind(const DeviceArena& arena) override;
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;

 private:
  bool bias_;
  bool asymmetric_ = false;
  int n_ = 0, h_ = 0, w_ = 0, c_ = 0, hp_ = 0, wp_ = 0, top_ = 0, left_ = 0;
  ConvShape shape_;
  ParamSlot kernel_, bias_slot_;
  std::unique_ptr<DnnConv> conv_;
  void* padded_ = nullptr;       // (n, hp, wp, c) when the padding is asymmetric
  void* padded_grad_ = nullptr;  // (n, hp, wp, c)
  void* dw16_ = nullptr;         // (k, r, s, c) in the 16-bit dtype: cuDNN's filter gradient
  DeviceArena::Id padded_id_ = 0, padded_grad_id_ = 0, dw16_id_ = 0;
};

}  // namespace mixlab::cuda
