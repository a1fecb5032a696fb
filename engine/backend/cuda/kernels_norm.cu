// MixLab's CUDA kernels (kernels.h): BatchNormalization over NHWC rows, in float32 whatever the
// tensors' dtype (engine/ops/batch_norm.h's math, as the CPU backend's loops). The per-channel
// sums are double, accumulated per block and added atomically; the statistics are over the
// batch's real samples (StepParams), and the phase (training or not) is read from StepParams too,
// so that one captured CUDA graph serves every step.
#include "engine/backend/cuda/kernels.h"

#include "engine/backend/cuda/kernels_common.cuh"
#include "engine/ops/batch_norm.h"

namespace mixlab::cuda::kernels {

namespace {

using namespace detail;

constexpr int kLanes = 32;     // channels per block
constexpr int kRowLanes = 8;   // rows per block at a time
constexpr int kRowBlocks = 256;

enum class SumMode : int { mean, variance, gradient };

// The rows a training step's statistics count: the real samples', at least one sample's, as the
// CPU's batch_norm.cpp counts them (no 0 / 0 into the moving statistics).
__device__ std::int64_t real_rows(const StepParams* params, std::int64_t rows_per_sample) {
  return static_cast<std::int64_t>(max(1, params->real_samples)) * rows_per_sample;
}

// Per-channel sums over the real rows: mean: sums[c] = sum x; variance: sums[C + c] =
// sum (x - mean)^2 with mean = float(sums[c] / m); gradient: sums[c] = sum dy and
// sums[C + c] = sum dy * xhat with xhat from stats' mean and 1/sqrt(var + eps), dy taken only
// where a fused ReLU's output relu_y (when given) is positive. Training steps only.
template <class T, SumMode Mode>
__global__ void channel_sums_kernel(const T* x, const T* dy, const T* relu_y, int channels,
                                    std::int64_t rows_per_sample, const StepParams* params,
                                    const float* stats, double* sums) {
  if (!params->train) return;
  __shared__ double part[2][kRowLanes][kLanes];
  const int c = blockIdx.x * kLanes + threadIdx.x;
  const std::int64_t rows = real_rows(params, rows_per_sample);
  const double m = static_cast<double>(rows);
  double s0 = 0.0, s1 = 0.0;
  if (c < channels) {
    float mean = 0.0f, inv_std = 0.0f;
    if constexpr (Mode == SumMode::variance) mean = static_cast<float>(sums[c] / m);
    if constexpr (Mode == SumMode::gradient) {
      mean = stats[c];
      inv_std = stats[channels + c];
    }
    for (std::int64_t r = static_cast<std::int64_t>(blockIdx.y) * kRowLanes + threadIdx.y;
         r < rows; r += static_cast<std::int64_t>(gridDim.y) * kRowLanes) {
      const std::int64_t i = r * channels + c;
      const float v = to_float(x[i]);
      if constexpr (Mode == SumMode::mean) {
        s0 += v;
      } else if constexpr (Mode == SumMode::variance) {
        const double d = static_cast<double>(v) - mean;
        s0 += d * d;
      } else {
        const float g = relu_gate(to_float(dy[i]), relu_y, i);
        s0 += g;
        s1 += static_cast<double>(g) * ((v - mean) * inv_std);
      }
    }
  }
  part[0][threadIdx.y][threadIdx.x] = s0;
  part[1][threadIdx.y][threadIdx.x] = s1;
  __syncthreads();
  if (threadIdx.y != 0 || c >= channels) return;
  double t0 = 0.0, t1 = 0.0;
  for (int k = 0; k < kRowLanes; ++k) {
    t0 += part[0][k][threadIdx.x];
    t1 += part[1][k][threadIdx.x];
  }
  if constexpr (Mode == SumMode::mean) atomicAdd(&sums[c], t0);
  if constexpr (Mode == SumMode::variance) atomicAdd(&sums[channels + c], t0);
  if constexpr (Mode == SumMode::gradient) {
    atomicAdd(&sums[c], t0);
    atomicAdd(&sums[channels + c], t1);
  }
}

// stats (5 x channels): mean, 1/sqrt(var + eps), a, b, (backward) sum dy * xhat.
__global__ void batch_norm_affine_kernel(int channels, std::int64_t rows_per_sample,
                                         BatchNormArgs args, const float* gamma, const float* beta,
                                         float* moving_mean, float* moving_var,
                                         const StepParams* params, const double* sums,
                                         float* stats) {
  const int c = static_cast<int>(thread_index());
  if (c >= channels) return;
  const float g = gamma ? gamma[c] : 1.0f;
  const float b = beta ? beta[c] : 0.0f;
  float mean = moving_mean[c], variance = moving_var[c];
  if (params->train) {
    const auto m = static_cast<double>(real_rows(params, rows_per_sample));
    mean = static_cast<float>(sums[c] / m);
    variance = static_cast<float>(sums[channels + c] / m);
    moving_mean[c] = moving_update(moving_mean[c], mean, args.momentum);
    moving_var[c] = moving_update(moving_var[c], variance, args.momentum);
  }
  const ChannelAffine t = channel_affine(mean, variance, g, b, args.epsilon);
  stats[c] = mean;
  stats[channels + c] = t.inv_std;
  stats[2 * channels + c] = t.a;
  stats[3 * channels + c] = t.b;
}

template <class T>
__global__ void batch_norm_apply_kernel(const T* x, T* y, int channels, std::int64_t n,
                                        const float* stats, bool relu) {
  const float* a = stats + 2 * channels;
  const float* b = stats + 3 * channels;
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int c = static_cast<int>(i % channels);
    const float v = to_float(x[i]) * a[c] + b[c];
    y[i] = from_float<T>(fused_relu(v, relu));
  }
}

// The parameter gradients, and the per-channel factors of dx: stats' a = gamma / sqrt(var +
// eps), b = sum dy, and row 4 = sum dy * xhat.
__global__ void batch_norm_gradient_kernel(int channels, const float* gamma, float* dgamma,
                                           float* dbeta, const double* sums, float* stats) {
  const int c = static_cast<int>(thread_index());
  if (c >= channels) return;
  if (dgamma) dgamma[c] = static_cast<float>(sums[channels + c]);
  if (dbeta) dbeta[c] = static_cast<float>(sums[c]);
  stats[2 * channels + c] = (gamma ? gamma[c] : 1.0f) * stats[channels + c];
  stats[3 * channels + c] = static_cast<float>(sums[c]);
  stats[4 * channels + c] = static_cast<float>(sums[channels + c]);
}

template <class T>
__global__ void batch_norm_dx_kernel(const T* x, const T* dy, const T* relu_y, T* dx, int channels,
                                     std::int64_t rows_per_sample, std::int64_t n,
                                     const StepParams* params, const float* stats) {
  const std::int64_t rows = real_rows(params, rows_per_sample);
  const float m = static_cast<float>(rows);
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int c = static_cast<int>(i % channels);
    float v = 0.0f;
    if (i / channels < rows) {
      const float xhat = (to_float(x[i]) - stats[c]) * stats[channels + c];
      v = batch_norm_dx(relu_gate(to_float(dy[i]), relu_y, i), xhat, stats[2 * channels + c], m,
                        stats[3 * channels + c], stats[4 * channels + c]);
    }
    dx[i] = from_float<T>(v);
  }
}

