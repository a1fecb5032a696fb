// Dense on cuBLASLt: Y = X W (+ b), the bias (and ReLU, when the plan fused it) in the matmul's
// epilogue; backward as two more matmuls and MixLab's bias-gradient kernel.
#pragma once

#include "engine/backend/cuda/cuda_context.h"
#include "engine/backend/cuda/dense_lt.h"

namespace mixlab::cuda {

class DenseNode final : public CudaNode {
 public:
  DenseNode(CudaContext& ctx, const ExecutionPlan& plan, const PlanNode& node);

  std::vector<ParamSlot*> params() override;
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override;
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override;

 private:
  std::int64_t rows_, in_, units_;  // X (rows, in), W (in, units)
  bool relu_, bias_;
  ParamSlot kernel_, bias_slot_;
  LtMatmul forward_, backward_data_, backward_weights_;
};

}  // namespace mixlab::cuda
