// The oneDNN CPU backend: device description and compilation of models into CpuExecutors.
#include <omp.h>

#include <fstream>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_executor.h"
#include "engine/core/error.h"

namespace mixlab {

namespace {

std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
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

bool has_bf16(dnnl::cpu_isa isa) {
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

bool has_avx512(dnnl::cpu_isa isa) {
  return isa == dnnl::cpu_isa::avx512_core || isa == dnnl::cpu_isa::avx512_core_vnni ||
         has_bf16(isa);
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_num_procs()) {}

  DeviceInfo device() const override {
    DeviceInfo info;
    info.kind = "cpu";
    info.name = cpu_model_name();
    info.threads = threads_;
    const auto isa = dnnl::get_effective_cpu_isa();
    info.native_bf16 = has_bf16(isa);
    info.native_fp16 = false;  // float16 is emulated: float32 arithmetic, float16 storage
    const dnnl_version_t* v = dnnl_version();
    info.library_versions = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) +
                            "." + std::to_string(v->patch) + " (isa " + isa_name(isa) + ")";
    return info;
  }

  std::unique_ptr<ModelExecutor> compile(const ModelSpec& spec, const ShapeTable& table,
                                         const ExecutorOptions& options) override {
    if (options.policy == Policy::mixed_bfloat16 && !has_avx512(dnnl::get_effective_cpu_isa())) {
      throw ConfigError(
          "mixed_bfloat16 on the CPU needs AVX-512 (oneDNN's bfloat16 kernels); this CPU (" +
          cpu_model_name() + ") has " + isa_name(dnnl::get_effective_cpu_isa()));
    }
    return std::make_unique<cpu::CpuExecutor>(spec, table, options, threads_);
  }

 private:
  int threads_;
};

}  // namespace

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

std::unique_ptr<Backend> make_cpu_backend(int threads) {
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace mixlab
