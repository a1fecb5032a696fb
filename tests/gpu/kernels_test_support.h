// What the tests of MixLab's CUDA kernels share: device buffers, dtype encoding, random values
// representable in a dtype, the tolerance of one 16-bit rounding, and the fixture that skips
// without a CUDA device.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/cuda/kernels.h"

namespace mixlab::cuda::test {

void cuda_ok(cudaError_t err, const char* expr);
#define CUDA_OK(expr) ::mixlab::cuda::test::cuda_ok((expr), #expr)

// Device memory for a test, freed at scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    CUDA_OK(cudaMalloc(&ptr_, std::max<std::size_t>(bytes, 1)));
  }
  template <class T>
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size() * sizeof(T)) {
    upload(host.data());
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(other.bytes_) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <class T = void>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  void upload(const void* src) { CUDA_OK(cudaMemcpy(ptr_, src, bytes_, cudaMemcpyHostToDevice)); }
  template <class T>
  std::vector<T> download() const {
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<T> out(bytes_ / sizeof(T));
    CUDA_OK(cudaMemcpy(out.data(), ptr_, bytes_, cudaMemcpyDeviceToHost));
    return out;
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

inline constexpr DType kDTypes[] = {DType::f32, DType::f16, DType::bf16};

float round_to(DType dtype, float v);
// Host floats (representable in dtype) as the device's bytes, and back.
std::vector<std::uint8_t> encode(const std::vector<float>& v, DType dtype);
std::vector<float> decode(const std::vector<std::uint8_t>& bytes, DType dtype);
DeviceBuffer to_device(const std::vector<float>& v, DType dtype);
std::vector<float> from_device(const DeviceBuffer& b, DType dtype);
std::vector<float> random_values(std::size_t n, DType dtype, float lo, float hi, unsigned seed);
// One rounding step of the 16-bit type (relative), plus `rel32` for float32 math differences;
// none at all when both are 0 (casts, copies, exact arithmetic: the same rounding is required).
float tolerance(DType dtype, float want, float rel32, float abs);
void expect_close(const std::vector<float>& got, const std::vector<float>& want, DType dtype,
                  float rel32, float abs, const std::string& what);

template <class T>
DeviceBuffer device_value(const T& v) {
  DeviceBuffer b(sizeof(T));
  b.upload(&v);
  return b;
}
template <class T>
T host_value(const DeviceBuffer& b) {
  return b.download<T>().at(0);
}

class Kernels : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount failed: " << cudaGetErrorString(err);
    }
    if (count == 0) GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount returned 0";
  }
};


}  // namespace mixlab::cuda::test
