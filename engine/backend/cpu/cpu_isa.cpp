#include "engine/backend/cpu/cpu_isa.h"

#include <oneapi/dnnl/dnnl.hpp>

namespace mixlab::cpu {

CpuIsa onednn_isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx2:
    case dnnl::cpu_isa::avx2_vnni:
      return CpuIsa::avx2;
    case dnnl::cpu_isa::avx512_core:
    case dnnl::cpu_isa::avx512_core_vnni:
      return CpuIsa::avx512_core;
    case dnnl::cpu_isa::avx512_core_bf16:
      return CpuIsa::avx512_core_bf16;
    case dnnl::cpu_isa::avx512_core_amx:
      return CpuIsa::avx512_core_amx;
    default:
      return CpuIsa::baseline;
  }
}

std::string onednn_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

}  // namespace mixlab::cpu
