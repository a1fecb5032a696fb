#include "engine/backend/cuda/cuda_devices.h"

#include <cuda_runtime_api.h>

#include <string>

namespace mixlab::cuda {

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> devices;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: clear the sticky error, report none
    return devices;
  }
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    DeviceInfo info = gpu_device_info(prop.name, prop.major, prop.minor,
                                      static_cast<std::int64_t>(prop.totalGlobalMem));
    info.libraries.cuda_runtime =
        std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
    if (driver > 0) {
      info.libraries.driver =
          std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
    }
    devices.push_back(std::move(info));
  }
  return devices;
}

}  // namespace mixlab::cuda
