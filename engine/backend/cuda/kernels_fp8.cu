// mixed_float8's cast kernel: a tensor into FP8 codes (and their transpose, for cuBLASLt's "TN"
// products), with its amax and its saturated and flushed counts, by the same rounding as the
// CPU's emulation (engine/core/fp8.h, shared).
#include "engine/backend/cuda/kernels_common.cuh"
#include "engine/core/fp8.h"
#include "engine/core/half.h"

namespace mixlab::cuda::kernels {

using namespace detail;

namespace {

// Without the transpose: a grid-stride loop over the values.
template <class T>
__global__ void fp8_cast_kernel(const T* src, std::int64_t rows, std::int64_t cols, bool e5m2,
                                float top, const float* scale, std::uint8_t* out,
                                std::uint8_t* /*out_t*/, Fp8CastStats* stats) {
  const float s = *scale;
  const std::int64_t n = rows * cols;
  unsigned int amax_bits = 0;
  unsigned long long saturated = 0, flushed = 0;
  for (std::int64_t i = thread_index(); i < n; i += thread_stride()) {
    const float v = to_float(src[i]);
    amax_bits = max(amax_bits, __float_as_uint(fabsf(v)));
    // __fdiv_rn: IEEE division, as the CPU's, whatever -prec-div or --use_fast_math say.
    const float scaled = round_to_bf16(__fdiv_rn(v, s));  // fp8_quantize_bf16's first half
    saturated += fabsf(scaled) > top ? 1u : 0u;
    const std::uint8_t code = e5m2 ? float_to_e5m2_bits(scaled) : float_to_e4m3_bits(scaled);
    flushed += (code & 0x7fu) == 0 && v != 0.0f ? 1u : 0u;
    out[i] = code;
  }
  for (int o = 16; o > 0; o >>= 1) {
    amax_bits = max(amax_bits, __shfl_down_sync(0xffffffffu, amax_bits, o));
    saturated += __shfl_down_sync(0xffffffffu, saturated, o);
    flushed += __shfl_down_sync(0xffffffffu, flushed, o);
  }
  if (threadIdx.x % 32 == 0) {
    atomicMax(&stats->amax_bits, amax_bits);
    if (saturated != 0) atomicAdd(&stats->saturated, saturated);
    if (flushed != 0) atomicAdd(&stats->flushed, flushed);
  }
}

// With the transpose: 32 x 32 tiles through shared memory, so that both copies are written a
// row of a tile at a time (one 32-byte sector a warp), not a byte per sector.
constexpr int kTile = 32, kTileRows = 8;

template <class T>
__global__ void fp8_cast_transpose_kernel(const T* src, std::int64_t rows, std::int64_t cols,
                                          bool e5m2, float top, const float* scale,
                                          std::uint8_t* out, std::uint8_t* out_t,
                                          Fp8CastStats* stats) {
  __shared__ std::uint8_t tile[kTile][kTile + 4];
  const float s = *scale;
  const std::int64_t tiles_c = (cols + kTile - 1) / kTile;
  const std::int64_t tiles = (rows + kTile - 1) / kTile * tiles_c;
  unsigned int amax_bits = 0;
  unsigned long long saturated = 0, flushed = 0;
  for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::int64_t r0 = t / tiles_c * kTile, c0 = t % tiles_c * kTile;
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const std::int64_t r = r0 + j, c = c0 + threadIdx.x;
      if (r >= rows || c >= cols) continue;
      const float v = to_float(src[r * cols + c]);
      amax_bits = max(amax_bits, __float_as_uint(fabsf(v)));
      const float scaled = round_to_bf16(__fdiv_rn(v, s));
      saturated += fabsf(scaled) > top ? 1u : 0u;
      const std::uint8_t code = e5m2 ? float_to_e5m2_bits(scaled) : float_to_e4m3_bits(scaled);
      flushed += (code & 0x7fu) == 0 && v != 0.0f ? 1u : 0u;
      out[r * cols + c] = code;
      tile[j][threadIdx.x] = code;
    }
    __syncthreads();
    for (int j = threadIdx.y; j < kTile; j += kTileRows) {
      const std::int64_t c = c0 + j, r = r0 + threadIdx.x;  // out_t is (cols, rows)
      if (c < cols && r < rows) out_t[c * rows + r] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
  for (int o = 16; o > 0; o >>= 1) {  // each threadIdx.y is one warp
    amax_bits = max(amax_bits, __shfl_down_sync(0xffffffffu, amax_bits, o));
    saturated += __shfl_down_sync(0xffffffffu, saturated, o);
    flushed += __shfl_down_sync(0xffffffffu, flushed, o);
  }
  if (threadIdx.x == 0) {
    atomicMax(&stats->amax_bits, amax_bits);
    if (saturated != 0) atomicAdd(&stats->saturated, saturated);
    if (flushed != 0) atomicAdd(&stats->flushed, flushed);
  }
}

}  // namespace

void fp8_cast(const void* src, DType dtype, std::int64_t rows, std::int64_t cols, bool e5m2,
              float top, const float* scale, std::uint8_t* out, std::uint8_t* out_t,
              Fp8CastStats* stats, cudaStream_t stream) {
  const std::int64_t n = rows * cols;
  if (n <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (out_t == nullptr) {
      fp8_cast_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(static_cast<const T*>(src), rows, cols,
                                                             e5m2, top, scale, out, nullptr, stats);
      return;
    }
    const std::int64_t tiles = (rows + kTile - 1) / kTile * ((cols + kTile - 1) / kTile);
    const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(tiles, kMaxBlocks));
    fp8_cast_transpose_kernel<T><<<blocks, dim3(kTile, kTileRows), 0, stream>>>(
        static_cast<const T*>(src), rows, cols, e5m2, top, scale, out, out_t, stats);
  });
  MIXLAB_CHECK_LAUNCH("fp8_cast");
}

}  // namespace mixlab::cuda::kernels
