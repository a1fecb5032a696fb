// MixLab's own CUDA kernels (see kernels.h). The arithmetic is the shared __host__ __device__
// math of engine/core and engine/ops, so that the CPU backend and these kernels compute the same
// formulas; 16-bit tensors are converted to float32 for it and rounded once on the way out.
//
// Conventions: grid-stride loops over 64-bit sizes; a launcher with nothing to do returns
// without launching; nothing synchronous and no allocation (graph-capturable); each launch is
// checked with cudaGetLastError and a failure throws BackendError naming the kernel.
#include "engine/backend/cuda/kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "engine/core/error.h"
#include "engine/core/half.h"
#include "engine/ops/activation.h"
#include "engine/ops/dropout.h"
#include "engine/ops/loss.h"

namespace mixlab::cuda::kernels {

namespace {

constexpr int kBlock = 256;
// Enough resident blocks of 256 threads to fill the largest target GPU several times over; the
// grid-stride loops cover the rest.
constexpr std::int64_t kMaxBlocks = 4096;

unsigned grid_for(std::int64_t n, int block = kBlock) {
  return static_cast<unsigned>(std::min<std::int64_t>((n + block - 1) / block, kMaxBlocks));
}

void check_cuda(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess) throw_backend_error("CUDA", cudaGetErrorString(err), what, file, line);
}
// After a launch: a bad configuration or an earlier asynchronous fault, named by the kernel.
#define MIXLAB_CHECK_LAUNCH(kernel) check_cuda(cudaGetLastError(), kernel, __FILE__, __LINE__)
#define MIXLAB_CHECK_CALL(expr) check_cuda((expr), #expr, __FILE__, __LINE__)

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
__device__ float block_sum(float v, float* shared) {
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

// ---- casts and data ------------------------------------------------------------------------

template <class From, class To>
__global__ void cast_kernel(const From* src, To* dst, std::int64_t n) {
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    dst[i] = from_float<To>(to_float(src[i]));
  }
}

__global__ void gather_batch_kernel(const std::uint8_t* images, const std::int32_t* labels,
                                    const std::int64_t* indices, const StepParams* params,
                                    int batch, std::int64_t sample_elements, float* out_images,
                                    std::int32_t* out_labels) {
  const int real = params->real_samples;
  for (int r = blockIdx.y; r < batch; r += gridDim.y) {
    float* out = out_images + r * sample_elements;
    if (r < real) {
      const std::uint8_t* in = images + indices[r] * sample_elements;
      for (std::int64_t j = thread_index(); j < sample_elements; j += thread_stride()) {
        out[j] = static_cast<float>(in[j]);
      }
    } else {
      for (std::int64_t j = thread_index(); j < sample_elements; j += thread_stride()) {
        out[j] = 0.0f;
      }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) out_labels[r] = r < real ? labels[indices[r]] : 0;
  }
}

// ---- elementwise ---------------------------------------------------------------------------

template <class T, ActivationFn Fn>
__global__ void activation_forward_kernel(const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    y[i] = from_float<T>(mixlab::activation_forward(Fn, to_float(x[i])));
  }
}

template <class T, ActivationFn Fn>
__global__ void activation_backward_kernel(const T* x, const T* y, const T* dy, T* dx,
                                           std::int64_t n) {
  const bool needs_input = mixlab::activation_backward_needs_input(Fn);
  const bool needs_output = !needs_input && Fn != ActivationFn::linear;
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    const float xv = needs_input ? to_float(x[i]) : 0.0f;
    const float yv = needs_output ? to_float(y[i]) : 0.0f;
    dx[i] = from_float<T>(mixlab::activation_backward(Fn, xv, yv, to_float(dy[i])));
  }
}

template <class T>
__global__ void scale_offset_kernel(const T* x, T* y, float scale, float offset, std::int64_t n) {
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    y[i] = from_float<T>(to_float(x[i]) * scale + offset);
  }
}

template <class T>
__global__ void dropout_kernel(const T* x, T* y, std::int64_t n, double rate, std::uint64_t seed,
                               int layer, const StepParams* params) {
  if (params->train) {
    const DropoutMask mask = mixlab::make_dropout_mask(rate, seed, layer, params->step);
    for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
      y[i] = from_float<T>(to_float(x[i]) * mask.factor(static_cast<std::uint64_t>(i)));
    }
  } else {
    for (std::int64_t i = thread_index(); i < n; i += thread_stride()) y[i] = x[i];
  }
}

