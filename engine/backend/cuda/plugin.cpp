// libmixlab-cuda.so's one exported symbol: the table the engine's loader
// (engine/backend/cuda_loader.cpp) reads after dlopen(). Everything else in the library is
// hidden (CXX_VISIBILITY_PRESET hidden, --exclude-libs), so its copy of the engine's core code
// cannot clash with the program's.
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/gpu_calibration.h"
#include "engine/backend/cuda/plugin_api.h"

extern "C" __attribute__((visibility("default"))) const mixlab::cuda::PluginApi*
mixlab_cuda_plugin() {
  static const mixlab::cuda::PluginApi api{
      mixlab::cuda::kPluginAbiVersion,
      MIXLAB_CUDA_PLUGIN_BUILD_ID,
      &mixlab::cuda::library_versions,
      &mixlab::cuda::make_cuda_backend,
      &mixlab::cuda::calibrate,
  };
  return &api;
}
