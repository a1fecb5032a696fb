// What the doctor's roofline model needs of a present GPU, measured the way the CUDA backend
// computes rather than taken from a datasheet:
// - matmul rates: a 4096^3 cuBLASLt matmul per type (float32, TF32, float16 and bfloat16 with
//   float32 accumulation), through the LtMatmul the Dense layers use, with the algorithm
//   cuBLASLt's heuristic picks; the best of three rounds of five calls, timed with events;
// - memory bandwidth: a 256 MiB device-to-device copy (bytes read + written), which NVIDIA's
//   bandwidthTest and the STREAM copy kernel both count that way;
// - the host link: a 64 MiB copy from pinned host memory, what the batch staging does;
// - a call's overhead: back-to-back 64^3 matmuls, each too small to be limited by its work;
// - properties from cudaDeviceGetAttribute (CUDA 13 dropped clockRate and the memory clock
//   from cudaDeviceProp).
// Operands are filled with the byte 0x3c: 1.06 in float16, 0.0115 in float32 and bfloat16, so
// that no product overflows and tensor cores see non-zero data (zeros can run at a higher clock
// than real work).
#include "engine/backend/cuda/gpu_calibration.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <limits>
#include <string>

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/dense_lt.h"
#include "engine/backend/cuda/layouts.h"

namespace mixlab::cuda {

namespace {

constexpr std::int64_t kMatmulSize = 4096;
constexpr std::size_t kMatrixBytes = std::size_t{kMatmulSize} * kMatmulSize * sizeof(float);
constexpr std::size_t kCopyBytes = std::size_t{256} << 20;
constexpr std::size_t kHostCopyBytes = std::size_t{64} << 20;  // into a matrix's buffer
static_assert(kHostCopyBytes <= kMatrixBytes);
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;
constexpr int kRounds = 3;

// RAII for what the calibration borrows; every release is unchecked (it runs on error paths).
struct DeviceMemory {
  void* ptr = nullptr;
  explicit DeviceMemory(std::size_t bytes) { CUDA_CHECK(cudaMalloc(&ptr, bytes)); }
  ~DeviceMemory() { cudaFree(ptr); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};

struct HostMemory {
  void* ptr = nullptr;
  explicit HostMemory(std::size_t bytes) { CUDA_CHECK(cudaMallocHost(&ptr, bytes)); }
  ~HostMemory() { cudaFreeHost(ptr); }
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() { CUDA_CHECK(cudaEventCreate(&e)); }
  ~Event() { cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

struct LtHandle {
  cublasLtHandle_t h = nullptr;
  LtHandle() { CUBLAS_CHECK(cublasLtCreate(&h)); }
  ~LtHandle() { cublasLtDestroy(h); }
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
};

int attribute(cudaDeviceAttr what, int device) {
  int value = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&value, what, device));
  return value;
}

// Seconds per call: `launch` run once to warm up, then kRounds rounds of `calls` back-to-back
// calls between two events; the best round.
template <class Launch>
double seconds_per_call(cudaStream_t stream, int calls, Launch&& launch) {
  launch();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  Event start, stop;
  double best = std::numeric_limits<double>::infinity();
  for (int round = 0; round < kRounds; ++round) {
    CUDA_CHECK(cudaEventRecord(start.e, stream));
    for (int i = 0; i < calls; ++i) launch();
    CUDA_CHECK(cudaEventRecord(stop.e, stream));
    CUDA_CHECK(cudaEventSynchronize(stop.e));
    float ms = 0.0F;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start.e, stop.e));
    best = std::min(best, static_cast<double>(ms) / 1000.0 / calls);
  }
  return best;
}

LtMatmulShape square(std::int64_t n, DType dtype, bool tf32) {
  LtMatmulShape s;
  s.m = s.n = s.k = n;
  s.ab = s.cd = dtype;
  s.tf32 = tf32;
  return s;
}

struct MatmulBuffers {
  void* a;
  void* b;
  void* d;
  void* workspace;
};

double matmul_flops(cublasLtHandle_t handle, cudaStream_t stream, const MatmulBuffers& buf,
                    const LtMatmulShape& shape) {
  const LtMatmul matmul(handle, shape, kWorkspaceBytes, "the calibration's matmul");
  const double s = seconds_per_call(stream, 5, [&] {
    matmul.run(buf.a, buf.b, buf.d, nullptr, buf.workspace, stream);
  });
  return 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) *
         static_cast<double>(shape.k) / s;
}

