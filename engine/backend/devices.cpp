// Every device this build can train on: the CPU, then each CUDA GPU when built with CUDA.
#include <string>
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

std::vector<BackendStatus> backend_statuses() {
  std::vector<BackendStatus> statuses;
  const DeviceInfo cpu = make_cpu_backend()->device();
  statuses.push_back(
      {"cpu", true,
       cpu.name + ", " + std::to_string(cpu.threads) + " threads, " + cpu.library_versions});
  BackendStatus cuda{"cuda", false, {}};
#if defined(MIXLAB_HAVE_CUDA)
  const auto gpus = cuda::list_devices();
  if (gpus.empty()) {
    cuda.detail = "no NVIDIA GPU or driver found";
  } else {
    std::string names;
    for (const DeviceInfo& gpu : gpus) {
      names += (names.empty() ? "" : ", ") + gpu.name + " (compute capability " +
               gpu.compute_capability + ")";
    }
    cuda.detail = "found " + names +
                  ", but training on a GPU needs the CUDA backend, which this version does not "
                  "have yet";
  }
#else
  cuda.detail = "not in this build: it was built without the CUDA toolkit";
#endif
  statuses.push_back(std::move(cuda));
  return statuses;
}

}  // namespace mixlab