// ---- bias ----------------------------------------------------------------------------------

template <class T>
__global__ void add_bias_kernel(T* y, const T* bias, std::int64_t n, int channels) {
  // The column follows the flat index incrementally (no 64-bit division per element).
  const std::int64_t stride = thread_stride();
  const int stride_mod = static_cast<int>(stride % channels);
  std::int64_t i = thread_index();
  int c = static_cast<int>(i % channels);
  for (; i < n; i += stride) {
    y[i] = from_float<T>(to_float(y[i]) + to_float(bias[c]));
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

// ---- padding and pooling (NHWC) ------------------------------------------------------------

// pad: xp[b, y + top, x + left, ch] = x[b, y, x, ch]; crop (kPad false) the reverse.
template <class T, bool kPad>
__global__ void pad_crop_kernel(const T* src, T* dst, std::int64_t n, int h, int w, int c, int top,
                                int left, int hp, int wp) {
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int ch = static_cast<int>(i % c);
    std::int64_t rest = i / c;
    const int x = static_cast<int>(rest % w);
    rest /= w;
    const int y = static_cast<int>(rest % h);
    const std::int64_t b = rest / h;
    const std::int64_t j = ((b * hp + y + top) * wp + x + left) * c + ch;
    if constexpr (kPad) {
      dst[j] = src[i];
    } else {
      dst[i] = src[j];
    }
  }
}

// The first maximum of window (oy, ox) in window order (ky, then kx) among positions inside the
// input (padding never wins); returns its input position as iy * w + ix.
template <class T>
__device__ __forceinline__ int window_argmax(const T* xb, const PoolShape& s, int ch, int oy,
                                             int ox, float* value) {
  const int y0 = oy * s.sh - s.pad_top, x0 = ox * s.sw - s.pad_left;
  const int ky0 = max(0, -y0), ky1 = min(s.kh, s.h - y0);
  const int kx0 = max(0, -x0), kx1 = min(s.kw, s.w - x0);
  int best_pos = (y0 + ky0) * s.w + x0 + kx0;
  float best = to_float(xb[static_cast<std::int64_t>(best_pos) * s.c + ch]);
  for (int ky = ky0; ky < ky1; ++ky) {
    for (int kx = kx0; kx < kx1; ++kx) {
      const int pos = (y0 + ky) * s.w + x0 + kx;
      const float v = to_float(xb[static_cast<std::int64_t>(pos) * s.c + ch]);
      if (v > best) {
        best = v;
        best_pos = pos;
      }
    }
  }
  *value = best;
  return best_pos;
}

// Inputs inside window (oy, ox): the divisor of average pooling (padding excluded).
__device__ __forceinline__ int window_count(const PoolShape& s, int oy, int ox) {
  const int y0 = oy * s.sh - s.pad_top, x0 = ox * s.sw - s.pad_left;
  const int rows = min(s.kh, s.h - y0) - max(0, -y0);
  const int cols = min(s.kw, s.w - x0) - max(0, -x0);
  return rows * cols;
}

template <class T, bool kMax>
__global__ void pool_forward_kernel(const T* x, T* y, PoolShape s) {
  const std::int64_t n = static_cast<std::int64_t>(s.n) * s.oh * s.ow * s.c;
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int ch = static_cast<int>(i % s.c);
    std::int64_t rest = i / s.c;
    const int ox = static_cast<int>(rest % s.ow);
    rest /= s.ow;
    const int oy = static_cast<int>(rest % s.oh);
    const std::int64_t b = rest / s.oh;
    const T* xb = x + b * s.h * s.w * s.c;
    float out;
    if constexpr (kMax) {
      window_argmax(xb, s, ch, oy, ox, &out);
    } else {
      const int y0 = oy * s.sh - s.pad_top, x0 = ox * s.sw - s.pad_left;
      float sum = 0.0f;
      int count = 0;
      for (int ky = max(0, -y0); ky < min(s.kh, s.h - y0); ++ky) {
        for (int kx = max(0, -x0); kx < min(s.kw, s.w - x0); ++kx) {
          sum += to_float(xb[(static_cast<std::int64_t>(y0 + ky) * s.w + x0 + kx) * s.c + ch]);
          ++count;
        }
      }
      out = sum / static_cast<float>(count);
    }
    y[i] = from_float<T>(out);
  }
}

