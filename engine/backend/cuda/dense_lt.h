// One matmul of a Dense layer through cuBLASLt, configured once per shape: the layouts, the
// compute type, the epilogue (bias, ReLU) and the algorithm (cuBLASLt's heuristic, asked once).
// The shapes of a Dense layer's three products: layouts.h.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "engine/backend/cuda/layouts.h"
#include "engine/core/precision.h"

namespace mixlab::cuda {

class LtMatmul {
 public:
  LtMatmul() = default;
  // Picks the algorithm for `shape` with at most `workspace_bytes` of workspace; `what` names
  // the layer and product in errors.
  LtMatmul(cublasLtHandle_t handle, const LtMatmulShape& shape, std::size_t workspace_bytes,
           std::string what);
  ~LtMatmul();
  LtMatmul(LtMatmul&& other) noexcept;
  LtMatmul& operator=(LtMatmul&& other) noexcept;
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  // D = op(A) . op(B) (+ bias, ReLU by the epilogue); beta = 0.
  void run(const void* a, const void* b, void* d, const void* bias, void* workspace,
           cudaStream_t stream) const;
  // An FP8 product (LtMatmulShape::fp8): D = a_scale * b_scale * op(A) . op(B) (+ epilogue),
  // the scales device floats (the operands' dequantising scales).
  void run_fp8(const void* a, const float* a_scale, const void* b, const float* b_scale, void* d,
               const void* bias, void* workspace, cudaStream_t stream) const;
  const std::string& what() const { return what_; }

 private:
  void release();

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  std::size_t workspace_bytes_ = 0;
  bool has_bias_ = false;
  bool fp8_ = false;
  std::string what_;
};

cudaDataType_t cuda_type(DType dtype);
cudaDataType_t cuda_type(LtFp8 format);

}  // namespace mixlab::cuda
