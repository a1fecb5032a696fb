// MixLab's CUDA kernels (kernels.h) for the sequence layers: Embedding (a gather, and an atomic
// scatter-add back), PositionEmbedding (a broadcast, and a sum over the batch back) and
// LayerNormalization (a warp per row, float32 statistics; dgamma and dbeta from per-chunk partial
// sums added in a fixed order), with the math shared with the CPU (engine/ops/embedding.h,
// engine/ops/layer_norm.h).
#include "engine/backend/cuda/kernels.h"

#include "engine/backend/cuda/kernels_common.cuh"
#include "engine/ops/attention.h"
#include "engine/ops/embedding.h"
#include "engine/ops/layer_norm.h"

namespace mixlab::cuda::kernels {

namespace {

using namespace detail;

template <class T>
__global__ void embedding_forward_kernel(const float* ids, const float* table, T* y, std::int64_t n,
                                         std::int64_t vocabulary, int width) {
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    const std::int64_t p = i / width;
    const std::int64_t j = i - p * width;
    y[i] = from_float<T>(table[embedding_row(ids[p], vocabulary) * width + j]);
  }
}

template <class T>
__global__ void embedding_backward_kernel(const float* ids, const T* dy, float* dtable,
                                          std::int64_t n, std::int64_t vocabulary, int width) {
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    const std::int64_t p = i / width;
    const std::int64_t j = i - p * width;
    atomicAdd(&dtable[embedding_row(ids[p], vocabulary) * width + j], to_float(dy[i]));
  }
}

template <class T>
__global__ void position_forward_kernel(const float* table, T* y, std::int64_t n,
                                        std::int64_t per_sample) {
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    y[i] = from_float<T>(table[i % per_sample]);
  }
}

template <class T>
__global__ void position_backward_kernel(const T* dy, float* dtable, int samples,
                                         std::int64_t per_sample, std::int64_t table_elements) {
  for (std::int64_t i = thread_index(); i < table_elements; i += thread_stride()) {
    float sum = 0.0f;
    if (i < per_sample) {
      for (int b = 0; b < samples; ++b) sum += to_float(dy[b * per_sample + i]);
    }
    dtable[i] = sum;
  }
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

constexpr int kWarpsPerBlock = 8;

// A warp per row: two passes for the mean and the variance about it, a third writes y.
template <class T>
__global__ void layer_norm_forward_kernel(const T* x, T* y, std::int64_t rows, int width,
                                          float epsilon, const float* gamma, const float* beta,
                                          RowStats* stats) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kWarpsPerBlock;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
       r < rows; r += warps) {
    const T* in = x + r * width;
    float sum = 0.0f;
    for (int j = lane; j < width; j += 32) sum += to_float(in[j]);
    const float mean = warp_sum(sum) / static_cast<float>(width);
    float sq = 0.0f;
    for (int j = lane; j < width; j += 32) {
      const float c = to_float(in[j]) - mean;
      sq += c * c;
    }
    RowStats st;
    st.mean = mean;
    st.inv_std = 1.0f / sqrtf(warp_sum(sq) / static_cast<float>(width) + epsilon);
    if (lane == 0) stats[r] = st;
    T* out = y + r * width;
    for (int j = lane; j < width; j += 32) {
      out[j] = from_float<T>(
          layer_norm_value(to_float(in[j]), st, gamma ? gamma[j] : 1.0f, beta ? beta[j] : 0.0f));
    }
  }
}

template <class T>
__global__ void layer_norm_dx_kernel(const T* x, const T* dy, T* dx, std::int64_t rows, int width,
                                     const float* gamma, const RowStats* stats) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kWarpsPerBlock;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
       r < rows; r += warps) {
    const RowStats st = stats[r];
    const T* in = x + r * width;
    const T* g_in = dy + r * width;
    float mg = 0.0f, mgx = 0.0f;
    for (int j = lane; j < width; j += 32) {
      const float g = to_float(g_in[j]) * (gamma ? gamma[j] : 1.0f);
      mg += g;
      mgx += g * ((to_float(in[j]) - st.mean) * st.inv_std);
    }
    mg = warp_sum(mg) / static_cast<float>(width);
    mgx = warp_sum(mgx) / static_cast<float>(width);
    T* out = dx + r * width;
    for (int j = lane; j < width; j += 32) {
      const float g = to_float(g_in[j]) * (gamma ? gamma[j] : 1.0f);
      const float xhat = (to_float(in[j]) - st.mean) * st.inv_std;
      out[j] = from_float<T>(st.inv_std * (g - mg - xhat * mgx));
    }
  }
}

// dgamma and dbeta: chunk y of the rows summed per column into partials[y][0 | 1][column].
constexpr int kChunks = 64;
constexpr int kColumns = 32;
constexpr int kRowLanes = 8;

