// Error checks for the CUDA runtime, cuBLASLt and cuDNN: a failing call throws BackendError
// naming the library, its message, the expression and the place (engine/core/error.h).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

#include "engine/core/error.h"

namespace mixlab::cuda {

const char* cublas_status_name(cublasStatus_t status);

}  // namespace mixlab::cuda

#define CUDA_CHECK(expr)                                                                         \
  do {                                                                                           \
    const cudaError_t mixlab_status_ = (expr);                                                   \
    if (mixlab_status_ != cudaSuccess) {                                                         \
      ::mixlab::throw_backend_error("CUDA", cudaGetErrorString(mixlab_status_), #expr, __FILE__, \
                                    __LINE__);                                                   \
    }                                                                                            \
  } while (0)

#define CUBLAS_CHECK(expr)                                                                     \
  do {                                                                                         \
    const cublasStatus_t mixlab_status_ = (expr);                                              \
    if (mixlab_status_ != CUBLAS_STATUS_SUCCESS) {                                             \
      ::mixlab::throw_backend_error("cuBLASLt",                                                \
                                    ::mixlab::cuda::cublas_status_name(mixlab_status_), #expr, \
                                    __FILE__, __LINE__);                                       \
    }                                                                                          \
  } while (0)

#define CUDNN_CHECK(expr)                                                                          \
  do {                                                                                             \
    const cudnnStatus_t mixlab_status_ = (expr);                                                   \
    if (mixlab_status_ != CUDNN_STATUS_SUCCESS) {                                                  \
      ::mixlab::throw_backend_error("cuDNN", cudnnGetErrorString(mixlab_status_), #expr, __FILE__, \
                                    __LINE__);                                                     \
    }                                                                                              \
  } while (0)
