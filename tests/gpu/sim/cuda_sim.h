// cudasim: a CPU emulation of the part of CUDA that MixLab's own kernels use, so that their tests
// (tests/gpu/kernels_*_test.cu, on engine/backend/cuda/kernels_*.cu) run on a machine without a
// GPU, and fail there on the mistakes that would fail them on one.
//
// What it emulates: a launch's blocks and threads (a fiber per thread; blocks, warps and lanes
// run in an order drawn from a seeded generator, CUDASIM_SEED, with warps advancing
// independently between barriers, so that code which reads another thread's write without a
// barrier between them, or overwrites what another has yet to read, gets wrong values);
// __syncthreads, __syncthreads_or and the warp shuffles as barriers that every thread they name
// must reach; __shared__ memory, one copy per
// block, filled with 0xFF bytes (NaN) when a block starts; atomics; device memory that the host
// cannot touch outside a CUDA call, with a guard page after each allocation's 256-byte rounding
// and its padding checked after each launch; 16-bit types converted with IEEE round to nearest
// even; CUDA's launch limits.
//
// What it reports (cudaGetLastError after the launch, and stderr; an access outside device memory
// stops the process with the kernel's name): a barrier or shuffle that some of the threads it
// names skip, a shuffle with lanes that do not exist, a write past an allocation, a host pointer
// among a kernel's arguments, a copy whose kind disagrees with its pointers, a bad launch
// configuration, more than 48 KiB of shared memory.
//
// What it cannot show: the GPU's timing and memory model, its math library (expf, erff: the
// host's are used), fused multiply-adds (the kernels are built with --fmad=false), cuBLASLt and
// cuDNN. Only the tests of the kernels themselves are built on it (tests/gpu/sim/CMakeLists.txt).
// Kernel launches `k<<<grid, block, shared, stream>>>(args)` are rewritten by cu2cpp.py into
// cudasim::launch calls.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

struct alignas(16) float4 {
  float x, y, z, w;
};
using std::isfinite;

// ---- the runtime API --------------------------------------------------------------------------

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorLaunchFailure = 719,
};
using cudaError = cudaError_t;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
struct CUstream_st;
using cudaStream_t = CUstream_st*;

cudaError_t cudaGetDeviceCount(int* count);
const char* cudaGetErrorString(cudaError_t err);
cudaError_t cudaGetLastError();
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMalloc(void** ptr, std::size_t bytes);
template <class T>
cudaError_t cudaMalloc(T** ptr, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemcpy2DAsync(void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                              std::size_t width, std::size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes);
cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t stream = nullptr);

// ---- 16-bit types: storage, and conversions with IEEE round to nearest even ---------------------

struct __half {
  unsigned short __x;
};
struct __nv_bfloat16 {
  unsigned short __x;
};
float __half2float(__half h);
__half __float2half_rn(float f);
float __bfloat162float(__nv_bfloat16 h);
__nv_bfloat16 __float2bfloat16_rn(float f);

// ---- the emulator ------------------------------------------------------------------------------

