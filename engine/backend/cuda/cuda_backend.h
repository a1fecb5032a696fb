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

// "cuBLASLt 13.0.2, cuDNN 9.19.0, CUDA runtime 13.0, driver 13.0" as the plugin finds them.
std::string library_versions();

}  // namespace mixlab::cuda
