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

// Row i of unit u = (sample b, head h): shared holds the query row then the row's weights.
template <class T>
__global__ void attention_forward_kernel(const T* q, const T* k, const T* v, T* y,
                                         AttentionShape shape, float scale, float* probs) {
  extern __shared__ float shared[];
  __shared__ float reduce[32];
  const int i = blockIdx.x;
  const int u = blockIdx.y;
  const int b = u / shape.heads, h = u % shape.heads;
  const int s = shape.steps, kd = shape.key_dim, vd = shape.value_dim;
  const std::int64_t qrow = static_cast<std::int64_t>(shape.heads) * kd;
  const std::int64_t vrow = static_cast<std::int64_t>(shape.heads) * vd;
  float* qi = shared;       // kd
  float* row = shared + kd;  // s
  const T* q_base = q + (static_cast<std::int64_t>(b) * s + i) * qrow + h * kd;
  for (int c = threadIdx.x; c < kd; c += blockDim.x) qi[c] = to_float(q_base[c]);
  __syncthreads();
  float local_max = kMaskedScore;
  for (int j = threadIdx.x; j < s; j += blockDim.x) {
    const T* kj = k + (static_cast<std::int64_t>(b) * s + j) * qrow + h * kd;
    float dot = 0.0f;
    for (int c = 0; c < kd; ++c) dot += qi[c] * to_float(kj[c]);
    // The scores einsum's output in the layer's dtype, then scaled and masked in float32.
    const float z = attends(shape.causal, i, j) ? to_float(from_float<T>(dot)) * scale
                                                 : kMaskedScore;
    row[j] = z;
    local_max = fmaxf(local_max, z);
  }
  const float m = block_max(local_max, reduce);
  float local_sum = 0.0f;
  for (int j = threadIdx.x; j < s; j += blockDim.x) {
    row[j] = expf(row[j] - m);
    local_sum += row[j];
  }
  const float sum = block_total(local_sum, reduce);
  float* p_out = probs + (static_cast<std::int64_t>(u) * s + i) * s;
  for (int j = threadIdx.x; j < s; j += blockDim.x) {
    const float p = to_float(from_float<T>(row[j] / sum));
    row[j] = p;
    p_out[j] = p;
  }
  __syncthreads();
  T* y_base = y + (static_cast<std::int64_t>(b) * s + i) * vrow + h * vd;
  for (int c = threadIdx.x; c < vd; c += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < s; ++j) {
      const float p = row[j];
      if (p != 0.0f) acc += p * to_float(v[(static_cast<std::int64_t>(b) * s + j) * vrow + h * vd + c]);
    }
    y_base[c] = from_float<T>(acc);
  }
}

