#include "engine/core/device_info.h"

#include <cstdlib>

namespace mixlab {

std::string_view to_string(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::baseline:
      return "sse41";
    case CpuIsa::avx2:
      return "avx2";
    case CpuIsa::avx512_core:
      return "avx512_core";
    case CpuIsa::avx512_core_bf16:
      return "avx512_core_bf16";
    case CpuIsa::avx512_core_amx:
      return "avx512_core_amx";
  }
  return "?";
}

std::string_view to_string(Support support) {
  switch (support) {
    case Support::native:
      return "native";
    case Support::emulated:
      return "emulated";
    case Support::unsupported:
      return "unsupported";
  }
  return "?";
}

DeviceInfo gpu_device_info(std::string name, int major, int minor, std::int64_t memory_bytes) {
  DeviceInfo info;
  info.kind = "cuda";
  // GeForce GTX 1650 / 1660 (Ti, SUPER): TU116/TU117, compute capability 7.5 without tensor cores.
  info.tensor_cores = major >= 7 && name.find("GTX 16") == std::string::npos;
  info.name = std::move(name);
  info.compute_capability = std::to_string(major) + "." + std::to_string(minor);
  info.memory_bytes = memory_bytes;
  return info;
}

std::string DeviceInfo::library_versions() const {
  const LibraryVersions& l = libraries;
  std::string text;
  const auto add = [&text](const char* name, const std::string& version) {
    if (version.empty()) return;
    if (!text.empty()) text += ", ";
    text += std::string(name) + " " + version;
  };
  add("oneDNN", l.onednn);
  if (!l.onednn_isa.empty()) text += " (isa " + l.onednn_isa + ")";
  add("CUDA runtime", l.cuda_runtime);
  if (!l.cuda_runtime.empty() && l.driver.empty()) text += ", no driver";
  add("driver", l.driver);
  add("cuBLAS", l.cublas);
  add("cuDNN", l.cudnn);
  return text;
}

double compute_capability_value(const DeviceInfo& device) {
  if (device.compute_capability.empty()) return 0.0;
  char* end = nullptr;
  const double value = std::strtod(device.compute_capability.c_str(), &end);
  return end != nullptr && *end == '\0' ? value : 0.0;
}

namespace {

PolicySupport cpu_support(const DeviceInfo& cpu, Policy policy) {
  const std::string isa(to_string(cpu.isa));
  switch (policy) {
    case Policy::float32:
      return {};
    case Policy::mixed_float16:
      return {Support::emulated,
              "float16 is emulated on the CPU (float32 arithmetic, float16 rounding): expect it "
              "slower than float32; it shows float16's overflow and loss scaling"};
    case Policy::mixed_bfloat16:
      if (cpu.isa >= CpuIsa::avx512_core_bf16) return {};
      if (cpu.isa == CpuIsa::avx512_core) {
        return {Support::emulated,
                "this CPU has no bf16 instructions (AVX512-BF16 or AMX): oneDNN emulates bf16 "
                "arithmetic with AVX-512, expect it slower than float32"};
      }
      return {Support::emulated,
              "this CPU (" + isa + ") has no bf16 kernels in oneDNN: MixLab emulates bf16 "
              "(float32 arithmetic, bfloat16 rounding), expect it slower than float32"};
    case Policy::mixed_float8:
      return {Support::emulated,
              "FP8 is emulated on the CPU (bfloat16 arithmetic, the Dense and Conv2D inputs, "
              "weights and gradients rounded through scaled E4M3 and E5M2): expect it slower than "
              "float32; it shows FP8's scales and whether the model trains"};
  }
  return {};
}

PolicySupport gpu_support(const DeviceInfo& gpu, Policy policy) {
  const double cc = compute_capability_value(gpu);
  const std::string which = gpu.name + " (compute capability " + gpu.compute_capability + ")";
  if (cc < kMinCudaMajor + kMinCudaMinor / 10.0 - 1e-9) {
    return {Support::unsupported, "the CUDA backend needs compute capability 7.5 (Turing) or "
                                  "newer; " + which + " is older"};
  }
  switch (policy) {
    case Policy::float32:
      return {};
    case Policy::mixed_float16:
      if (gpu.tensor_cores) return {};
      return {Support::native, which + " has no tensor cores: float16 runs on its CUDA cores "
                                       "and will not beat float32 by much"};
    case Policy::mixed_bfloat16:
      if (has_bf16_and_tf32(cc)) return {};
      return {Support::unsupported, "bfloat16 needs compute capability 8.0 (Ampere) or newer "
                                    "(cuBLASLt and cuDNN have no bf16 kernels below); " +
                                        which + ": use mixed_float16"};
    case Policy::mixed_float8:
      if (!has_fp8_tensor_cores(cc)) {
        return {Support::unsupported,
                "FP8 tensor cores need compute capability 8.9 (Ada) or newer; " + which +
                    " has none: use mixed_bfloat16" +
                    (has_bf16_and_tf32(cc) ? "" : " or mixed_float16") +
                    ", or the CPU backend, which emulates mixed_float8"};
      }
      // cuBLASLt's FP8 GEMMs for Dense layers (attention's projections, pointwise Conv2D)
      // whose dimensions are multiples of 16; the others and larger Conv2D windows in bfloat16
      // (engine/backend/cuda).
      return {};
  }
  return {};
}

}  // namespace

PolicySupport policy_support(const DeviceInfo& device, Policy policy) {
  return device.is_gpu() ? gpu_support(device, policy) : cpu_support(device, policy);
}

Policy comparison_mixed_policy(const DeviceInfo& device) {
  const Support bf16 = policy_support(device, Policy::mixed_bfloat16).level;
  const Support f16 = policy_support(device, Policy::mixed_float16).level;
  if (bf16 == Support::native) return Policy::mixed_bfloat16;
  if (f16 == Support::native) return Policy::mixed_float16;
  if (bf16 == Support::emulated) return Policy::mixed_bfloat16;
  return Policy::mixed_float16;
}

}  // namespace mixlab