// One thread per input element gathers from the windows that contain it (in output order, as a
// scatter over outputs would add them): deterministic, no atomics, dx overwritten.
template <class T, bool kMax>
__global__ void pool_backward_kernel(const T* x, const T* dy, T* dx, PoolShape s) {
  const std::int64_t n = static_cast<std::int64_t>(s.n) * s.h * s.w * s.c;
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int ch = static_cast<int>(i % s.c);
    std::int64_t rest = i / s.c;
    const int ix = static_cast<int>(rest % s.w);
    rest /= s.w;
    const int iy = static_cast<int>(rest % s.h);
    const std::int64_t b = rest / s.h;
    // Windows over iy: oy * sh - pad_top <= iy <= oy * sh - pad_top + kh - 1.
    const int ylo_num = iy + s.pad_top - s.kh + 1, xlo_num = ix + s.pad_left - s.kw + 1;
    const int oy0 = ylo_num <= 0 ? 0 : (ylo_num + s.sh - 1) / s.sh;
    const int ox0 = xlo_num <= 0 ? 0 : (xlo_num + s.sw - 1) / s.sw;
    const int oy1 = min((iy + s.pad_top) / s.sh, s.oh - 1);
    const int ox1 = min((ix + s.pad_left) / s.sw, s.ow - 1);
    const T* xb = x + b * s.h * s.w * s.c;
    const T* dyb = dy + b * s.oh * s.ow * s.c;
    const int pos = iy * s.w + ix;
    float acc = 0.0f;
    for (int oy = oy0; oy <= oy1; ++oy) {
      for (int ox = ox0; ox <= ox1; ++ox) {
        const float g = to_float(dyb[(static_cast<std::int64_t>(oy) * s.ow + ox) * s.c + ch]);
        if constexpr (kMax) {
          float best;
          if (window_argmax(xb, s, ch, oy, ox, &best) == pos) acc += g;
        } else {
          acc += g / static_cast<float>(window_count(s, oy, ox));
        }
      }
    }
    dx[i] = from_float<T>(acc);
  }
}

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

template <LossHead kHead>
__device__ __forceinline__ RowLoss loss_row(const float* z, int k, int label, float grad_mul,
                                            float* dz) {
  if constexpr (kHead == LossHead::softmax_crossentropy) {
    return mixlab::softmax_crossentropy_row(z, k, label, grad_mul, dz);
  } else if constexpr (kHead == LossHead::sigmoid_binary) {
    return mixlab::sigmoid_binary_crossentropy_row(z, k, label, grad_mul, dz);
  } else if constexpr (kHead == LossHead::crossentropy_probabilities) {
    return mixlab::crossentropy_probabilities_row(z, k, label, grad_mul, dz);
  } else {
    return mixlab::binary_crossentropy_probabilities_row(z, k, label, grad_mul, dz);
  }
}

// Blocks take kRowBlock rows at a time: the block converts them into `scratch` (float32,
// coalesced), each thread computes one row's loss and gradient in place there, and the block
// writes the gradient back in `T`. Loss and correct count: block sums, one atomicAdd each.
template <class T, LossHead kHead>
__global__ void loss_kernel(const T* src, const std::int32_t* labels, int batch, int k,
                            const StepParams* params, DeviceState* state, float* scratch, T* dsrc) {
  __shared__ float reduce[32];
  const int real = params->real_samples;
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
        const RowLoss rl = loss_row<kHead>(row, k, labels[r], grad_mul, dsrc ? row : nullptr);
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

// ---- the step: loss scale, unscale, optimizer ----------------------------------------------

__global__ void begin_step_kernel(DeviceState* state, bool scaling_enabled) {
  state->step_scale = scaling_enabled ? state->scaler.scale : 1.0f;
  state->loss_sum = 0.0f;
  state->correct = 0.0f;
  state->nonfinite = 0;
  state->applied = 0;
}

__device__ __forceinline__ bool is_finite(float v) {
  return (float_bits(v) & 0x7f800000u) != 0x7f800000u;
}

// g *= 1 / step_scale; a non-finite raw gradient sets state->nonfinite (one store per block),
// the check the CPU backend makes.
// float4 over the aligned body, scalars for the tail.
__global__ void unscale_and_check_kernel(float* grads, std::int64_t n, DeviceState* state) {
  const float inv = 1.0f / state->step_scale;
  bool bad = false;
  const std::int64_t n4 = n / 4;
  float4* g4 = reinterpret_cast<float4*>(grads);
  for (std::int64_t i = thread_index(); i < n4; i += thread_stride()) {
    float4 v = g4[i];
    bad |= !(is_finite(v.x) && is_finite(v.y) && is_finite(v.z) && is_finite(v.w));
    v.x *= inv;
    v.y *= inv;
    v.z *= inv;
    v.w *= inv;
    g4[i] = v;
  }
  for (std::int64_t i = n4 * 4 + thread_index(); i < n; i += thread_stride()) {
    bad |= !is_finite(grads[i]);
    grads[i] *= inv;
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) state->nonfinite = 1;
}

__global__ void unscale_and_check_scalar_kernel(float* grads, std::int64_t n, DeviceState* state) {
  const float inv = 1.0f / state->step_scale;
  bool bad = false;
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    bad |= !is_finite(grads[i]);
    grads[i] *= inv;
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) state->nonfinite = 1;
}

