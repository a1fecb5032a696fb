// Device profiles for the doctor: what a device can do, as the roofline model needs it. GPU
// profiles are published figures (resources/doctor/gpu-profiles.json, every figure with the
// document it comes from); the local CPU's and a present GPU's are measured (local_profile.h),
// the GPU's over its published profile for what the calibration does not measure.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/device_info.h"
#include "engine/core/error.h"
#include "engine/core/precision.h"

namespace mixlab::doctor {

// A profile file that cannot be used (bad JSON, a missing or wrong field, an unknown document),
// or a profile name that names none; the message names the file, the profile and the field.
class ProfileError : public Error {
 public:
  using Error::Error;
};

// Dense peak arithmetic rates in FLOP/s; 0 where the device has no such path.
struct PeakRates {
  double float32 = 0.0;        // CUDA cores / the CPU's float32 matmul
  double tf32 = 0.0;           // tensor cores, float32 in and out
  double float16_acc32 = 0.0;  // float16 in, float32 accumulation (what Keras and MixLab run)
  double float16_acc16 = 0.0;  // float16 accumulation
  double bfloat16 = 0.0;       // bfloat16 in, float32 accumulation
  double fp8 = 0.0;
};

struct DeviceProfile {
  std::string name;             // "RTX 2060", or the CPU's model name
  std::string kind = "cuda";    // "cuda" or "cpu"
  bool measured = false;        // calibrated on this machine, not published figures
  std::vector<std::string> aliases;  // lower case: "rtx-2060", "geforce rtx 2060"
  // --- GPU ---
  std::string compute_capability;  // "7.5"
  bool tensor_cores = false;
  int sm_count = 0;
  double boost_clock_mhz = 0.0;
  std::int64_t l2_bytes = 0;
  // Host-to-device copies (PCIe); 0 for the CPU, which copies nothing.
  double host_link_bytes_per_s = 0.0;
  // --- CPU ---
  int threads = 0;
  CpuIsa isa = CpuIsa::baseline;
  // --- both ---
  std::int64_t memory_bytes = 0;
  double bandwidth_bytes_per_s = 0.0;  // device memory (the CPU: a streaming copy's)
  PeakRates peak;
  // Convolutions' rate as a fraction of the matmul peak (the CPU's measured; 1 on a GPU, where
  // tile and wave quantization model them), at 64 channels and more; at 16 and fewer the narrow
  // one, log-interpolated between; each for float32 and for bfloat16 (against its own peak). 0:
  // not measured, the wide (float32's) figure stands for it.
  double convolution_efficiency = 1.0;
  double narrow_convolution_efficiency = 0.0;
  double bf16_convolution_efficiency = 0.0;
  double bf16_narrow_convolution_efficiency = 0.0;
  // A bfloat16 convolution's weight gradient as a fraction of its forward's rate (the CPU's
  // measured on a narrow layer; 0: not measured, as fast as the forward).
  double bf16_weights_gradient_efficiency = 0.0;
  // A GEMM whose smallest dimension is 32 (a small batch) runs at this fraction of the peak, one
  // of 512 or more at the peak, log-interpolated between (the CPU's measured; 1 on a GPU).
  double small_gemm_efficiency = 1.0;
  // Pooling's bandwidth as a fraction of the streaming one (the CPU's measured; 1 on a GPU).
  double pooling_efficiency = 1.0;
  // The same for the other memory-bound layers, on the kernels that run them (the CPU's
  // measured: MixLab's elementwise loops, oneDNN's batch normalization), on float32 tensors and
  // on bfloat16 ones. 0: not measured, the streaming rate stands (a GPU, a published profile).
  double elementwise_efficiency = 0.0;
  double bf16_elementwise_efficiency = 0.0;
  double normalization_efficiency = 0.0;
  double bf16_normalization_efficiency = 0.0;
  // What one kernel launch or library call costs beyond its work (seconds).
  double launch_overhead_s = 0.0;
  // --- GPU libraries ---
  // The cuBLAS and cuDNN versions predicted with (library_rules.h): the present GPU's, MixLab's
  // own for a published profile, or `--libraries`; sources["libraries"] says which. Empty:
  // MixLab's own.
  LibraryVersions libraries;
  // A 16-bit GEMM with a dimension off a multiple of 8, on tensor cores, as a fraction of the
  // aligned rate (the GPU calibration's measured; 0: not measured, kMisalignedEfficiencyEstimate).
  double misaligned_matmul_efficiency = 0.0;
  // Each figure's document, by field name ("peak_tflops": "NVIDIA A100 datasheet ...").
  std::map<std::string, std::string> sources;

  bool is_gpu() const { return kind != "cpu"; }
  // The DeviceInfo the engine's one rule (policy_support) judges this device by.
  DeviceInfo device_info() const;
};

// The peak a matmul of `compute` runs at (FLOP/s): tf32 for float32 when asked and present;
// 0 when the device has no native path (the caller emulates).
double matmul_peak(const DeviceProfile& profile, DType compute, bool tf32);

// Parses a profile file (format "mixlab-gpu-profiles-1"); `origin` names it in errors.
std::vector<DeviceProfile> parse_gpu_profiles(std::string_view json_text,
                                              std::string_view origin);
// Reads and parses a profile file; errors name it.
std::vector<DeviceProfile> load_gpu_profiles(const std::filesystem::path& path);
// The profiles shipped with MixLab (resources/doctor/gpu-profiles.json, embedded at build time).
std::span<const DeviceProfile> builtin_gpu_profiles();

// A profile by name or alias, case-insensitive, spaces, dashes and underscores alike
// ("RTX 2060", "rtx-2060", "rtx2060"), else by the start of one when a single profile has a name
// that starts so ("h100" is "H100 SXM"). Throws ProfileError naming the candidates when several
// do ("A100": "A100 40GB" or "A100 80GB"), and listing every name when none does.
const DeviceProfile& find_profile(std::span<const DeviceProfile> profiles, std::string_view name);

// The profile of a GPU that is present: its published profile when the name matches one (the
// properties then replace the memory size), else one estimated from its properties with the
// estimate said in `sources`.
DeviceProfile gpu_profile_from_device(const DeviceInfo& gpu, int sm_count, double clock_mhz,
                                      double bandwidth_bytes_per_s);

// The host-to-device link a GPU generation is usually attached with, in bytes/s achieved:
// PCIe 3 x16 before Ampere, 4 for Ampere and Ada, 5 for Hopper.
double typical_host_link_bytes_per_s(double compute_capability);

}  // namespace mixlab::doctor
