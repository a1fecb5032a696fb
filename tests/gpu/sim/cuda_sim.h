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
// even; CUDA's launch limits; one GPU, an H100 by its properties (CUDASIM_DEVICE=major.minor for
// another compute capability).
//
// What it reports (cudaGetLastError after the launch, and stderr; an access outside device memory
// stops the process with the kernel's name): a barrier or shuffle that some of the threads it
// names skip, a shuffle with lanes that do not exist, a write past an allocation, a host pointer
// among a kernel's arguments, a copy whose kind disagrees with its pointers, a bad launch
// configuration, more than 48 KiB of shared memory.
//
// Streams, events and graphs (enqueue below): work on a stream waits until the host waits for
// it, and streams interleave in a seeded random order, ordered only by events; pinned host memory
// (cudaMallocHost) is copied asynchronously, pageable memory as CUDA documents; a stream capture
// records the work, and a synchronisation during it breaks the capture. cublaslt_sim.cpp and
// cudnn_sim.cpp emulate the cuBLASLt and cuDNN calls MixLab makes (include/cublasLt.h, cudnn.h).
//
// What it cannot show: the GPU's timing and memory model, its math library (expf, erff: the
// host's are used), fused multiply-adds (the kernels are built with --fmad=false), the real
// libraries' numerics, cuDNN's graph engines. The kernels' tests and the whole CUDA backend
// (libmixlab-cuda-sim.so, with the executor's tests) are built on it
// (tests/gpu/sim/CMakeLists.txt). Kernel launches `k<<<grid, block, shared, stream>>>(args)` are
// rewritten by cu2cpp.py into cudasim::launch calls.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
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
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureIsolation = 904,
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
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
using cudaGraph_t = CUgraph_st*;
using cudaGraphExec_t = CUgraphExec_st*;
inline constexpr unsigned cudaStreamDefault = 0, cudaStreamNonBlocking = 1;
inline constexpr unsigned cudaEventDefault = 0, cudaEventBlockingSync = 1,
                          cudaEventDisableTiming = 2;
inline constexpr unsigned cudaHostAllocDefault = 0;
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2,
};
enum cudaDeviceAttr {
  cudaDevAttrClockRate = 13,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMemoryClockRate = 36,
  cudaDevAttrGlobalMemoryBusWidth = 37,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
};
// The fields MixLab reads, of the emulated device (CUDASIM_DEVICE: "9.0" by default, an H100).
struct cudaDeviceProp {
  char name[256];
  std::size_t totalGlobalMem;
  int major, minor;
  int multiProcessorCount;
  int warpSize;
};

cudaError_t cudaGetDeviceCount(int* count);
const char* cudaGetErrorString(cudaError_t err);
cudaError_t cudaGetLastError();
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaRuntimeGetVersion(int* version);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total);
cudaError_t cudaMalloc(void** ptr, std::size_t bytes);
template <class T>
cudaError_t cudaMalloc(T** ptr, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMallocHost(void** ptr, std::size_t bytes);
cudaError_t cudaHostAlloc(void** ptr, std::size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemcpy2DAsync(void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                              std::size_t width, std::size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes);
cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t stream = nullptr);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

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

// The running thread's indices and its launch's dimensions (inline: a grid-stride loop reads
// them on every turn).
extern const uint3* current_thread_idx;
extern const uint3* current_block_idx;
extern dim3 g_grid, g_block_dim;
inline const uint3& thread_idx() {
  return *current_thread_idx;
}
inline const uint3& block_idx() {
  return *current_block_idx;
}
inline const dim3& block_dim() {
  return g_block_dim;
}
inline const dim3& grid_dim() {
  return g_grid;
}

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
// False, and the last error, for a launch configuration beyond CUDA's limits.
bool launch_ok(const char* kernel, const LaunchConfig& config);
// False, and the last error, for an argument that is neither null nor inside device memory.
bool check_argument(const char* kernel, int index, const void* ptr);

// Streams. Work on a stream (a launch, an async copy, a cuBLASLt or cuDNN call) is queued and runs
// only when the host waits for it (a synchronisation, a blocking copy), the streams' queues
// interleaved in a seeded random order, cross-stream order only through events: work that reads
// what another stream writes without waiting for its event, or host code that reads pinned memory
// before waiting for the copy into it, sees stale values. The legacy default stream (null) runs
// its work at once. While a stream is captured, its work goes into the graph instead.
// `run` is called with device memory accessible; `what` names it in reports.
void enqueue(cudaStream_t stream, const char* what, std::function<void()> run);
// Whether [p, p + bytes) lies inside one device allocation.
bool is_device(const void* p, std::size_t bytes);
// Records `err` as the last error (if none is) and prints the message; returns err.
cudaError_t report(cudaError_t err, const std::string& message);
// Every CUDA, cuBLASLt and cuDNN call of cudasim holds this lock: the emulation is single-threaded.
std::recursive_mutex& api_mutex();
#define CUDASIM_API std::lock_guard<std::recursive_mutex> cudasim_api_lock_(::cudasim::api_mutex())

// `kernel` calls the kernel with the launch's arguments (cu2cpp.py writes it as a lambda).
template <class K, class... A>
void launch(const char* name, const LaunchConfig& config, K kernel, A&&... args) {
  CUDASIM_API;
  int index = 0;
  bool ok = true;
  auto check = [&](const auto& arg) {
    using Arg = std::decay_t<decltype(arg)>;
    if constexpr (std::is_pointer_v<Arg>) ok = check_argument(name, index, arg) && ok;
    ++index;
  };
  (check(args), ...);
  if (!ok || !launch_ok(name, config)) return;  // the launch does not happen
  // As CUDA does, the arguments are copied once, at the launch (a captured launch keeps them).
  using Params = std::tuple<std::decay_t<A>...>;
  auto params = std::make_shared<Params>(std::forward<A>(args)...);
  enqueue(config.stream, name, [name, config, kernel, params] {
    struct Call {
      const K* kernel;
      Params* params;
    } call{&kernel, params.get()};
    run_grid(
        name, config,
        [](void* c) {
          auto* call = static_cast<Call*>(c);
          std::apply(*call->kernel, *call->params);
        },
        &call);
  });
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
