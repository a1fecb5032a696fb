// MixLab's CUDA kernels (kernels.h) that work row by row: softmax (forward and backward) and the
// loss with its gradient (engine/ops/loss.h's row functions), rows staged through float32.
#include "engine/backend/cuda/kernels.h"

#include <algorithm>
#include <cmath>

#include "engine/backend/cuda/kernels_common.cuh"
#include "engine/ops/loss.h"

namespace mixlab::cuda::kernels {

namespace {

using namespace detail;

// ---- row-wise: softmax and the loss --------------------------------------------------------

// Softmax rows are staged as float32 in shared memory, `rows_per_block` rows at a time (loaded
// and stored by the whole block, coalesced), and each row is computed by one thread with the
// shared row function. Row stride odd, so that the threads' rows fall in different banks.
constexpr int kRowBlock = 128;
constexpr std::size_t kRowSharedBytes = 48 * 1024;

int odd_stride(int k) {
  return k % 2 == 1 ? k : k + 1;
}

// Copies rows [first, first + count) of src (k per row) into shared rows of `stride` floats.
template <class T>
__device__ void stage_rows(const T* src, std::int64_t first, int count, int k, int stride,
                           float* rows) {
  const T* in = src + first * k;
  const int n = count * k;
  for (int e = threadIdx.x; e < n; e += blockDim.x)
    rows[(e / k) * stride + e % k] = to_float(in[e]);
}

template <class T>
__device__ void unstage_rows(const float* rows, std::int64_t first, int count, int k, int stride,
                             T* dst) {
  T* out = dst + first * k;
  const int n = count * k;
  for (int e = threadIdx.x; e < n; e += blockDim.x)
    out[e] = from_float<T>(rows[(e / k) * stride + e % k]);
}

template <class T, bool kBackward>
__global__ void softmax_shared_kernel(const T* a, const T* b, T* out, std::int64_t rows, int k,
                                      int stride, int rows_per_block) {
  extern __shared__ float staged[];
  float* first = staged;                             // x (forward) or y (backward)
  float* second = staged + rows_per_block * stride;  // dy (backward)
  for (std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * rows_per_block; r0 < rows;
       r0 += static_cast<std::int64_t>(gridDim.x) * rows_per_block) {
    const int count = static_cast<int>(rows - r0 < rows_per_block ? rows - r0 : rows_per_block);
    stage_rows(a, r0, count, k, stride, first);
    if constexpr (kBackward) stage_rows(b, r0, count, k, stride, second);
    __syncthreads();
    if (static_cast<int>(threadIdx.x) < count) {
      float* row = first + threadIdx.x * stride;
      if constexpr (kBackward) {
        float* grad = second + threadIdx.x * stride;
        mixlab::softmax_backward_row(row, grad, k, grad);
      } else {
        mixlab::softmax_row(row, k, row);
      }
    }
    __syncthreads();
    unstage_rows(kBackward ? second : first, r0, count, k, stride, out);
    __syncthreads();  // before the next rows overwrite the staging
  }
}

// Rows too long for shared memory: one thread per row in global memory, float32 arithmetic
// (softmax_row's and softmax_backward_row's, read and written through T; safe in place).
template <class T, bool kBackward>
__global__ void softmax_global_kernel(const T* a, const T* b, T* out, std::int64_t rows, int k) {
  for (std::int64_t r = thread_index(); r < rows; r += thread_stride()) {
    const T* x = a + r * k;
    T* y = out + r * k;
    if constexpr (kBackward) {
      const T* dy = b + r * k;
      float dot = 0.0f;
      for (int j = 0; j < k; ++j) dot += to_float(dy[j]) * to_float(x[j]);
      for (int j = 0; j < k; ++j) y[j] = from_float<T>(to_float(x[j]) * (to_float(dy[j]) - dot));
    } else {
      float m = to_float(x[0]);
      for (int j = 1; j < k; ++j) m = to_float(x[j]) > m ? to_float(x[j]) : m;
      float sum = 0.0f;
      for (int j = 0; j < k; ++j) sum += expf(to_float(x[j]) - m);
      for (int j = 0; j < k; ++j) y[j] = from_float<T>(expf(to_float(x[j]) - m) / sum);
    }
  }
}

// Blocks take kRowBlock rows at a time: the block converts them into `scratch` (float32,
// coalesced), each thread computes one row's loss and gradient in place there, and the block
// writes the gradient back in `T`. Loss and correct count: block sums, one atomicAdd each.
template <class T, LossHead kHead>
__global__ void loss_kernel(const T* src, const std::int32_t* labels, int batch, int k,
                            int positions, const StepParams* params, DeviceState* state,
                            float* scratch, T* dsrc) {
  __shared__ float reduce[32];
  // `batch`: the rows (batch * positions, a row per label); the real ones are the real samples'.
  const int real = params->real_samples * positions;
  const float grad_mul = state->step_scale / static_cast<float>(real);  // as the CPU executor
  float loss = 0.0f, correct = 0.0f;
  for (int r0 = blockIdx.x * kRowBlock; r0 < batch; r0 += gridDim.x * kRowBlock) {
    const int count = min(kRowBlock, batch - r0);
    stage_rows(src, r0, count, k, k, scratch + static_cast<std::int64_t>(r0) * k);
    __syncthreads();
    const int r = r0 + threadIdx.x;
    if (static_cast<int>(threadIdx.x) < count) {
      float* row = scratch + static_cast<std::int64_t>(r) * k;
      if (r < real) {
        const RowLoss rl =
            mixlab::loss_row(kHead, row, k, labels[r], grad_mul, dsrc ? row : nullptr);
        loss += rl.loss;
        correct += rl.correct;
      } else if (dsrc) {
        for (int j = 0; j < k; ++j) row[j] = 0.0f;  // padding rows: no gradient
      }
    }
    __syncthreads();
    if (dsrc) unstage_rows(scratch + static_cast<std::int64_t>(r0) * k, r0, count, k, k, dsrc);
  }
  loss = block_sum(loss, reduce);
  correct = block_sum(correct, reduce);
  if (threadIdx.x == 0) {
    atomicAdd(&state->loss_sum, loss);
    atomicAdd(&state->correct, correct);
  }
}

}  // namespace

namespace {

template <bool kBackward>
void softmax_launch(const void* a, const void* b, void* out, DType dtype, std::int64_t rows, int k,
                    cudaStream_t stream, const char* name) {
  if (rows <= 0 || k <= 0) return;
  const int stride = odd_stride(k);
  const std::size_t row_bytes =
      static_cast<std::size_t>(stride) * sizeof(float) * (kBackward ? 2 : 1);
  const int rows_per_block =
      static_cast<int>(std::min<std::size_t>(kRowBlock, kRowSharedBytes / row_bytes));
  if (rows_per_block == 0) {
    with_dtype(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      softmax_global_kernel<T, kBackward><<<grid_for(rows), kBlock, 0, stream>>>(
          static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), rows, k);
    });
  } else {
    const std::size_t smem = row_bytes * static_cast<std::size_t>(rows_per_block);
    const unsigned grid = static_cast<unsigned>(
        std::min<std::int64_t>((rows + rows_per_block - 1) / rows_per_block, kMaxBlocks));
    with_dtype(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      softmax_shared_kernel<T, kBackward><<<grid, kRowBlock, smem, stream>>>(
          static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), rows, k, stride,
          rows_per_block);
    });
  }
  MIXLAB_CHECK_LAUNCH(name);
}

}  // namespace

