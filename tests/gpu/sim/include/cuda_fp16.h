// cudasim stands in for the CUDA toolkit header of this name (tests/gpu/sim/cuda_sim.h).
#pragma once
#include "tests/gpu/sim/cuda_sim.h"