double matmul_flops(cublasLtHandle_t handle, cudaStream_t stream, const MatmulBuffers& buf,
                    DType dtype, bool tf32) {
  return matmul_flops(handle, stream, buf, square(kMatmulSize, dtype, tf32));
}

}  // namespace

GpuCalibration calibrate(int device) {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count) {
    throw BackendError("there is no GPU cuda:" + std::to_string(device) + " to calibrate (" +
                       std::to_string(count) + " found)");
  }
  CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));

  GpuCalibration c;
  c.gpu = prop.name;
  c.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  DeviceInfo libraries;
  libraries.libraries = cuda_libraries();
  c.libraries = libraries.library_versions();
  c.sm_count = attribute(cudaDevAttrMultiProcessorCount, device);
  c.clock_mhz = attribute(cudaDevAttrClockRate, device) / 1000.0;
  c.memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  c.l2_bytes = attribute(cudaDevAttrL2CacheSize, device);
  // Double data rate: two transfers per memory clock over the bus.
  c.memory_bus_bytes_per_s = 2.0 * attribute(cudaDevAttrMemoryClockRate, device) * 1000.0 *
                             attribute(cudaDevAttrGlobalMemoryBusWidth, device) / 8.0;

  const Stream stream;
  const LtHandle lt;
  const DeviceMemory a(kMatrixBytes), b(kMatrixBytes), d(kMatrixBytes), ws(kWorkspaceBytes);
  CUDA_CHECK(cudaMemsetAsync(a.ptr, 0x3c, kMatrixBytes, stream.s));
  CUDA_CHECK(cudaMemsetAsync(b.ptr, 0x3c, kMatrixBytes, stream.s));
  const MatmulBuffers buffers{a.ptr, b.ptr, d.ptr, ws.ptr};
  const bool ampere = has_bf16_and_tf32(prop.major + prop.minor / 10.0);
  c.f32_matmul_flops = matmul_flops(lt.h, stream.s, buffers, DType::f32, false);
  if (ampere) c.tf32_matmul_flops = matmul_flops(lt.h, stream.s, buffers, DType::f32, true);
  c.f16_matmul_flops = matmul_flops(lt.h, stream.s, buffers, DType::f16, false);
  if (ampere) c.bf16_matmul_flops = matmul_flops(lt.h, stream.s, buffers, DType::bf16, false);
  if (prop.major >= 7) {
    // K = 4095: B's columns (K long, packed) start off 16 bytes, as a Dense layer's do at a
    // batch or width off a multiple of 8. cuBLASLt from 11.0 runs it on tensor cores, slower.
    LtMatmulShape odd = square(kMatmulSize, ampere ? DType::bf16 : DType::f16, false);
    odd.k = kMatmulSize - 1;
    try {
      c.misaligned_matmul_efficiency = matmul_flops(lt.h, stream.s, buffers, odd) /
                                       (ampere ? c.bf16_matmul_flops : c.f16_matmul_flops);
    } catch (const BackendError&) {
      c.misaligned_matmul_efficiency = 0.0;  // no algorithm for it: not measured
    }
  }

  {
    const LtMatmul small(lt.h, square(64, DType::f32, false), kWorkspaceBytes,
                         "the calibration's small matmul");
    c.call_overhead_s = seconds_per_call(stream.s, 200, [&] {
      small.run(a.ptr, b.ptr, d.ptr, nullptr, ws.ptr, stream.s);
    });
  }
  {
    const DeviceMemory from(kCopyBytes), to(kCopyBytes);
    CUDA_CHECK(cudaMemsetAsync(from.ptr, 0x3c, kCopyBytes, stream.s));
    const double s = seconds_per_call(stream.s, 5, [&] {
      CUDA_CHECK(cudaMemcpyAsync(to.ptr, from.ptr, kCopyBytes, cudaMemcpyDeviceToDevice, stream.s));
    });
    c.copy_bytes_per_s = 2.0 * static_cast<double>(kCopyBytes) / s;
  }
  {
    const HostMemory host(kHostCopyBytes);
    const double s = seconds_per_call(stream.s, 3, [&] {
      CUDA_CHECK(
          cudaMemcpyAsync(d.ptr, host.ptr, kHostCopyBytes, cudaMemcpyHostToDevice, stream.s));
    });
    c.host_copy_bytes_per_s = static_cast<double>(kHostCopyBytes) / s;
  }
  CUDA_CHECK(cudaStreamSynchronize(stream.s));
  return c;
}

}  // namespace mixlab::cuda
