// Max and average pooling: cuDNN where Keras's padding is symmetric, MixLab's kernel where it
// is not (an even window with 'same').
#pragma once

#include <memory>

#include "engine/backend/cuda/conv_dnn.h"
#include "engine/backend/cuda/cuda_context.h"

namespace mixlab::cuda {

class PoolNode final : public CudaNode {
 public:
  PoolNode(CudaContext& ctx, const ExecutionPlan& plan, const PlanNode& node,
           const LayerSpec& spec, const LayerInfo& info);
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;

 private:
  bool max_;
  kernels::PoolShape shape_;
  std::unique_ptr<DnnPool> dnn_;  // null: MixLab's kernel
};

}  // namespace mixlab::cuda