// Row i of unit u: dP = dO_i v^T, dS = P (dP - P.dP) * scale; dq_i = dS k; dk_j += dS_j q_i and
// dv_j += P_j dO_i (atomically: other rows add to them).
template <class T>
__global__ void attention_backward_kernel(const T* q, const T* k, const T* v, const T* dy,
                                          AttentionShape shape, float scale, const float* probs,
                                          float* dq, float* dk, float* dv) {
  extern __shared__ float shared[];
  __shared__ float reduce[32];
  const int i = blockIdx.x;
  const int u = blockIdx.y;
  const int b = u / shape.heads, h = u % shape.heads;
  const int s = shape.steps, kd = shape.key_dim, vd = shape.value_dim;
  const std::int64_t qrow = static_cast<std::int64_t>(shape.heads) * kd;
  const std::int64_t vrow = static_cast<std::int64_t>(shape.heads) * vd;
  float* doi = shared;           // vd
  float* qi = shared + vd;       // kd
  float* ds = shared + vd + kd;  // s
  const std::int64_t qi_at = (static_cast<std::int64_t>(b) * s + i) * qrow + h * kd;
  const std::int64_t vi_at = (static_cast<std::int64_t>(b) * s + i) * vrow + h * vd;
  for (int c = threadIdx.x; c < vd; c += blockDim.x) doi[c] = to_float(dy[vi_at + c]);
  for (int c = threadIdx.x; c < kd; c += blockDim.x) qi[c] = to_float(q[qi_at + c]);
  __syncthreads();
  const float* p = probs + (static_cast<std::int64_t>(u) * s + i) * s;
  float local = 0.0f;
  for (int j = threadIdx.x; j < s; j += blockDim.x) {
    float dp = 0.0f;
    if (p[j] != 0.0f) {
      const std::int64_t vj_at = (static_cast<std::int64_t>(b) * s + j) * vrow + h * vd;
      for (int c = 0; c < vd; ++c) {
        dp += doi[c] * to_float(v[vj_at + c]);
        atomicAdd(&dv[vj_at + c], p[j] * doi[c]);
      }
    }
    ds[j] = dp;
    local += p[j] * dp;
  }
  const float dot_pd = block_total(local, reduce);
  for (int j = threadIdx.x; j < s; j += blockDim.x) {
    const float g = p[j] * (ds[j] - dot_pd) * scale;
    ds[j] = g;
    if (g == 0.0f) continue;
    const std::int64_t kj_at = (static_cast<std::int64_t>(b) * s + j) * qrow + h * kd;
    for (int c = 0; c < kd; ++c) atomicAdd(&dk[kj_at + c], g * qi[c]);
  }
  __syncthreads();
  for (int c = threadIdx.x; c < kd; c += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < s; ++j) {
      if (ds[j] != 0.0f) acc += ds[j] * to_float(k[(static_cast<std::int64_t>(b) * s + j) * qrow + h * kd + c]);
    }
    dq[qi_at + c] = acc;
  }
}

}  // namespace

void attention_forward(const void* q, const void* k, const void* v, void* y, DType dtype,
                       const AttentionShape& shape, float* probs, cudaStream_t stream) {
  if (shape.batch <= 0 || shape.steps <= 0) return;
  const dim3 grid(static_cast<unsigned>(shape.steps),
                  static_cast<unsigned>(shape.batch * shape.heads));
  const std::size_t shared = static_cast<std::size_t>(shape.key_dim + shape.steps) * sizeof(float);
  const float scale = 1.0f / sqrtf(static_cast<float>(shape.key_dim));
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    attention_forward_kernel<T><<<grid, kAttentionBlock, shared, stream>>>(
        static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
        static_cast<T*>(y), shape, scale, probs);
  });
  MIXLAB_CHECK_LAUNCH("attention_forward_kernel");
}

void attention_backward(const void* q, const void* k, const void* v, const void* dy, DType dtype,
                        const AttentionShape& shape, const float* probs, float* dq, float* dk,
                        float* dv, cudaStream_t stream) {
  if (shape.batch <= 0 || shape.steps <= 0) return;
  const std::int64_t rows = static_cast<std::int64_t>(shape.batch) * shape.steps * shape.heads;
  MIXLAB_CHECK_CALL(cudaMemsetAsync(
      dk, 0, static_cast<std::size_t>(rows * shape.key_dim) * sizeof(float), stream));
  MIXLAB_CHECK_CALL(cudaMemsetAsync(
      dv, 0, static_cast<std::size_t>(rows * shape.value_dim) * sizeof(float), stream));
  const dim3 grid(static_cast<unsigned>(shape.steps),
                  static_cast<unsigned>(shape.batch * shape.heads));
  const std::size_t shared =
      static_cast<std::size_t>(shape.value_dim + shape.key_dim + shape.steps) * sizeof(float);
  const float scale = 1.0f / sqrtf(static_cast<float>(shape.key_dim));
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    attention_backward_kernel<T><<<grid, kAttentionBlock, shared, stream>>>(
        static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
        static_cast<const T*>(dy), shape, scale, probs, dq, dk, dv);
  });
  MIXLAB_CHECK_LAUNCH("attention_backward_kernel");
}

}  // namespace mixlab::cuda::kernels
