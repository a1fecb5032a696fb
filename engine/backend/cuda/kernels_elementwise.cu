// MixLab's CUDA kernels (kernels.h): elementwise activations (engine/ops/activation.h's math),
// Rescaling, Dropout (engine/ops/dropout.h's mask), the bias add and the bias gradient.
#include "engine/backend/cuda/kernels.h"

#include <algorithm>
#include <cmath>

#include "engine/backend/cuda/kernels_common.cuh"
#include "engine/ops/activation.h"
#include "engine/ops/dropout.h"

namespace mixlab::cuda::kernels {

namespace {

using namespace detail;

// ---- elementwise ---------------------------------------------------------------------------

template <class T, ActivationFn Fn>
__global__ void activation_forward_kernel(const T* x, T* y, std::int64_t n, ReluArgs relu) {
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    y[i] = from_float<T>(mixlab::activation_forward(Fn, to_float(x[i]), relu));
  }
}

template <class T, ActivationFn Fn>
__global__ void activation_backward_kernel(const T* x, const T* y, const T* dy, T* dx,
                                           std::int64_t n, ReluArgs relu) {
  const bool needs_input = mixlab::activation_backward_needs_input(Fn);
  const bool needs_output = !needs_input && Fn != ActivationFn::linear;
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    const float xv = needs_input ? to_float(x[i]) : 0.0f;
    const float yv = needs_output ? to_float(y[i]) : 0.0f;
    dx[i] = from_float<T>(mixlab::activation_backward(Fn, xv, yv, to_float(dy[i]), relu));
  }
}

template <class T>
__global__ void scale_offset_kernel(const T* x, T* y, float scale, float offset, std::int64_t n) {
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    y[i] = from_float<T>(to_float(x[i]) * scale + offset);
  }
}

template <class T>
__global__ void channel_normalize_kernel(const T* x, T* y, const float* mean,
                                         const float* divisor, int channels, std::int64_t n) {
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int c = static_cast<int>(i % channels);
    const float m = mean != nullptr ? mean[c] : 0.0f;
    y[i] = from_float<T>((to_float(x[i]) - m) / divisor[c]);
  }
}

template <class T>
__global__ void dropout_kernel(const T* x, T* y, std::int64_t n, double rate, std::uint64_t seed,
                               int layer, const StepParams* params, Broadcast noise) {
  if (params->train) {
    const DropoutMask mask = mixlab::make_dropout_mask(rate, seed, layer, params->step);
    for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
      const auto m = static_cast<std::uint64_t>(noise.input_index(i));
      y[i] = from_float<T>(to_float(x[i]) * mask.factor(m));
    }
  } else {
    for (std::int64_t i = thread_index(); i < n; i += thread_stride()) y[i] = x[i];
  }
}

// ---- bias ----------------------------------------------------------------------------------

// y[r, c] = bias[c] (kAdd: y[r, c] + bias[c]) over the flat (rows, channels) array.
template <class T, bool kAdd>
__global__ void bias_rows_kernel(T* y, const T* bias, std::int64_t n, int channels) {
  // The column follows the flat index incrementally (no 64-bit division per element).
  const std::int64_t stride = thread_stride();
  const int stride_mod = static_cast<int>(stride % channels);
  std::int64_t i = thread_index();
  int c = static_cast<int>(i % channels);
  for (; i < n; i += stride) {
    if constexpr (kAdd) {
      y[i] = from_float<T>(to_float(y[i]) + to_float(bias[c]));
    } else {
      y[i] = bias[c];
    }
    c += stride_mod;
    if (c >= channels) c -= channels;
  }
}

// Column sums of dy (rows, channels). A block covers a tile of `tile` columns (blockIdx.x) and
// `rows_per_pass` rows at a time (blockDim.x = 256 >= tile * rows_per_pass threads): when the
// tile is all the columns, one pass reads rows_per_pass whole rows, contiguous in memory. Rows
// are split over gridDim.y blocks; each block reduces its threads' partial sums in shared memory
// in a fixed order, then writes db (one block of rows) or adds to the zeroed db (several).
template <class T, bool kAtomic>
__global__ void bias_gradient_kernel(const T* dy, std::int64_t rows, int channels, int tile,
                                     int rows_per_pass, float* db) {
  __shared__ float partial[kBlock];
  const int t = threadIdx.x;
  const int col_in_tile = t % tile;
  const int row_in_pass = t / tile;
  const int col = blockIdx.x * tile + col_in_tile;
  const bool active = row_in_pass < rows_per_pass && col < channels;
  float acc = 0.0f;
  if (active) {
    const std::int64_t step = static_cast<std::int64_t>(gridDim.y) * rows_per_pass;
#pragma unroll 4  // several loads in flight per thread
    for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * rows_per_pass + row_in_pass;
         r < rows; r += step) {
      acc += to_float(dy[r * channels + col]);
    }
  }
  partial[t] = acc;
  __syncthreads();
  if (t < tile && col < channels) {
    float sum = 0.0f;
    for (int j = 0; j < rows_per_pass; ++j) sum += partial[j * tile + t];
    if constexpr (kAtomic) {
      atomicAdd(db + col, sum);
    } else {
      db[col] = sum;
    }
  }
}

}  // namespace