dim3 sums_grid(int channels, std::int64_t rows) {
  const std::int64_t blocks = std::min<std::int64_t>(kRowBlocks, (rows + kRowLanes - 1) / kRowLanes);
  return dim3(static_cast<unsigned>((channels + kLanes - 1) / kLanes),
              static_cast<unsigned>(std::max<std::int64_t>(blocks, 1)));
}

}  // namespace

void batch_norm_forward(const void* x, void* y, DType dtype, const BatchNormShape& shape,
                        const BatchNormArgs& args, const float* gamma, const float* beta,
                        float* moving_mean, float* moving_var, double* sums, float* stats,
                        const StepParams* params, cudaStream_t stream, bool relu) {
  const int c = shape.channels;
  const std::int64_t n = shape.rows * c;
  if (n <= 0) return;
  MIXLAB_CHECK_CALL(cudaMemsetAsync(sums, 0, 2 * static_cast<std::size_t>(c) * sizeof(double),
                                    stream));
  const dim3 grid = sums_grid(c, shape.rows);
  const dim3 block(kLanes, kRowLanes);
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(x);
    channel_sums_kernel<T, SumMode::mean><<<grid, block, 0, stream>>>(
        in, nullptr, nullptr, c, shape.rows_per_sample, params, stats, sums);
    channel_sums_kernel<T, SumMode::variance><<<grid, block, 0, stream>>>(
        in, nullptr, nullptr, c, shape.rows_per_sample, params, stats, sums);
    batch_norm_affine_kernel<<<grid_for(c), kBlock, 0, stream>>>(
        c, shape.rows_per_sample, args, gamma, beta, moving_mean, moving_var, params, sums, stats);
    batch_norm_apply_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(in, static_cast<T*>(y), c, n,
                                                                   stats, relu);
  });
  MIXLAB_CHECK_LAUNCH("batch_norm_forward");
}

void batch_norm_backward(const void* x, const void* dy, void* dx, DType dtype,
                         const BatchNormShape& shape, const float* gamma, float* dgamma,
                         float* dbeta, double* sums, float* stats, const StepParams* params,
                         cudaStream_t stream, const void* relu_y) {
  const int c = shape.channels;
  const std::int64_t n = shape.rows * c;
  if (n <= 0) return;
  MIXLAB_CHECK_CALL(cudaMemsetAsync(sums, 0, 2 * static_cast<std::size_t>(c) * sizeof(double),
                                    stream));
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = static_cast<const T*>(x);
    const T* g = static_cast<const T*>(dy);
    const T* gate = static_cast<const T*>(relu_y);
    channel_sums_kernel<T, SumMode::gradient><<<sums_grid(c, shape.rows), dim3(kLanes, kRowLanes),
                                                0, stream>>>(in, g, gate, c, shape.rows_per_sample,
                                                             params, stats, sums);
    batch_norm_gradient_kernel<<<grid_for(c), kBlock, 0, stream>>>(c, gamma, dgamma, dbeta, sums,
                                                                   stats);
    if (dx) {
      batch_norm_dx_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(
          in, g, gate, static_cast<T*>(dx), c, shape.rows_per_sample, n, params, stats);
    }
  });
  MIXLAB_CHECK_LAUNCH("batch_norm_backward");
}

}  // namespace mixlab::cuda::kernels