__global__ void update_loss_scale_kernel(DeviceState* state, LossScaleRule<float> rule, bool adam,
                                         double lr, double beta_1, double beta_2) {
  LossScaleState<float> scaler = state->scaler;
  const bool applied = mixlab::update_loss_scale(scaler, rule, state->nonfinite == 0);
  state->scaler = scaler;
  state->applied = applied ? 1 : 0;
  if (applied) {
    const std::int64_t t = ++state->iteration;
    if (adam) state->lr_t = mixlab::adam_learning_rate(lr, beta_1, beta_2, t);
  }
}

enum class Rule : std::uint8_t { sgd, momentum, adam };

// w, s0, s1: master and state; Copy: the compute copy's element type, void for none.
template <Rule kRule, class Copy>
__global__ void optimizer_kernel(SgdUpdate sgd, AdamUpdate adam, float* master, const float* grads,
                                 float* state0, float* state1, Copy* copy, std::int64_t n,
                                 const DeviceState* state) {
  if (!state->applied) return;
  if constexpr (kRule == Rule::adam) adam.lr_t = state->lr_t;
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    float w = master[i];
    const float g = grads[i];
    if constexpr (kRule == Rule::sgd) {
      sgd(w, g);
    } else if constexpr (kRule == Rule::momentum) {
      float v = state0[i];
      sgd(w, v, g);
      state0[i] = v;
    } else {
      float m = state0[i], v = state1[i];
      adam(w, m, v, g);
      state0[i] = m;
      state1[i] = v;
    }
    master[i] = w;
    if constexpr (!std::is_void_v<Copy>) copy[i] = from_float<Copy>(w);
  }
}

}  // namespace

// ---- launchers -----------------------------------------------------------------------------

void cast(const void* src, DType from, void* dst, DType to, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  if (from == to) {
    if (src == dst) return;
    MIXLAB_CHECK_CALL(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * dtype_bytes(from),
                                      cudaMemcpyDeviceToDevice, stream));
    return;
  }
  with_dtype(from, [&](auto f) {
    with_dtype(to, [&](auto t) {
      using From = typename decltype(f)::type;
      using To = typename decltype(t)::type;
      cast_kernel<<<grid_for(n), kBlock, 0, stream>>>(static_cast<const From*>(src),
                                                      static_cast<To*>(dst), n);
    });
  });
  MIXLAB_CHECK_LAUNCH("cast_kernel");
}

void gather_batch(const std::uint8_t* images, const std::int32_t* labels,
                  const std::int64_t* indices, const StepParams* params, int batch,
                  std::int64_t sample_elements, float* out_images, std::int32_t* out_labels,
                  cudaStream_t stream) {
  if (batch <= 0) return;
  const unsigned gx = static_cast<unsigned>(std::max<std::int64_t>(
      1, std::min<std::int64_t>((sample_elements + kBlock - 1) / kBlock, 64)));
  const dim3 grid(gx, static_cast<unsigned>(std::min(batch, 65535)));
  gather_batch_kernel<<<grid, kBlock, 0, stream>>>(images, labels, indices, params, batch,
                                                   sample_elements, out_images, out_labels);
  MIXLAB_CHECK_LAUNCH("gather_batch_kernel");
}

