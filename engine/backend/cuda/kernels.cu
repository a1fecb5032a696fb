#include "engine/backend/cuda/kernels.h"
