// The CUDA backend is its own shared library, libmixlab-cuda.so, that the engine loads with
// dlopen() only when a GPU run is asked for or the backends are listed. It links cuBLASLt,
// cuDNN and the CUDA runtime; mixlab and mixlab-cli do not, so they start on machines without
// any CUDA library and say why the GPU backend is unavailable (the loader's message).
//
// The library exports one C symbol, mixlab_cuda_plugin(), returning this table. Engine and
// plugin come from the same build (C++ types cross the boundary), which `build_id` checks.
#pragma once

#include <memory>
#include <string>

#include "engine/backend/backend.h"

namespace mixlab::cuda {

inline constexpr int kPluginAbiVersion = 2;
inline constexpr const char* kPluginSymbol = "mixlab_cuda_plugin";
inline constexpr const char* kPluginFileName = "libmixlab-cuda.so";

struct PluginApi {
  int abi_version = kPluginAbiVersion;
  const char* build_id = nullptr;  // MixLab version and compiler: must equal the engine's
  // The cuBLASLt, cuDNN and CUDA runtime versions the plugin runs with ("cuBLASLt 13.0.0,
  // cuDNN 9.19.0, CUDA runtime 13.0"), or why they cannot be used.
  std::string (*library_versions)() = nullptr;
  // A backend on GPU `device` (0-based, as cuda::list_devices() numbers them). Throws
  // BackendError naming the reason (no driver, no such device, a library that fails to start).
  std::unique_ptr<Backend> (*create_backend)(int device) = nullptr;
  // GPU `device`'s roofs, measured (mixlab::calibrate_gpu). Throws BackendError. (ABI 2 on.)
  GpuCalibration (*calibrate)(int device) = nullptr;
};

// The build id both sides compare.
#define MIXLAB_CUDA_PLUGIN_BUILD_ID MIXLAB_VERSION " " __VERSION__

}  // namespace mixlab::cuda

extern "C" {
using MixlabCudaPluginFn = const mixlab::cuda::PluginApi* (*)();
}
