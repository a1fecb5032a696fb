// What a device is, as its backend describes it, and the one rule for what it can run under
// each precision policy: natively, emulated (slower than float32, said why), or not at all. Both
// backends' compile gates, the run panel's flag and its "float32 vs mixed" choice, and
// mixlab-cli's devices, train and self-test ask policy_support(); none judges by itself.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/precision.h"

namespace mixlab {

// The x86-64 instruction set oneDNN runs at, as far as precision is concerned.
enum class CpuIsa : std::uint8_t {
  baseline,          // SSE4.1 / AVX: no bf16 kernels
  avx2,              // no bf16 kernels in oneDNN
  avx512_core,       // oneDNN's bf16 kernels, bf16 arithmetic emulated in AVX-512
  avx512_core_bf16,  // AVX512-BF16 instructions
  avx512_core_amx,   // AMX tiles (bf16)
};
std::string_view to_string(CpuIsa isa);
// Whether oneDNN has bfloat16 kernels at this ISA (AVX-512 and up); below, MixLab emulates bf16
// (float32 arithmetic, bfloat16 rounding) and keeps bf16 tensors as float32. The CPU backend's
// choice of kernels and the doctor's cost model both ask this.
constexpr bool has_bf16_kernels(CpuIsa isa) {
  return isa >= CpuIsa::avx512_core;
}

// The libraries a backend computes with, as fields (the store keeps each in a column).
struct LibraryVersions {
  std::string onednn;        // "2.6.3" (CPU)
  std::string onednn_isa;    // oneDNN's own ISA name, finer than CpuIsa: "avx512_core_vnni"
  std::string cuda_runtime;  // "13.0" (GPU)
  std::string driver;        // the CUDA driver's: "13.0"; empty without one
  std::string cublas;        // "13.0.0"
  std::string cudnn;         // "9.10.2"
};

struct DeviceInfo {
  std::string kind;  // "cpu" or "cuda"
  std::string name;  // CPU model or GPU name
  // --- CPU ---
  int threads = 0;  // threads the backend uses
  CpuIsa isa = CpuIsa::baseline;
  // --- GPU ---
  std::string compute_capability;  // "9.0"; empty for the CPU
  bool tensor_cores = false;       // float16 tensor cores: Volta (7.0) on, not Turing's GTX 16xx
  std::int64_t memory_bytes = 0;   // device memory; 0 for the CPU
  LibraryVersions libraries;

  bool is_gpu() const { return kind != "cpu"; }
  // For people: "oneDNN 2.6.3 (isa avx2)", "CUDA runtime 13.0, driver 13.0, cuBLAS 13.0.0,
  // cuDNN 9.10.2" (the parts known).
  std::string library_versions() const;
};

// A GPU described from its properties: the one builder both the device list and the CUDA
// backend use (tensor cores from compute capability 7.0 on, except the GTX 16xx cards, Turing
// chips built without them).
DeviceInfo gpu_device_info(std::string name, int major, int minor, std::int64_t memory_bytes);
// 8.6 for "8.6"; 0 for the CPU or a malformed string.
double compute_capability_value(const DeviceInfo& device);
// Ampere's rule: bfloat16 and TF32 tensor cores (cuBLASLt's and cuDNN's kernels for both) from
// compute capability 8.0 on. The policy check, the doctor's estimated profiles and the GPU
// calibration all ask this.
constexpr bool has_bf16_and_tf32(double compute_capability) {
  return compute_capability >= 8.0 - 1e-9;
}

// FP8 (E4M3, E5M2) tensor cores and cuBLASLt's FP8 matmuls: compute capability 8.9 (Ada) on,
// Hopper and Blackwell included.
constexpr bool has_fp8_tensor_cores(double compute_capability) {
  return compute_capability >= 8.9 - 1e-9;
}

// The CUDA backend runs on compute capability 7.5 (Turing) and newer.
inline constexpr int kMinCudaMajor = 7;
inline constexpr int kMinCudaMinor = 5;

enum class Support : std::uint8_t {
  native,       // the policy's arithmetic runs in hardware
  emulated,     // it runs, with float32 arithmetic and 16-bit rounding (or slow kernels)
  unsupported,  // the device cannot run it; a run is refused with the reason
};
std::string_view to_string(Support support);

struct PolicySupport {
  Support level = Support::native;
  // Why it is emulated or unsupported, or a caution about a native policy (a GPU without tensor
  // cores); empty when there is nothing to say. One sentence, naming the device.
  std::string reason;
};
PolicySupport policy_support(const DeviceInfo& device, Policy policy);

// The mixed policy a "float32 vs mixed" comparison runs on this device: bfloat16 where it is
// native, else float16 where that is, else bfloat16 emulated (no loss scaling needed), else
// float16 emulated.
Policy comparison_mixed_policy(const DeviceInfo& device);

}  // namespace mixlab