namespace cudasim {

const uint3& thread_idx();
const uint3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();

void syncthreads();
int syncthreads_or(int predicate);
// The value of lane `src` of the calling thread's warp, once every lane of `mask` has called it.
std::uint64_t exchange(unsigned mask, std::uint64_t bits, unsigned src, const char* what);
unsigned lane();

// The block's copy of one __shared__ variable (key: the variable), and its dynamic shared memory.
void* block_shared(const void* key, std::size_t bytes, std::size_t align);
void* dynamic_shared();
template <class T, int kLine>
T& shared() {
  static const char key = 0;
  return *static_cast<T*>(block_shared(&key, sizeof(T), alignof(T)));
}
template <class T>
T* dynamic_shared_as() {
  return static_cast<T*>(dynamic_shared());
}

struct LaunchConfig {
  dim3 grid, block;
  std::size_t shared_bytes;
  cudaStream_t stream;
  LaunchConfig(dim3 g, dim3 b, std::size_t s = 0, cudaStream_t st = nullptr)
      : grid(g), block(b), shared_bytes(s), stream(st) {}
};

// Runs body(ctx) as every thread of the grid; a mistake it finds becomes the last error.
void run_grid(const char* kernel, const LaunchConfig& config, void (*body)(void*), void* ctx);
// False, and the last error, for an argument that is neither null nor inside device memory.
bool check_argument(const char* kernel, int index, const void* ptr);

// `kernel` calls the kernel with the launch's arguments (cu2cpp.py writes it as a lambda).
template <class K, class... A>
void launch(const char* name, const LaunchConfig& config, K kernel, A&&... args) {
  int index = 0;
  bool ok = true;
  auto check = [&](const auto& arg) {
    using Arg = std::decay_t<decltype(arg)>;
    if constexpr (std::is_pointer_v<Arg>) ok = check_argument(name, index, arg) && ok;
    ++index;
  };
  (check(args), ...);
  if (!ok) return;  // the launch does not happen
  // As CUDA does, the arguments are copied once, at the launch.
  std::tuple<std::decay_t<A>...> params(std::forward<A>(args)...);
  struct Call {
    K* kernel;
    std::tuple<std::decay_t<A>...>* params;
  } call{&kernel, &params};
  run_grid(
      name, config,
      [](void* c) {
        auto* call = static_cast<Call*>(c);
        std::apply(*call->kernel, *call->params);
      },
      &call);
}

template <class T>
T shuffle(unsigned mask, T v, unsigned src, const char* what) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = exchange(mask, bits, src, what);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

}  // namespace cudasim

#define threadIdx (::cudasim::thread_idx())
#define blockIdx (::cudasim::block_idx())
#define blockDim (::cudasim::block_dim())
#define gridDim (::cudasim::grid_dim())

inline void __syncthreads() {
  ::cudasim::syncthreads();
}
inline int __syncthreads_or(int predicate) {
  return ::cudasim::syncthreads_or(predicate);
}

template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const unsigned lane = ::cudasim::lane(), base = lane & ~static_cast<unsigned>(width - 1);
  const unsigned src = (lane - base) + delta < static_cast<unsigned>(width) ? lane + delta : lane;
  return ::cudasim::shuffle(mask, v, src, "__shfl_down_sync");
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  const unsigned lane = ::cudasim::lane(), base = lane & ~static_cast<unsigned>(width - 1);
  const unsigned src = base + (((lane - base) ^ static_cast<unsigned>(lane_mask)) &
                               static_cast<unsigned>(width - 1));
  return ::cudasim::shuffle(mask, v, src, "__shfl_xor_sync");
}

// Atomics: the threads run one at a time, so a read-modify-write is one.
template <class T>
T atomicAdd(T* address, T v) {
  const T old = *address;
  *address = old + v;
  return old;
}
template <class T>
T atomicMax(T* address, T v) {
  const T old = *address;
  *address = old < v ? v : old;
  return old;
}

inline float __fdiv_rn(float a, float b) {
  return a / b;
}
inline unsigned __float_as_uint(float f) {
  return std::bit_cast<unsigned>(f);
}
// CUDA's min and max overloads for the device (fmin / fmax for the floating types, as its own).
#define CUDASIM_MIN_MAX(T) \
  inline T min(T a, T b) { \
    return a < b ? a : b;  \
  }                        \
  inline T max(T a, T b) { \
    return a > b ? a : b;  \
  }
CUDASIM_MIN_MAX(int)
CUDASIM_MIN_MAX(unsigned)
CUDASIM_MIN_MAX(long)
CUDASIM_MIN_MAX(unsigned long)
CUDASIM_MIN_MAX(long long)
#undef CUDASIM_MIN_MAX
inline float min(float a, float b) {
  return std::fmin(a, b);
}
inline float max(float a, float b) {
  return std::fmax(a, b);
}
inline double min(double a, double b) {
  return std::fmin(a, b);
}
inline double max(double a, double b) {
  return std::fmax(a, b);
}
