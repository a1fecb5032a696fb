#include "engine/doctor/local_profile.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "engine/backend/cpu/cpu_isa.h"
#include "engine/doctor/calibration_cache.h"
#include "engine/doctor/library_rules.h"

namespace mixlab::doctor {

namespace {

// The present GPU's cuBLAS and cuDNN, what its predictions hold for (library_rules.h).
void with_libraries(DeviceProfile& profile, const DeviceInfo& info) {
  if (info.libraries.cublas.empty() && info.libraries.cudnn.empty()) return;
  profile.libraries = info.libraries;
  profile.sources["libraries"] =
      "this machine's, as the CUDA backend loaded them: " + describe_gpu_libraries(info.libraries);
}

// A cache file's calibrations: the first entry `wanted` accepts, or one measured now and kept
// in place of the entries `same` finds it replaces. A cache that cannot be used (not a regular
// file, too large, not JSON; the wanted entry's figures out of bounds) is measured over, and
// `note` says why; one that cannot be written is left (the calibration is still returned).
template <class Calibration, class Wanted, class Measure, class Same>
Calibration cached_calibration(const std::filesystem::path& cache_file, bool recalibrate,
                               bool* measured_now, std::string& note, Wanted wanted,
                               Measure measure, Same same) {
  const CacheFile<Calibration> cache = read_calibration_cache<Calibration>(cache_file);
  if (!cache.problem.empty()) note = cache.problem + "; ignored, the roofs measured again";
  if (!recalibrate) {
    for (const CacheEntry<Calibration>& e : cache.entries) {
      if (!wanted(e.calibration)) continue;
      if (e.problem.empty()) {
        if (measured_now != nullptr) *measured_now = false;
        return e.calibration;
      }
      note = cache_file.string() + ": this device's entry is not used (" + e.problem +
             "); the roofs measured again";
      break;
    }
  }
  const Calibration c = measure();
  if (measured_now != nullptr) *measured_now = true;
  std::vector<nlohmann::json> kept;
  for (const CacheEntry<Calibration>& e : cache.entries) {
    if (e.problem.empty() && !same(e.calibration, c)) kept.push_back(to_json(e.calibration));
  }
  kept.push_back(to_json(c));
  if (cache.writable) {
    (void)write_calibration_cache(cache_file, kept);  // not kept: measured again next time
  } else {
    note += " (the cache is left as it is: not a regular file)";
  }
  return c;
}

std::filesystem::path cache_folder() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  namespace fs = std::filesystem;
  const fs::path base = xdg != nullptr && *xdg != '\0' ? fs::path(xdg)
                        : home != nullptr              ? fs::path(home) / ".cache"
                                                       : fs::temp_directory_path();
  return base / "mixlab";
}

}  // namespace

DeviceProfile gpu_profile(const GpuCalibration& c) {
  const int major = std::atoi(c.compute_capability.c_str());
  const auto dot = c.compute_capability.find('.');
  const int minor =
      dot == std::string::npos ? 0 : std::atoi(c.compute_capability.c_str() + dot + 1);
  // The published profile (or the estimate) for what is not measured: FP8, float16 with float16
  // accumulation, and the sources of the properties.
  const DeviceProfile published = gpu_profile_from_device(
      gpu_device_info(c.gpu, major, minor, c.memory_bytes), c.sm_count, c.clock_mhz,
      c.memory_bus_bytes_per_s);
  DeviceProfile p = published;
  p.measured = true;
  p.sm_count = c.sm_count;
  p.boost_clock_mhz = c.clock_mhz;
  p.l2_bytes = c.l2_bytes;
  p.memory_bytes = c.memory_bytes;
  p.bandwidth_bytes_per_s = c.copy_bytes_per_s;
  p.host_link_bytes_per_s = c.host_copy_bytes_per_s;
  p.launch_overhead_s = c.call_overhead_s;
  p.misaligned_matmul_efficiency = c.misaligned_matmul_efficiency;
  p.peak.float32 = c.f32_matmul_flops;
  p.peak.tf32 = c.tf32_matmul_flops;
  p.peak.float16_acc32 = c.f16_matmul_flops;
  p.peak.bfloat16 = c.bf16_matmul_flops;
  // GeForce cards run float16 accumulation at twice float32 accumulation's rate: keep the
  // published ratio over the measured rate.
  if (published.peak.float16_acc16 > 0 && published.peak.float16_acc32 > 0) {
    p.peak.float16_acc16 =
        c.f16_matmul_flops * published.peak.float16_acc16 / published.peak.float16_acc32;
  }
  const std::string on = "measured on this GPU through " + c.libraries + ": ";
  p.sources["peak_tflops"] =
      on + "4096^3 cuBLASLt matmuls per type (FP8 and float16 accumulation: " +
      (published.sources.contains("peak_tflops") ? published.sources.at("peak_tflops") : "") + ")";
  p.sources["memory_bandwidth_gb_s"] = on + "a 256 MiB device-to-device copy";
  p.sources["launch_overhead"] = on + "back-to-back 64^3 cuBLASLt matmuls";
  if (c.misaligned_matmul_efficiency > 0) {
    p.sources["misaligned_matmul_efficiency"] =
        on + "16-bit cuBLASLt matmuls with K = 4095 against 4096 (M = N = 4096)";
  }
  p.sources["host_link"] = on + "a 64 MiB copy from pinned host memory";
  for (const char* field : {"compute_capability", "sm_count", "boost_clock_mhz", "memory_bytes",
                            "l2_bytes"}) {
    p.sources[field] = "cudaGetDeviceProperties and cudaDeviceGetAttribute on this GPU";
  }
  return p;
}

std::filesystem::path default_gpu_profile_cache() {
  return cache_folder() / "gpu-profiles.json";
}