template <class T>
__global__ void layer_norm_param_partials_kernel(const T* x, const T* dy, std::int64_t rows,
                                                 int width, const RowStats* stats,
                                                 float* partials) {
  __shared__ float part[2][kRowLanes][kColumns];
  const int c = blockIdx.x * kColumns + threadIdx.x;
  float sg = 0.0f, sb = 0.0f;
  if (c < width) {
    for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * kRowLanes + threadIdx.y; r < rows;
         r += static_cast<std::int64_t>(gridDim.y) * kRowLanes) {
      const RowStats st = stats[r];
      const float g = to_float(dy[r * width + c]);
      sg += g * ((to_float(x[r * width + c]) - st.mean) * st.inv_std);
      sb += g;
    }
  }
  part[0][threadIdx.y][threadIdx.x] = sg;
  part[1][threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y != 0 || c >= width) return;
  float tg = 0.0f, tb = 0.0f;
  for (int k = 0; k < kRowLanes; ++k) {
    tg += part[0][k][threadIdx.x];
    tb += part[1][k][threadIdx.x];
  }
  partials[(static_cast<std::int64_t>(blockIdx.y) * 2) * width + c] = tg;
  partials[(static_cast<std::int64_t>(blockIdx.y) * 2 + 1) * width + c] = tb;
}

__global__ void layer_norm_param_sum_kernel(const float* partials, int width, float* dgamma,
                                            float* dbeta) {
  for (std::int64_t c = thread_index(); c < width; c += thread_stride()) {
    float tg = 0.0f, tb = 0.0f;
    for (int k = 0; k < kChunks; ++k) {
      tg += partials[(static_cast<std::int64_t>(k) * 2) * width + c];
      tb += partials[(static_cast<std::int64_t>(k) * 2 + 1) * width + c];
    }
    if (dgamma) dgamma[c] = tg;
    if (dbeta) dbeta[c] = tb;
  }
}

unsigned row_blocks(std::int64_t rows) {
  return static_cast<unsigned>(
      std::min<std::int64_t>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxBlocks));
}

}  // namespace

void embedding_forward(const float* ids, const float* table, void* y, DType dtype,
                       std::int64_t positions, std::int64_t vocabulary, int width,
                       cudaStream_t stream) {
  const std::int64_t n = positions * width;
  if (n <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    embedding_forward_kernel<T>
        <<<grid_for(n), kBlock, 0, stream>>>(ids, table, static_cast<T*>(y), n, vocabulary, width);
  });
  MIXLAB_CHECK_LAUNCH("embedding_forward_kernel");
}

void embedding_backward(const float* ids, const void* dy, DType dtype, float* dtable,
                        std::int64_t positions, std::int64_t vocabulary, int width,
                        cudaStream_t stream) {
  MIXLAB_CHECK_CALL(cudaMemsetAsync(
      dtable, 0, static_cast<std::size_t>(vocabulary * width) * sizeof(float), stream));
  const std::int64_t n = positions * width;
  if (n <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    embedding_backward_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(ids, static_cast<const T*>(dy),
                                                                     dtable, n, vocabulary, width);
  });
  MIXLAB_CHECK_LAUNCH("embedding_backward_kernel");
}

void position_embedding_forward(const float* table, void* y, DType dtype, int samples,
                                std::int64_t per_sample, cudaStream_t stream) {
  const std::int64_t n = samples * per_sample;
  if (n <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    position_forward_kernel<T>
        <<<grid_for(n), kBlock, 0, stream>>>(table, static_cast<T*>(y), n, per_sample);
  });
  MIXLAB_CHECK_LAUNCH("position_forward_kernel");
}

void position_embedding_backward(const void* dy, DType dtype, float* dtable, int samples,
                                 std::int64_t per_sample, std::int64_t table_elements,
                                 cudaStream_t stream) {
  if (table_elements <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    position_backward_kernel<T><<<grid_for(table_elements), kBlock, 0, stream>>>(
        static_cast<const T*>(dy), dtable, samples, per_sample, table_elements);
  });
  MIXLAB_CHECK_LAUNCH("position_backward_kernel");
}

std::int64_t layer_norm_partials_floats(int width) {
  return static_cast<std::int64_t>(kChunks) * 2 * width;
}

void layer_norm_forward(const void* x, void* y, DType dtype, std::int64_t rows, int width,
                        float epsilon, const float* gamma, const float* beta, void* stats,
                        cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    layer_norm_forward_kernel<T><<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), rows, width, epsilon, gamma, beta,
        static_cast<RowStats*>(stats));
  });
  MIXLAB_CHECK_LAUNCH("layer_norm_forward_kernel");
}