void softmax_forward(const void* x, void* y, DType dtype, std::int64_t rows, int k,
                     cudaStream_t stream) {
  softmax_launch<false>(x, nullptr, y, dtype, rows, k, stream, "softmax_forward_kernel");
}

void softmax_backward(const void* y, const void* dy, void* dx, DType dtype, std::int64_t rows,
                      int k, cudaStream_t stream) {
  softmax_launch<true>(y, dy, dx, dtype, rows, k, stream, "softmax_backward_kernel");
}
void loss(LossHead head, const void* src, DType dtype, const std::int32_t* labels, int samples,
          int positions, int k, const StepParams* params, DeviceState* state, float* scratch,
          void* dsrc, cudaStream_t stream) {
  const int batch = samples * positions;  // rows
  if (batch <= 0 || k <= 0) return;
  const unsigned grid = static_cast<unsigned>(
      std::min<std::int64_t>((batch + kRowBlock - 1) / kRowBlock, kMaxBlocks));
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = static_cast<const T*>(src);
    T* d = static_cast<T*>(dsrc);
    switch (head) {
      case LossHead::softmax_crossentropy:
        loss_kernel<T, LossHead::softmax_crossentropy>
            <<<grid, kRowBlock, 0, stream>>>(s, labels, batch, k, positions, params, state,
                                              scratch, d);
        return;
      case LossHead::sigmoid_binary:
        loss_kernel<T, LossHead::sigmoid_binary>
            <<<grid, kRowBlock, 0, stream>>>(s, labels, batch, k, positions, params, state,
                                              scratch, d);
        return;
      case LossHead::crossentropy_probabilities:
        loss_kernel<T, LossHead::crossentropy_probabilities>
            <<<grid, kRowBlock, 0, stream>>>(s, labels, batch, k, positions, params, state,
                                              scratch, d);
        return;
      case LossHead::binary_probabilities:
        loss_kernel<T, LossHead::binary_probabilities>
            <<<grid, kRowBlock, 0, stream>>>(s, labels, batch, k, positions, params, state,
                                              scratch, d);
        return;
    }
    throw BackendError("CUDA loss: unknown loss head");
  });
  MIXLAB_CHECK_LAUNCH("loss_kernel");
}

}  // namespace mixlab::cuda::kernels
