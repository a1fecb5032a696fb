// A present GPU's roofs, measured as the CUDA backend computes (mixlab::calibrate_gpu, through
// the plugin table): the doctor's profile of a GPU of this machine.
#pragma once

#include "engine/backend/backend.h"

namespace mixlab::cuda {

// GPU `device`'s properties and measured rates. Throws BackendError (no such GPU, a library
// that fails, too little free memory for the 0.7 GB it borrows for a second).
GpuCalibration calibrate(int device);

}  // namespace mixlab::cuda
