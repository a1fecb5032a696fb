// MixLab's CUDA kernels (kernels.h): NHWC zero padding and cropping (Keras's asymmetric 'same'),
// and max / average pooling where cuDNN cannot follow Keras's padding.
#include "engine/backend/cuda/kernels.h"

#include <algorithm>
#include <cmath>

#include "engine/backend/cuda/kernels_common.cuh"

namespace mixlab::cuda::kernels {

namespace {

using namespace detail;

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

}  // namespace

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

}  // namespace mixlab::cuda::kernels