namespace {

// Softmax is row-wise: softmax_forward / softmax_backward.
void require_elementwise(ActivationFn fn) {
  if (fn == ActivationFn::softmax) {
    throw BackendError("CUDA activation kernels: softmax is row-wise (softmax_forward/backward)");
  }
}

}  // namespace

void activation_forward(ActivationFn fn, const void* x, void* y, DType dtype, std::int64_t n,
                        cudaStream_t stream, const ReluArgs& relu) {
  if (n <= 0) return;
  require_elementwise(fn);
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_elementwise_activation(fn, [&](auto f) {
      activation_forward_kernel<T, decltype(f)::value>
          <<<grid_for(n), kBlock, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n,
                                               relu);
    });
  });
  MIXLAB_CHECK_LAUNCH("activation_forward_kernel");
}

void activation_backward(ActivationFn fn, const void* x, const void* y, const void* dy, void* dx,
                         DType dtype, std::int64_t n, cudaStream_t stream, const ReluArgs& relu) {
  if (n <= 0) return;
  require_elementwise(fn);
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_elementwise_activation(fn, [&](auto f) {
      activation_backward_kernel<T, decltype(f)::value>
          <<<grid_for(n), kBlock, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(y),
                                               static_cast<const T*>(dy), static_cast<T*>(dx), n,
                                               relu);
    });
  });
  MIXLAB_CHECK_LAUNCH("activation_backward_kernel");
}

void scale_offset(const void* x, void* y, DType dtype, float scale, float offset, std::int64_t n,
                  cudaStream_t stream) {
  if (n <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    scale_offset_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), scale, offset, n);
  });
  MIXLAB_CHECK_LAUNCH("scale_offset_kernel");
}

void channel_normalize(const void* x, void* y, DType dtype, const float* mean,
                       const float* divisor, int channels, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    channel_normalize_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), mean, divisor, channels, n);
  });
  MIXLAB_CHECK_LAUNCH("channel_normalize_kernel");
}

void dropout(const void* x, void* y, DType dtype, std::int64_t n, double rate, std::uint64_t seed,
             int layer, const StepParams* params, cudaStream_t stream, const Broadcast& noise) {
  if (n <= 0) return;
  if (rate <= 0.0) {  // as the CPU: no mask at rate 0 (its threshold would drop 1 in 2^32)
    if (x != y) {
      MIXLAB_CHECK_CALL(cudaMemcpyAsync(y, x, static_cast<std::size_t>(n) * dtype_bytes(dtype),
                                        cudaMemcpyDeviceToDevice, stream));
    }
    return;
  }
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dropout_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), n, rate, seed, layer, params, noise);
  });
  MIXLAB_CHECK_LAUNCH("dropout_kernel");
}

namespace {

template <bool kAdd>
void bias_rows(void* y, const void* bias, DType dtype, std::int64_t rows, int channels,
               cudaStream_t stream) {
  if (rows <= 0 || channels <= 0) return;
  const std::int64_t n = rows * channels;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bias_rows_kernel<T, kAdd><<<grid_for(n), kBlock, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias), n, channels);
  });
  MIXLAB_CHECK_LAUNCH("bias_rows_kernel");
}

}  // namespace

void add_bias(void* y, const void* bias, DType dtype, std::int64_t rows, int channels,
              cudaStream_t stream) {
  bias_rows<true>(y, bias, dtype, rows, channels, stream);
}

void fill_bias(void* y, const void* bias, DType dtype, std::int64_t rows, int channels,
               cudaStream_t stream) {
  bias_rows<false>(y, bias, dtype, rows, channels, stream);
}

void bias_gradient(const void* dy, DType dtype, std::int64_t rows, int channels, float* db,
                   cudaStream_t stream) {
  if (channels <= 0) return;
  if (rows <= 0) {
    MIXLAB_CHECK_CALL(
        cudaMemsetAsync(db, 0, static_cast<std::size_t>(channels) * sizeof(float), stream));
    return;
  }
  // Column tiles of at most kBlock columns, balanced; as many rows per pass as fit in a block.
  const int tiles = (channels + kBlock - 1) / kBlock;
  const int tile = (channels + tiles - 1) / tiles;
  const int rows_per_pass = kBlock / tile;
  // Row blocks: each should sum at least 16 passes, and all blocks together about 2048.
  constexpr std::int64_t kMinPasses = 16;
  const std::int64_t passes = (rows + rows_per_pass - 1) / rows_per_pass;
  const std::int64_t row_blocks = std::clamp<std::int64_t>((passes + kMinPasses - 1) / kMinPasses,
                                                           1, std::max(1, 2048 / tiles));
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(row_blocks));
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (row_blocks == 1) {
      bias_gradient_kernel<T, false><<<grid, kBlock, 0, stream>>>(
          static_cast<const T*>(dy), rows, channels, tile, rows_per_pass, db);
    } else {
      MIXLAB_CHECK_CALL(
          cudaMemsetAsync(db, 0, static_cast<std::size_t>(channels) * sizeof(float), stream));
      bias_gradient_kernel<T, true><<<grid, kBlock, 0, stream>>>(static_cast<const T*>(dy), rows,
                                                                 channels, tile, rows_per_pass, db);
    }
  });
  MIXLAB_CHECK_LAUNCH("bias_gradient_kernel");
}

}  // namespace mixlab::cuda::kernels
