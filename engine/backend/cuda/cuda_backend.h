// The CUDA backend inside libmixlab-cuda.so (plugin.cpp exports it; nothing outside the plugin
// includes this header): cuBLASLt, cuDNN 9 and MixLab's own kernels.
#pragma once

#include <memory>
#include <string>

#include "engine/backend/backend.h"

namespace mixlab::cuda {

// A backend on GPU `device`. Throws BackendError with the reason when it cannot be used (no
// driver, no such device, cuBLASLt or cuDNN failing to start).
std::unique_ptr<Backend> make_cuda_backend(int device);

// The CUDA runtime, driver, cuBLASLt and cuDNN the plugin finds, as fields and as one line
// ("CUDA runtime 13.0, driver 13.0, cuBLAS 13.0.2, cuDNN 9.19.0").
LibraryVersions cuda_libraries();
std::string library_versions();

}  // namespace mixlab::cuda
