// What MixLab's CUDA kernel files share (internal to kernels_*.cu): launch geometry, the launch
// check, 16-bit element types and dtype dispatch, thread indices and a block reduction.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "engine/backend/cuda/kernels.h"
#include "engine/core/error.h"
#include "engine/ops/activation.h"

namespace mixlab::cuda::kernels::detail {

constexpr int kBlock = 256;
// Enough resident blocks of 256 threads to fill the largest target GPU several times over; the
// grid-stride loops cover the rest. The kernels' tests on cudasim (tests/gpu/sim) build with a
// cap of a few blocks, so that those loops' later turns run there on small inputs too.
#ifndef MIXLAB_KERNELS_MAX_BLOCKS
#define MIXLAB_KERNELS_MAX_BLOCKS 4096
#endif
constexpr std::int64_t kMaxBlocks = MIXLAB_KERNELS_MAX_BLOCKS;

inline unsigned grid_for(std::int64_t n, int block = kBlock) {
  return static_cast<unsigned>(std::min<std::int64_t>((n + block - 1) / block, kMaxBlocks));
}

inline void check_cuda(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess) throw_backend_error("CUDA", cudaGetErrorString(err), what, file, line);
}
// After a launch: a bad configuration or an earlier asynchronous fault, named by the kernel.
#define MIXLAB_CHECK_LAUNCH(kernel) ::mixlab::cuda::kernels::detail::check_cuda(cudaGetLastError(), kernel, __FILE__, __LINE__)
#define MIXLAB_CHECK_CALL(expr) ::mixlab::cuda::kernels::detail::check_cuda((expr), #expr, __FILE__, __LINE__)

// ---- element types -------------------------------------------------------------------------

template <class T>
__device__ __forceinline__ float to_float(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return static_cast<float>(v);
  }
}

template <class T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return v;
  }
}

// A ReLU fused into the kernel before it (BatchNormalization, Add): forward on the float32 value
// before rounding (which keeps the sign, so the result is the two nodes' exactly), backward from
// the fused output relu_y (none when null), both engine/ops/activation.h's.
__device__ __forceinline__ float fused_relu(float v, bool relu) {
  return relu ? relu_forward(v, ReluArgs{}) : v;
}
template <class T>
__device__ __forceinline__ float relu_gate(float dy, const T* relu_y, std::int64_t i) {
  return relu_y == nullptr ? dy : relu_backward(to_float(relu_y[i]), dy, ReluArgs{});
}

template <class T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with T the element type of `dtype`.
template <class F>
void with_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32:
      f(TypeTag<float>{});
      return;
    case DType::f16:
      f(TypeTag<__half>{});
      return;
    case DType::bf16:
      f(TypeTag<__nv_bfloat16>{});
      return;
  }
  throw BackendError("CUDA kernels: unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

__device__ __forceinline__ std::int64_t thread_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t thread_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); the result is valid in thread
// 0. `shared` holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;
}

}  // namespace mixlab::cuda::kernels::detail
