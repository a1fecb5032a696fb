// cudasim's own tests: kernels with the mistakes it exists to catch, each of which it must report,
// and the CUDA semantics the kernels' tests rely on it to keep (shuffles, barriers, shared memory,
// 16-bit conversions). Written as CUDA, rewritten by cu2cpp.py like the kernels.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/core/half.h"

namespace {

template <class T>
struct Buffer {
  T* ptr = nullptr;
  std::size_t n;
  explicit Buffer(std::size_t count) : n(count) {
    EXPECT_EQ(cudaMalloc(&ptr, n * sizeof(T)), cudaSuccess);
  }
  explicit Buffer(const std::vector<T>& host) : Buffer(host.size()) {
    EXPECT_EQ(cudaMemcpy(ptr, host.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~Buffer() { cudaFree(ptr); }
  std::vector<T> get() const {
    std::vector<T> out(n);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

// ---- kernels: correct ones ----

__global__ void block_sum_kernel(const float* x, float* out, bool sync) {
  __shared__ float part[64];
  part[threadIdx.x] = x[threadIdx.x];
  if (sync) __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (unsigned i = 0; i < blockDim.x; ++i) s += part[i];
    out[blockIdx.x] = s;
  }
}

__global__ void warp_sums_kernel(const int* x, int* xor_sum, int* down_sum) {
  int v = x[threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  xor_sum[threadIdx.x] = v;  // every lane has its warp's sum
  int d = x[threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) d += __shfl_down_sync(0xffffffffu, d, o);
  down_sum[threadIdx.x] = d;  // lane 0 has it
}

__global__ void syncthreads_or_kernel(int hot_thread, int* out) {
  out[threadIdx.x] = __syncthreads_or(static_cast<int>(threadIdx.x) == hot_thread);
}

__global__ void shared_is_per_block_kernel(int* out) {
  __shared__ int mine;
  if (threadIdx.x == 0) mine = static_cast<int>(blockIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = mine;
}

__global__ void dynamic_shared_kernel(const float* x, float* out) {
  extern __shared__ float staged[];
  staged[blockDim.x - 1 - threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = staged[threadIdx.x];
}

// Two block sums in a row through one buffer of a slot per warp, as kernels_common.cuh's
// block_sum: without the barrier before the second one's writes, a warp that runs ahead
// overwrites a slot another warp has yet to read.
__global__ void two_block_sums_kernel(float* first, float* second, bool guard) {
  __shared__ float slot[4];
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float totals[2];
  for (int round = 0; round < 2; ++round) {
    if (guard || round == 0) __syncthreads();
    if (lane == 0) slot[warp] = round == 0 ? 1.0f : 100.0f;
    __syncthreads();
    float v = lane < 4 ? slot[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    totals[round] = v;
  }
  first[blockIdx.x * blockDim.x + threadIdx.x] = totals[0];
  second[blockIdx.x * blockDim.x + threadIdx.x] = totals[1];
}

// ---- kernels: each with a mistake ----

__global__ void early_return_before_barrier_kernel(float* out) {
  if (threadIdx.x >= 16) return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

__global__ void shuffle_in_half_a_warp_kernel(float* out) {
  float v = 1.0f;
  if (threadIdx.x < 16) v += __shfl_down_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

__global__ void full_mask_shuffle_kernel(float* out) {
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

__global__ void write_kernel(float* out, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = 2.0f;
}

__global__ void read_kernel(const float* in, float* out, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += in[i];
  out[0] = s;
}

}  // namespace

TEST(Cudasim, SharedMemoryNeedsItsBarrier) {
  std::vector<float> host(64);
  for (int i = 0; i < 64; ++i) host[static_cast<std::size_t>(i)] = static_cast<float>(i);
  const Buffer<float> x(host);
  Buffer<float> out(32);
  block_sum_kernel<<<32, 64>>>(x.ptr, out.ptr, true);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (const float s : out.get()) EXPECT_EQ(s, 2016.0f);
  // Without the barrier, thread 0 reads slots other threads have not written yet in some of the
  // 32 blocks' shuffled orders: fresh shared memory is NaN.
  block_sum_kernel<<<32, 64>>>(x.ptr, out.ptr, false);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  int wrong = 0;
  for (const float s : out.get()) wrong += s != 2016.0f;
  EXPECT_GT(wrong, 0) << "a read of shared memory before the barrier went unnoticed";
}

TEST(Cudasim, WarpsRunAheadOfEachOther) {
  Buffer<float> first(64 * 128), second(64 * 128);
  two_block_sums_kernel<<<64, 128>>>(first.ptr, second.ptr, true);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (const float v : first.get()) ASSERT_EQ(v, 4.0f);
  for (const float v : second.get()) ASSERT_EQ(v, 400.0f);
  two_block_sums_kernel<<<64, 128>>>(first.ptr, second.ptr, false);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  int wrong = 0;
  for (const float v : first.get()) wrong += v != 4.0f;
  EXPECT_GT(wrong, 0) << "no warp overwrote a slot another had yet to read";
}

TEST(Cudasim, ShufflesExchangeWithinAWarp) {
  std::vector<int> host(64);
  for (int i = 0; i < 64; ++i) host[static_cast<std::size_t>(i)] = i * i;
  const Buffer<int> x(host);
  Buffer<int> xs(64), ds(64);
  warp_sums_kernel<<<1, 64>>>(x.ptr, xs.ptr, ds.ptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  int warp_sum[2] = {0, 0};
  for (int i = 0; i < 64; ++i) warp_sum[i / 32] += i * i;
  const std::vector<int> xor_sums = xs.get(), down_sums = ds.get();
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(xor_sums[static_cast<std::size_t>(i)], warp_sum[i / 32]) << i;
  EXPECT_EQ(down_sums[0], warp_sum[0]);
  EXPECT_EQ(down_sums[32], warp_sum[1]);
  // __shfl_down_sync: a lane whose source is past the warp gets its own value, so lane 31 doubles
  // its own at each of the five steps.
  EXPECT_EQ(down_sums[31], 31 * 31 * 32);
}

TEST(Cudasim, SyncthreadsOrIsTheBlocksOr) {
  Buffer<int> out(128);
  syncthreads_or_kernel<<<1, 128>>>(77, out.ptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (const int v : out.get()) EXPECT_EQ(v, 1);
  syncthreads_or_kernel<<<1, 128>>>(-1, out.ptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (const int v : out.get()) EXPECT_EQ(v, 0);
}

TEST(Cudasim, SharedMemoryIsPerBlockAndDynamicSharedIsSized) {
  Buffer<int> out(8 * 32);
  shared_is_per_block_kernel<<<8, 32>>>(out.ptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const std::vector<int> got = out.get();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<int>(i / 32));
  std::vector<float> host(96);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  const Buffer<float> x(host);
  Buffer<float> y(96);
  dynamic_shared_kernel<<<1, 96, 96 * sizeof(float)>>>(x.ptr, y.ptr);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const std::vector<float> reversed = y.get();
  for (std::size_t i = 0; i < 96; ++i) EXPECT_EQ(reversed[i], static_cast<float>(95 - i));
}

TEST(Cudasim, ReportsABarrierSomeThreadsSkip) {
  Buffer<float> out(32);
  early_return_before_barrier_kernel<<<1, 32>>>(out.ptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
}

TEST(Cudasim, ReportsAShuffleSomeLanesSkipOrThatNamesMissingLanes) {
  Buffer<float> out(48);
  shuffle_in_half_a_warp_kernel<<<1, 32>>>(out.ptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  full_mask_shuffle_kernel<<<1, 32>>>(out.ptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // 48 threads: the second warp has 16 lanes, and a full mask names 16 that do not exist.
  full_mask_shuffle_kernel<<<1, 48>>>(out.ptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
}

TEST(Cudasim, ReportsAWritePastAnAllocation) {
  Buffer<float> out(10);
  write_kernel<<<1, 32>>>(out.ptr, 10);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  write_kernel<<<1, 32>>>(out.ptr, 11);  // inside the allocation's 256-byte rounding
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
}

TEST(Cudasim, ReportsBadLaunchesHostPointersAndCopies) {
  Buffer<float> out(2048);
  write_kernel<<<1, 1025>>>(out.ptr, 1);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  write_kernel<<<0, 32>>>(out.ptr, 1);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  write_kernel<<<1, 32, 64 * 1024>>>(out.ptr, 1);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  std::vector<float> host(4, 1.0f);
  read_kernel<<<1, 1>>>(host.data(), out.ptr, 4);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevicePointer);
  EXPECT_EQ(host[0], 1.0f);
  EXPECT_NE(cudaMemcpy(out.ptr, host.data(), 16, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaGetLastError();
  EXPECT_NE(cudaMemcpy(out.ptr, host.data(), 2049 * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  cudaGetLastError();
  EXPECT_EQ(cudaMemcpy(out.ptr, host.data(), 16, cudaMemcpyHostToDevice), cudaSuccess);
}

using CudasimDeathTest = ::testing::Test;

TEST_F(CudasimDeathTest, AReadPastAnAllocationStopsTheProcessNamingTheKernel) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Buffer<float> in(64), out(1);
  // 64 floats fill their 256 bytes: the next one is the guard page's.
  EXPECT_DEATH(read_kernel<<<1, 1>>>(in.ptr, out.ptr, 65), "read_kernel");
}

TEST_F(CudasimDeathTest, TheHostCannotTouchDeviceMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Buffer<float> b(4);
  float* device = b.ptr;
  EXPECT_DEATH(*device = 1.0f, "host code");
}

// Its conversions are IEEE round to nearest even, as CUDA's: checked against the engine's own
// (engine/core/half.h), an independent implementation, on every 16-bit value and across floats.
TEST(Cudasim, SixteenBitConversionsAreTheEnginesBitForBit) {
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float f16 = __half2float(__half{h}), bf16 = __bfloat162float(__nv_bfloat16{h});
    const float want16 = mixlab::f16_bits_to_float(h), wantbf = mixlab::bf16_bits_to_float(h);
    if (std::isnan(want16)) {
      EXPECT_TRUE(std::isnan(f16)) << bits;
    } else {
      EXPECT_EQ(std::memcmp(&f16, &want16, 4), 0) << bits;
    }
    if (std::isnan(wantbf)) {
      EXPECT_TRUE(std::isnan(bf16)) << bits;
    } else {
      EXPECT_EQ(std::memcmp(&bf16, &wantbf, 4), 0) << bits;
    }
  }
  int mismatches = 0;
  for (std::uint64_t u = 0; u < (1ull << 32); u += 65537) {  // every exponent, many mantissas
    const auto bits = static_cast<std::uint32_t>(u);
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    mismatches += __float2half_rn(f).__x != mixlab::float_to_f16_bits(f);
    mismatches += __float2bfloat16_rn(f).__x != mixlab::float_to_bf16_bits(f);
  }
  EXPECT_EQ(mismatches, 0);
}