DeviceProfile cpu_profile(const CpuCalibration& c) {
  DeviceProfile p;
  p.name = c.cpu;
  p.kind = "cpu";
  p.measured = true;
  p.threads = c.threads;
  p.isa = c.isa;
  p.bandwidth_bytes_per_s = c.stream_bytes_per_s;
  p.peak.float32 = c.f32_matmul_flops;
  p.peak.bfloat16 = c.bf16_matmul_flops;  // 0: emulated in float32
  p.convolution_efficiency =
      c.f32_conv_flops > 0 ? std::min(1.0, c.f32_conv_flops / c.f32_matmul_flops) : 1.0;
  const auto fraction = [](double part, double whole) {  // 0: not measured
    return part > 0 && whole > 0 ? std::min(1.0, part / whole) : 0.0;
  };
  p.narrow_convolution_efficiency = fraction(c.f32_narrow_conv_flops, c.f32_matmul_flops);
  p.bf16_convolution_efficiency = fraction(c.bf16_conv_flops, c.bf16_matmul_flops);
  p.bf16_narrow_convolution_efficiency = fraction(c.bf16_narrow_conv_flops, c.bf16_matmul_flops);
  p.bf16_weights_gradient_efficiency =
      fraction(c.bf16_narrow_conv_weights_flops, c.bf16_narrow_conv_flops);
  // Above the streaming rate (a tensor the caches hold) is as good as measured, too.
  const auto rate = [&](double bytes_per_s) {
    return bytes_per_s > 0 && c.stream_bytes_per_s > 0 ? bytes_per_s / c.stream_bytes_per_s : 0.0;
  };
  p.elementwise_efficiency = rate(c.f32_elementwise_bytes_per_s);
  p.bf16_elementwise_efficiency = rate(c.bf16_elementwise_bytes_per_s);
  p.normalization_efficiency = rate(c.f32_bnorm_bytes_per_s);
  p.bf16_normalization_efficiency = rate(c.bf16_bnorm_bytes_per_s);
  p.small_gemm_efficiency =
      c.f32_small_matmul_flops > 0 ? std::min(1.0, c.f32_small_matmul_flops / c.f32_matmul_flops)
                                   : 1.0;
  p.pooling_efficiency =
      c.pooling_bytes_per_s > 0 ? std::min(1.0, c.pooling_bytes_per_s / c.stream_bytes_per_s)
                                : 1.0;
  p.launch_overhead_s = c.call_overhead_s;
  const std::string how = "measured on this machine at " + std::to_string(c.threads) +
                          " threads through oneDNN " + c.onednn;
  for (const char* field :
       {"peak_tflops", "memory_bandwidth_gb_s", "launch_overhead", "convolution_efficiency",
        "narrow_convolution_efficiency", "bf16_convolution_efficiency",
        "bf16_narrow_convolution_efficiency", "small_gemm_efficiency", "pooling_efficiency",
        "elementwise_efficiency", "bf16_elementwise_efficiency", "normalization_efficiency",
        "bf16_normalization_efficiency", "bf16_weights_gradient_efficiency"}) {
    p.sources[field] = how;
  }
  return p;
}

std::filesystem::path default_cpu_profile_cache() {
  return cache_folder() / "cpu-profiles.json";
}

DeviceProfile local_cpu_profile(int threads, const std::filesystem::path& cache_file,
                                bool recalibrate, bool* measured_now) {
  const int t = threads > 0 ? threads : omp_get_num_procs();
  const std::string cpu = cpu_model_name();
  // The oneDNN build and ISA this process runs, as a calibration names them.
  const std::string isa = cpu::onednn_isa_name();
  std::string note;
  DeviceProfile profile = cpu_profile(cached_calibration<CpuCalibration>(
      cache_file, recalibrate, measured_now, note,
      [&](const CpuCalibration& c) {
        return c.cpu == cpu && c.threads == t && c.onednn.ends_with(" " + isa);
      },
      [&] { return calibrate_cpu(t); },
      [](const CpuCalibration& a, const CpuCalibration& b) {
        return a.cpu == b.cpu && a.threads == b.threads && a.onednn == b.onednn;
      }));
  if (!note.empty()) profile.sources[kCacheNoteSource] = note;
  return profile;
}

DeviceProfile local_gpu_profile(int gpu, const DeviceInfo& info,
                                const std::filesystem::path& cache_file, bool recalibrate,
                                bool* measured_now, std::string* not_measured) {
  const std::string libraries = info.library_versions();
  const auto same = [](const GpuCalibration& a, const GpuCalibration& b) {
    return a.gpu == b.gpu && a.memory_bytes == b.memory_bytes && a.libraries == b.libraries;
  };
  std::string note;
  try {
    DeviceProfile profile = gpu_profile(cached_calibration<GpuCalibration>(
        cache_file, recalibrate, measured_now, note,
        [&](const GpuCalibration& c) {
          return c.gpu == info.name && c.memory_bytes == info.memory_bytes &&
                 c.libraries == libraries;
        },
        [&] { return calibrate_gpu(gpu); }, same));
    if (!note.empty()) profile.sources[kCacheNoteSource] = note;
    with_libraries(profile, info);
    return profile;
  } catch (const BackendError& e) {
    if (measured_now != nullptr) *measured_now = false;
    DeviceProfile published = gpu_profile_from_device(info, 0, 0.0, 0.0);
    if (!(published.peak.float32 > 0)) {
      throw ProfileError("the roofs of " + info.name + " could not be measured (" + e.what() +
                         ") and it has no published profile: predict with a similar GPU's");
    }
    if (not_measured != nullptr) *not_measured = e.what();
    if (!note.empty()) published.sources[kCacheNoteSource] = note;
    with_libraries(published, info);
    return published;
  }
}

}  // namespace mixlab::doctor
