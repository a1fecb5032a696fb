// One matmul of a Dense layer through cuBLASLt, configured once per shape: the layouts, the
// compute type, the epilogue (bias, ReLU) and the algorithm (cuBLASLt's heuristic, asked once).
//
// Row-major tensors are column-major transposes, so the three products of a Dense layer with
// X (rows, in), W (in, units), Y (rows, units) are, in cuBLASLt's column-major terms:
//   forward      Y^T (units, rows) = W^T (units, in)  . X^T (in, rows)       [N, N]
//   data grad   dX^T (in, rows)    = W   (in, units)  . dY^T (units, rows)   [T, N]
//   weight grad dW^T (units, in)   = dY^T (units, rows) . X (rows, in)       [N, T]
// where each operand is the row-major buffer as it is.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "engine/core/precision.h"

namespace mixlab::cuda {

enum class LtEpilogue : std::uint8_t { none, bias, relu, relu_bias };

struct LtMatmulShape {
  // C (m, n) = op(A) (m, k) . op(B) (k, n), column-major, leading dimensions packed.
  std::int64_t m = 0, n = 0, k = 0;
  bool transa = false, transb = false;
  DType ab = DType::f32;  // A and B
  DType cd = DType::f32;  // C and D (the bias has this type too)
  bool tf32 = false;      // float32 inputs: TF32 tensor cores
  LtEpilogue epilogue = LtEpilogue::none;
};

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
  const std::string& what() const { return what_; }

 private:
  void release();

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  std::size_t workspace_bytes_ = 0;
  bool has_bias_ = false;
  std::string what_;
};

cudaDataType_t cuda_type(DType dtype);

}  // namespace mixlab::cuda
