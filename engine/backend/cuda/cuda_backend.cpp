#include "engine/backend/cuda/cuda_backend.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <algorithm>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_executor.h"

namespace mixlab::cuda {

namespace {

std::string dotted(std::size_t v, std::size_t major_div, std::size_t minor_div) {
  return std::to_string(v / major_div) + "." + std::to_string(v % major_div / minor_div) + "." +
         std::to_string(v % minor_div);
}

std::string runtime_version(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, DeviceInfo info) : device_(device), info_(std::move(info)) {}
  DeviceInfo device() const override { return info_; }
  std::unique_ptr<ModelExecutor> compile(const ModelSpec& spec, const ShapeTable& table,
                                         const ExecutorOptions& options) override {
    const PolicySupport support = policy_support(info_, options.policy);
    if (support.level == Support::unsupported) throw ConfigError(support.reason);
    const ExecutionPlan plan = build_plan(spec, table, options.policy, options.batch_size,
                                          options.optimizer, kCudaLowering, options.input_gradient);
    return std::make_unique<CudaExecutor>(spec, table, plan, options, device_, info_);
  }

 private:
  int device_;
  DeviceInfo info_;
};

}  // namespace

LibraryVersions cuda_libraries() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  LibraryVersions l;
  l.cuda_runtime = runtime_version(runtime);
  if (driver > 0) l.driver = runtime_version(driver);
  l.cublas = dotted(cublasLtGetVersion(), 10000, 100);
  l.cudnn = dotted(cudnnGetVersion(), 10000, 100);
  return l;
}

std::string library_versions() {
  DeviceInfo d;
  d.libraries = cuda_libraries();
  return d.library_versions();
}

std::unique_ptr<Backend> make_cuda_backend(int device) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw BackendError(std::string("no usable NVIDIA driver or GPU: ") +
                       cudaGetErrorString(status));
  }
  if (count == 0) throw BackendError("no NVIDIA GPU found");
  if (device < 0 || device >= count) {
    throw BackendError("there is no GPU cuda:" + std::to_string(device) + " (" +
                       std::to_string(count) +
                       " found, cuda:0 to cuda:" + std::to_string(count - 1) + ")");
  }
  const std::size_t cudnn_version = cudnnGetVersion();
  if (cudnn_version / 10000 != CUDNN_MAJOR) {
    throw BackendError("the CUDA backend was built for cuDNN " + std::to_string(CUDNN_MAJOR) +
                       " but found cuDNN " + dotted(cudnn_version, 10000, 100));
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceInfo info = gpu_device_info(prop.name, prop.major, prop.minor,
                                    static_cast<std::int64_t>(prop.totalGlobalMem));
  // Too old a GPU: float32 is as unsupported as every policy (the rule says why).
  const PolicySupport support = policy_support(info, Policy::float32);
  if (support.level == Support::unsupported) throw BackendError(support.reason);
  info.libraries = cuda_libraries();
  return std::make_unique<CudaBackend>(device, std::move(info));
}

}  // namespace mixlab::cuda