namespace {

// Softmax is row-wise: softmax_forward / softmax_backward.
void require_elementwise(ActivationFn fn) {
  if (fn == ActivationFn::softmax) {
    throw BackendError("CUDA activation kernels: softmax is row-wise (softmax_forward/backward)");
  }
}

}  // namespace

void activation_forward(ActivationFn fn, const void* x, void* y, DType dtype, std::int64_t n,
                        cudaStream_t stream) {
  if (n <= 0) return;
  require_elementwise(fn);
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_elementwise_activation(fn, [&](auto f) {
      activation_forward_kernel<T, decltype(f)::value>
          <<<grid_for(n), kBlock, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n);
    });
  });
  MIXLAB_CHECK_LAUNCH("activation_forward_kernel");
}

void activation_backward(ActivationFn fn, const void* x, const void* y, const void* dy, void* dx,
                         DType dtype, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  require_elementwise(fn);
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_elementwise_activation(fn, [&](auto f) {
      activation_backward_kernel<T, decltype(f)::value>
          <<<grid_for(n), kBlock, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(y),
                                               static_cast<const T*>(dy), static_cast<T*>(dx), n);
    });
  });
  MIXLAB_CHECK_LAUNCH("activation_backward_kernel");
}

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

void dropout(const void* x, void* y, DType dtype, std::int64_t n, double rate, std::uint64_t seed,
             int layer, const StepParams* params, cudaStream_t stream) {
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
        static_cast<const T*>(x), static_cast<T*>(y), n, rate, seed, layer, params);
  });
  MIXLAB_CHECK_LAUNCH("dropout_kernel");
}

void add_bias(void* y, const void* bias, DType dtype, std::int64_t rows, int channels,
              cudaStream_t stream) {
  if (rows <= 0 || channels <= 0) return;
  const std::int64_t n = rows * channels;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    add_bias_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias), n, channels);
  });
  MIXLAB_CHECK_LAUNCH("add_bias_kernel");
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

void pad_nhwc(const void* x, void* xp, DType dtype, int n, int h, int w, int c, int top, int left,
              int hp, int wp, cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(n) * h * w * c;
  if (total <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    pad_crop_kernel<T, true><<<grid_for(total), kBlock, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(xp), total, h, w, c, top, left, hp, wp);
  });
  MIXLAB_CHECK_LAUNCH("pad_nhwc_kernel");
}

void crop_nhwc(const void* xp, void* x, DType dtype, int n, int h, int w, int c, int top, int left,
               int hp, int wp, cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(n) * h * w * c;
  if (total <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    pad_crop_kernel<T, false><<<grid_for(total), kBlock, 0, stream>>>(
        static_cast<const T*>(xp), static_cast<T*>(x), total, h, w, c, top, left, hp, wp);
  });
  MIXLAB_CHECK_LAUNCH("crop_nhwc_kernel");
}

void pool_forward(bool max, const void* x, void* y, DType dtype, const PoolShape& s,
                  cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(s.n) * s.oh * s.ow * s.c;
  if (total <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (max) {
      pool_forward_kernel<T, true>
          <<<grid_for(total), kBlock, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), s);
    } else {
      pool_forward_kernel<T, false>
          <<<grid_for(total), kBlock, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), s);
    }
  });
  MIXLAB_CHECK_LAUNCH("pool_forward_kernel");
}

void pool_backward(bool max, const void* x, const void* dy, void* dx, DType dtype,
                   const PoolShape& s, cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(s.n) * s.h * s.w * s.c;
  if (total <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (max) {
      pool_backward_kernel<T, true><<<grid_for(total), kBlock, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), s);
    } else {
      pool_backward_kernel<T, false><<<grid_for(total), kBlock, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), s);
    }
  });
  MIXLAB_CHECK_LAUNCH("pool_backward_kernel");
}

void loss(LossHead head, const void* src, DType dtype, const std::int32_t* labels, int batch, int k,
          const StepParams* params, DeviceState* state, float* scratch, void* dsrc,
          cudaStream_t stream) {
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
            <<<grid, kRowBlock, 0, stream>>>(s, labels, batch, k, params, state, scratch, d);
        return;
      case LossHead::sigmoid_binary:
        loss_kernel<T, LossHead::sigmoid_binary>
            <<<grid, kRowBlock, 0, stream>>>(s, labels, batch, k, params, state, scratch, d);
        return;
      case LossHead::crossentropy_probabilities:
        loss_kernel<T, LossHead::crossentropy_probabilities>
            <<<grid, kRowBlock, 0, stream>>>(s, labels, batch, k, params, state, scratch, d);
        return;
      case LossHead::binary_probabilities:
        loss_kernel<T, LossHead::binary_probabilities>
            <<<grid, kRowBlock, 0, stream>>>(s, labels, batch, k, params, state, scratch, d);
        return;
    }
    throw BackendError("CUDA loss: unknown loss head");
  });
  MIXLAB_CHECK_LAUNCH("loss_kernel");
}

