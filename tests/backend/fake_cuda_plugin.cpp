// TEST DOUBLE - not a CUDA backend. A stand-in for libmixlab-cuda.so that the CPU-only tests
// load through the real loader (engine/backend/cuda_loader.cpp): it exports the same
// mixlab_cuda_plugin() table, and its "GPU" is the oneDNN CPU backend reporting kind "cuda", so
// that device selection, fallback, the CLI and the store can be tested on a machine without a
// GPU. It never ships: the build puts it under the tests' folder, and nothing installs it.
//
// Variants, by compile definition:
//   FAKE_ABI_VERSION=N   reports plugin ABI version N (the loader must refuse it)
//   FAKE_BUILD_ID="..."  reports another build id (the loader must refuse it)
//   FAKE_TABLE_ONLY      no backend inside (for the variants the loader refuses before use)
#include <memory>
#include <string>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/plugin_api.h"
#include "engine/core/error.h"

#ifndef FAKE_ABI_VERSION
#define FAKE_ABI_VERSION mixlab::cuda::kPluginAbiVersion
#endif
#ifndef FAKE_BUILD_ID
#define FAKE_BUILD_ID MIXLAB_CUDA_PLUGIN_BUILD_ID
#endif

namespace {

using namespace mixlab;

std::string fake_library_versions() {
  return "fake CUDA backend (a test double on the CPU backend)";
}

#if defined(FAKE_TABLE_ONLY)
std::unique_ptr<Backend> fake_create_backend(int) {
  throw BackendError("the fake CUDA backend variant has no backend");
}
GpuCalibration fake_calibrate(int) {
  throw BackendError("the fake CUDA backend variant has no GPU");
}
#else
class FakeGpuBackend final : public Backend {
 public:
  DeviceInfo device() const override {
    DeviceInfo d = cpu_->device();
    d.kind = "cuda";
    d.name = "Fake GPU (the CPU backend, a test double)";
    d.compute_capability = "8.0";
    d.tensor_cores = true;
    d.memory_bytes = std::int64_t{1} << 30;
    d.libraries = {};
    d.libraries.cuda_runtime = "0.0 (fake)";
    d.libraries.cublas = "12.4.5";  // made up, as a real GPU's are reported
    d.libraries.cudnn = "9.1.0";
    return d;
  }
  std::unique_ptr<ModelExecutor> compile(const ModelSpec& spec, const ShapeTable& table,
                                         const ExecutorOptions& options) override {
    return cpu_->compile(spec, table, options);
  }

 private:
  std::unique_ptr<Backend> cpu_ = make_cpu_backend(0);
};

std::unique_ptr<Backend> fake_create_backend(int device) {
  if (device != 0) {
    throw BackendError("fake CUDA backend: no GPU " + std::to_string(device) +
                       " (the test double has one, cuda:0)");
  }
  return std::make_unique<FakeGpuBackend>();
}

// Made-up figures of a made-up GPU (an A100-like one), for the doctor's plumbing: never a
// measurement.
GpuCalibration fake_calibrate(int device) {
  if (device != 0) throw BackendError("fake CUDA backend: no GPU " + std::to_string(device));
  GpuCalibration c;
  c.gpu = "Fake GPU (the CPU backend, a test double)";
  c.compute_capability = "8.0";
  c.libraries = FakeGpuBackend().device().library_versions();
  c.sm_count = 100;
  c.clock_mhz = 1400.0;
  c.memory_bytes = std::int64_t{1} << 30;
  c.l2_bytes = std::int64_t{40} << 20;
  c.memory_bus_bytes_per_s = 1.5e12;
  c.f32_matmul_flops = 18e12;
  c.tf32_matmul_flops = 120e12;
  c.f16_matmul_flops = 250e12;
  c.bf16_matmul_flops = 240e12;
  c.misaligned_matmul_efficiency = 0.4;
  c.copy_bytes_per_s = 1.3e12;
  c.host_copy_bytes_per_s = 20e9;
  c.call_overhead_s = 5e-6;
  return c;
}
#endif

}  // namespace

extern "C" __attribute__((visibility("default"))) const mixlab::cuda::PluginApi*
mixlab_cuda_plugin() {
  static const mixlab::cuda::PluginApi api{FAKE_ABI_VERSION, FAKE_BUILD_ID, &fake_library_versions,
                                           &fake_create_backend, &fake_calibrate};
  return &api;
}
