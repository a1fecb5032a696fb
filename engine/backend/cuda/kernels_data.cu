// MixLab's CUDA kernels (kernels.h): casts between element types, and the gather of a batch
// from a dataset kept on the device.
#include "engine/backend/cuda/kernels.h"

#include <algorithm>
#include <cmath>

#include "engine/backend/cuda/kernels_common.cuh"

namespace mixlab::cuda::kernels {

namespace {

using namespace detail;

template <class From, class To>
__global__ void cast_kernel(const From* src, To* dst, std::int64_t n) {
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    dst[i] = from_float<To>(to_float(src[i]));
  }
}

__global__ void gather_batch_kernel(const std::uint8_t* images, const std::int32_t* labels,
                                    const std::int64_t* indices, const StepParams* params,
                                    int batch, std::int64_t sample_elements, std::int64_t positions,
                                    float* out_images, std::int32_t* out_labels) {
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
    if (blockIdx.x == 0) {
      for (std::int64_t t = threadIdx.x; t < positions; t += blockDim.x) {
        out_labels[r * positions + t] = r < real ? labels[indices[r] * positions + t] : 0;
      }
    }
  }
}

}  // namespace

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
                  std::int64_t sample_elements, std::int64_t positions, float* out_images,
                  std::int32_t* out_labels, cudaStream_t stream) {
  if (batch <= 0) return;
  const unsigned gx = static_cast<unsigned>(std::max<std::int64_t>(
      1, std::min<std::int64_t>((sample_elements + kBlock - 1) / kBlock, 64)));
  const dim3 grid(gx, static_cast<unsigned>(std::min(batch, 65535)));
  gather_batch_kernel<<<grid, kBlock, 0, stream>>>(images, labels, indices, params, batch,
                                                   sample_elements, positions, out_images,
                                                   out_labels);
  MIXLAB_CHECK_LAUNCH("gather_batch_kernel");
}

}  // namespace mixlab::cuda::kernels