void layer_norm_backward(const void* x, const void* dy, void* dx, DType dtype, std::int64_t rows,
                         int width, const float* gamma, const void* stats, float* dgamma,
                         float* dbeta, float* partials, cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return;
  const auto* st = static_cast<const RowStats*>(stats);
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xt = static_cast<const T*>(x);
    const T* dyt = static_cast<const T*>(dy);
    if (dgamma || dbeta) {
      const dim3 grid(static_cast<unsigned>((width + kColumns - 1) / kColumns), kChunks);
      layer_norm_param_partials_kernel<T>
          <<<grid, dim3(kColumns, kRowLanes), 0, stream>>>(xt, dyt, rows, width, st, partials);
      MIXLAB_CHECK_LAUNCH("layer_norm_param_partials_kernel");
      layer_norm_param_sum_kernel<<<grid_for(width), kBlock, 0, stream>>>(partials, width, dgamma,
                                                                          dbeta);
      MIXLAB_CHECK_LAUNCH("layer_norm_param_sum_kernel");
    }
    if (dx) {
      layer_norm_dx_kernel<T><<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream>>>(
          xt, dyt, static_cast<T*>(dx), rows, width, gamma, st);
      MIXLAB_CHECK_LAUNCH("layer_norm_dx_kernel");
    }
  });
}

}  // namespace mixlab::cuda::kernels
namespace mixlab::cuda::kernels {

namespace {

using namespace detail;

constexpr int kAttentionBlock = 128;

__device__ float block_max(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;  // in every thread
}

__device__ float block_total(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;  // in every thread
}

// A block per row of the (batch, heads, steps, steps) scores: row r is query step r % steps.
// Three passes over the row (L2 keeps it): its maximum, the sum of the exponentials, the weights;
// engine/ops/attention.h's attention_softmax_row, the masked keys' weights 0.
template <class T>
__global__ void attention_softmax_kernel(T* scores, int steps, bool causal, float scale) {
  __shared__ float reduce[32];
  const std::int64_t r = blockIdx.x;
  const int i = static_cast<int>(r % steps);
  T* row = scores + r * steps;
  const int n = causal ? i + 1 : steps;  // the keys it attends to
  float local_max = kMaskedScore;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    local_max = fmaxf(local_max, to_float(row[j]) * scale);
  }
  const float m = block_max(local_max, reduce);
  float local_sum = 0.0f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) local_sum += expf(to_float(row[j]) * scale - m);
  const float sum = block_total(local_sum, reduce);
  for (int j = threadIdx.x; j < steps; j += blockDim.x) {
    row[j] = j < n ? from_float<T>(expf(to_float(row[j]) * scale - m) / sum) : from_float<T>(0.0f);
  }
}

// dS = P (dP - P.dP) * scale, a block per row; 0 where masked (P is). dP (float32 from its
// product) is taken in the layer's dtype and dS stored in it, as Keras's einsums' gradients are
// and the CPU's backward rounds them.
template <class T>
__global__ void attention_softmax_backward_kernel(const T* probs, const float* dprobs, T* dscores,
                                                  int steps, float scale) {
  __shared__ float reduce[32];
  const std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * steps;
  float local = 0.0f;
  for (int j = threadIdx.x; j < steps; j += blockDim.x) {
    local += to_float(probs[at + j]) * to_float(from_float<T>(dprobs[at + j]));
  }
  const float dot = block_total(local, reduce);
  for (int j = threadIdx.x; j < steps; j += blockDim.x) {
    const float p = to_float(probs[at + j]);
    const float dp = to_float(from_float<T>(dprobs[at + j]));
    dscores[at + j] = from_float<T>(p * (dp - dot) * scale);
  }
}

std::int64_t score_rows(const AttentionShape& shape) {
  return static_cast<std::int64_t>(shape.batch) * shape.heads * shape.steps;
}

}  // namespace

void attention_softmax(void* scores, DType dtype, const AttentionShape& shape,
                       cudaStream_t stream) {
  const std::int64_t rows = score_rows(shape);
  if (rows <= 0) return;
  const float scale = 1.0f / sqrtf(static_cast<float>(shape.key_dim));
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    attention_softmax_kernel<T><<<static_cast<unsigned>(rows), kAttentionBlock, 0, stream>>>(
        static_cast<T*>(scores), shape.steps, shape.causal, scale);
  });
  MIXLAB_CHECK_LAUNCH("attention_softmax_kernel");
}

void attention_softmax_backward(const void* probs, const float* dprobs, void* dscores,
                                DType dtype, const AttentionShape& shape, cudaStream_t stream) {
  const std::int64_t rows = score_rows(shape);
  if (rows <= 0) return;
  const float scale = 1.0f / sqrtf(static_cast<float>(shape.key_dim));
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    attention_softmax_backward_kernel<T>
        <<<static_cast<unsigned>(rows), kAttentionBlock, 0, stream>>>(
            static_cast<const T*>(probs), dprobs, static_cast<T*>(dscores), shape.steps, scale);
  });
  MIXLAB_CHECK_LAUNCH("attention_softmax_backward_kernel");
}

}  // namespace mixlab::cuda::kernels