void begin_step(DeviceState* state, bool scaling_enabled, cudaStream_t stream) {
  begin_step_kernel<<<1, 1, 0, stream>>>(state, scaling_enabled);
  MIXLAB_CHECK_LAUNCH("begin_step_kernel");
}

void unscale_and_check(float* grads, std::int64_t n, DeviceState* state, cudaStream_t stream) {
  if (n <= 0) return;
  if (reinterpret_cast<std::uintptr_t>(grads) % alignof(float4) == 0) {
    unscale_and_check_kernel<<<grid_for((n + 3) / 4), kBlock, 0, stream>>>(grads, n, state);
  } else {
    unscale_and_check_scalar_kernel<<<grid_for(n), kBlock, 0, stream>>>(grads, n, state);
  }
  MIXLAB_CHECK_LAUNCH("unscale_and_check_kernel");
}

void update_loss_scale(DeviceState* state, const LossScaleRule<float>& rule,
                       const OptimizerParams& optimizer, cudaStream_t stream) {
  update_loss_scale_kernel<<<1, 1, 0, stream>>>(state, rule, optimizer.kind == OptimizerKind::adam,
                                                optimizer.lr, optimizer.beta_1, optimizer.beta_2);
  MIXLAB_CHECK_LAUNCH("update_loss_scale_kernel");
}

namespace {

template <Rule kRule>
void optimizer_launch(const SgdUpdate& sgd, const AdamUpdate& adam, float* master,
                      const float* grads, float* state0, float* state1, void* copy,
                      DType copy_dtype, std::int64_t n, const DeviceState* state,
                      cudaStream_t stream) {
  const unsigned grid = grid_for(n);
  if (!copy) {
    optimizer_kernel<kRule, void>
        <<<grid, kBlock, 0, stream>>>(sgd, adam, master, grads, state0, state1, nullptr, n, state);
    return;
  }
  with_dtype(copy_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    optimizer_kernel<kRule, T><<<grid, kBlock, 0, stream>>>(
        sgd, adam, master, grads, state0, state1, static_cast<T*>(copy), n, state);
  });
}

}  // namespace

void optimizer_update(const OptimizerParams& optimizer, float* master, const float* grads,
                      float* state0, float* state1, void* copy, DType copy_dtype, std::int64_t n,
                      const DeviceState* state, cudaStream_t stream) {
  if (n <= 0) return;
  // As make_sgd_update / make_adam_update with grad_scale 1 (grads are already unscaled); Adam's
  // lr_t comes from state->lr_t, computed by update_loss_scale.
  SgdUpdate sgd;
  sgd.lr = static_cast<float>(optimizer.lr);
  sgd.momentum = optimizer.momentum;
  sgd.nesterov = optimizer.nesterov;
  sgd.grad_scale = 1.0f;
  AdamUpdate adam;
  adam.one_minus_beta_1 = static_cast<float>(1.0 - optimizer.beta_1);
  adam.one_minus_beta_2 = static_cast<float>(1.0 - optimizer.beta_2);
  adam.epsilon = optimizer.epsilon;
  adam.grad_scale = 1.0f;
  if (optimizer.kind == OptimizerKind::adam) {
    optimizer_launch<Rule::adam>(sgd, adam, master, grads, state0, state1, copy, copy_dtype, n,
                                 state, stream);
  } else if (optimizer.momentum != 0.0f) {
    optimizer_launch<Rule::momentum>(sgd, adam, master, grads, state0, state1, copy, copy_dtype, n,
                                     state, stream);
  } else {
    optimizer_launch<Rule::sgd>(sgd, adam, master, grads, state0, state1, copy, copy_dtype, n,
                                state, stream);
  }
  MIXLAB_CHECK_LAUNCH("optimizer_kernel");
}

}  // namespace mixlab::cuda::kernels
