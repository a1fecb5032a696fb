// The instruction set oneDNN runs at on this CPU (ONEDNN_MAX_CPU_ISA lowers it), as the engine's
// device description and the backend's choice of bfloat16 kernels see it.
#pragma once

#include <string>

#include "engine/core/device_info.h"

namespace mixlab::cpu {

CpuIsa onednn_isa();
// oneDNN's own name for it ("avx512_core_vnni"), finer than CpuIsa.
std::string onednn_isa_name();
using mixlab::has_bf16_kernels;  // engine/core/device_info.h

}  // namespace mixlab::cpu
