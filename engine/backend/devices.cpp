// Every device this build can train on: the CPU, then each CUDA GPU when built with CUDA.
#include <vector>

#include "engine/backend/backend.h"

#if defined(MIXLAB_HAVE_CUDA)
#include "engine/backend/cuda/cuda_devices.h"
#endif

namespace mixlab {

bool built_with_cuda() {
#if defined(MIXLAB_HAVE_CUDA)
  return true;
#else
  return false;
#endif
}

std::vector<DeviceInfo> available_devices() {
  std::vector<DeviceInfo> devices{make_cpu_backend()->device()};
#if defined(MIXLAB_HAVE_CUDA)
  for (auto& gpu : cuda::list_devices()) devices.push_back(std::move(gpu));
#endif
  return devices;
}

}  // namespace mixlab
