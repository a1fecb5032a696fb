// CUDA device discovery (no GPU, no driver: an empty list, never an error).
#pragma once

#include <vector>

#include "engine/backend/backend.h"

namespace mixlab::cuda {

std::vector<DeviceInfo> list_devices();

}  // namespace mixlab::cuda
