#include "engine/doctor/local_profile.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/backend/cpu/cpu_isa.h"

namespace mixlab::doctor {

namespace {

using nlohmann::json;

json to_json(const CpuCalibration& c) {
  return {{"cpu", c.cpu},
          {"threads", c.threads},
          {"isa", std::string(to_string(c.isa))},
          {"onednn", c.onednn},
          {"f32_matmul_flops", c.f32_matmul_flops},
          {"bf16_matmul_flops", c.bf16_matmul_flops},
          {"f32_small_matmul_flops", c.f32_small_matmul_flops},
          {"f32_conv_flops", c.f32_conv_flops},
          {"stream_bytes_per_s", c.stream_bytes_per_s},
          {"pooling_bytes_per_s", c.pooling_bytes_per_s},
          {"call_overhead_s", c.call_overhead_s}};
}

template <class Calibration>
Calibration from_json(const json& j);

template <>
CpuCalibration from_json<CpuCalibration>(const json& j) {
  CpuCalibration c;
  c.cpu = j.at("cpu").get<std::string>();
  c.threads = j.at("threads").get<int>();
  const std::string isa = j.at("isa").get<std::string>();
  for (const CpuIsa each : {CpuIsa::baseline, CpuIsa::avx2, CpuIsa::avx512_core,
                            CpuIsa::avx512_core_bf16, CpuIsa::avx512_core_amx}) {
    if (to_string(each) == isa) c.isa = each;
  }
  c.onednn = j.at("onednn").get<std::string>();
  c.f32_matmul_flops = j.at("f32_matmul_flops").get<double>();
  c.bf16_matmul_flops = j.at("bf16_matmul_flops").get<double>();
  c.f32_small_matmul_flops = j.at("f32_small_matmul_flops").get<double>();
  c.f32_conv_flops = j.at("f32_conv_flops").get<double>();
  c.stream_bytes_per_s = j.at("stream_bytes_per_s").get<double>();
  c.pooling_bytes_per_s = j.at("pooling_bytes_per_s").get<double>();
  c.call_overhead_s = j.at("call_overhead_s").get<double>();
  if (!(c.f32_matmul_flops > 0) || !(c.stream_bytes_per_s > 0)) {
    throw std::runtime_error("an entry without its roofs");
  }
  return c;
}

json to_json(const GpuCalibration& c) {
  return {{"gpu", c.gpu},
          {"compute_capability", c.compute_capability},
          {"libraries", c.libraries},
          {"sm_count", c.sm_count},
          {"clock_mhz", c.clock_mhz},
          {"memory_bytes", c.memory_bytes},
          {"l2_bytes", c.l2_bytes},
          {"memory_bus_bytes_per_s", c.memory_bus_bytes_per_s},
          {"f32_matmul_flops", c.f32_matmul_flops},
          {"tf32_matmul_flops", c.tf32_matmul_flops},
          {"f16_matmul_flops", c.f16_matmul_flops},
          {"bf16_matmul_flops", c.bf16_matmul_flops},
          {"copy_bytes_per_s", c.copy_bytes_per_s},
          {"host_copy_bytes_per_s", c.host_copy_bytes_per_s},
          {"call_overhead_s", c.call_overhead_s}};
}

template <>
GpuCalibration from_json<GpuCalibration>(const json& j) {
  GpuCalibration c;
  c.gpu = j.at("gpu").get<std::string>();
  c.compute_capability = j.at("compute_capability").get<std::string>();
  c.libraries = j.at("libraries").get<std::string>();
  c.sm_count = j.at("sm_count").get<int>();
  c.clock_mhz = j.at("clock_mhz").get<double>();
  c.memory_bytes = j.at("memory_bytes").get<std::int64_t>();
  c.l2_bytes = j.at("l2_bytes").get<std::int64_t>();
  c.memory_bus_bytes_per_s = j.at("memory_bus_bytes_per_s").get<double>();
  c.f32_matmul_flops = j.at("f32_matmul_flops").get<double>();
  c.tf32_matmul_flops = j.at("tf32_matmul_flops").get<double>();
  c.f16_matmul_flops = j.at("f16_matmul_flops").get<double>();
  c.bf16_matmul_flops = j.at("bf16_matmul_flops").get<double>();
  c.copy_bytes_per_s = j.at("copy_bytes_per_s").get<double>();
  c.host_copy_bytes_per_s = j.at("host_copy_bytes_per_s").get<double>();
  c.call_overhead_s = j.at("call_overhead_s").get<double>();
  if (!(c.f32_matmul_flops > 0) || !(c.f16_matmul_flops > 0) || !(c.copy_bytes_per_s > 0)) {
    throw std::runtime_error("an entry without its roofs");
  }
  return c;
}

// A cache file's calibrations: the first entry `wanted` accepts, or one measured now and kept
// in place of the entries `same` finds it replaces. A file that cannot be read or parsed is
// measured over; one that cannot be written is left (the calibration is still returned).
template <class Calibration, class Wanted, class Measure, class Same>
Calibration cached_calibration(const std::filesystem::path& cache_file, bool recalibrate,
                               bool* measured_now, Wanted wanted, Measure measure, Same same) {
  json entries = json::array();
  {
    std::ifstream in(cache_file);
    if (in) {
      try {
        entries = json::parse(in);
        if (!entries.is_array()) entries = json::array();
      } catch (const json::exception&) {
        entries = json::array();  // a broken cache is measured over
      }
    }
  }
  if (!recalibrate) {
    for (const json& e : entries) {
      try {
        const Calibration c = from_json<Calibration>(e);
        if (wanted(c)) {
          if (measured_now != nullptr) *measured_now = false;
          return c;
        }
      } catch (const std::exception&) {
        // an entry of another format: ignored
      }
    }
  }
  const Calibration c = measure();
  if (measured_now != nullptr) *measured_now = true;
  json kept = json::array();
  for (const json& e : entries) {
    try {
      if (same(from_json<Calibration>(e), c)) continue;
    } catch (const std::exception&) {
      continue;  // an entry of another format: dropped
    }
    kept.push_back(e);
  }
  kept.push_back(to_json(c));
  std::error_code ec;
  std::filesystem::create_directories(cache_file.parent_path(), ec);
  std::ofstream out(cache_file);
  if (out) out << kept.dump(2) << "\n";
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
  p.small_gemm_efficiency =
      c.f32_small_matmul_flops > 0 ? std::min(1.0, c.f32_small_matmul_flops / c.f32_matmul_flops)
                                   : 1.0;
  p.pooling_efficiency =
      c.pooling_bytes_per_s > 0 ? std::min(1.0, c.pooling_bytes_per_s / c.stream_bytes_per_s)
                                : 1.0;
  p.launch_overhead_s = c.call_overhead_s;
  const std::string how = "measured on this machine at " + std::to_string(c.threads) +
                          " threads through oneDNN " + c.onednn;
  for (const char* field : {"peak_tflops", "memory_bandwidth_gb_s", "launch_overhead",
                            "convolution_efficiency", "small_gemm_efficiency",
                            "pooling_efficiency"}) {
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
  return cpu_profile(cached_calibration<CpuCalibration>(
      cache_file, recalibrate, measured_now,
      [&](const CpuCalibration& c) {
        return c.cpu == cpu && c.threads == t && c.onednn.ends_with(" " + isa);
      },
      [&] { return calibrate_cpu(t); },
      [](const CpuCalibration& a, const CpuCalibration& b) {
        return a.cpu == b.cpu && a.threads == b.threads && a.onednn == b.onednn;
      }));
}

DeviceProfile local_gpu_profile(int gpu, const DeviceInfo& info,
                                const std::filesystem::path& cache_file, bool recalibrate,
                                bool* measured_now, std::string* not_measured) {
  const std::string libraries = info.library_versions();
  const auto same = [](const GpuCalibration& a, const GpuCalibration& b) {
    return a.gpu == b.gpu && a.memory_bytes == b.memory_bytes && a.libraries == b.libraries;
  };
  try {
    return gpu_profile(cached_calibration<GpuCalibration>(
        cache_file, recalibrate, measured_now,
        [&](const GpuCalibration& c) {
          return c.gpu == info.name && c.memory_bytes == info.memory_bytes &&
                 c.libraries == libraries;
        },
        [&] { return calibrate_gpu(gpu); }, same));
  } catch (const BackendError& e) {
    if (measured_now != nullptr) *measured_now = false;
    DeviceProfile published = gpu_profile_from_device(info, 0, 0.0, 0.0);
    if (!(published.peak.float32 > 0)) {
      throw ProfileError("the roofs of " + info.name + " could not be measured (" + e.what() +
                         ") and it has no published profile: predict with a similar GPU's");
    }
    if (not_measured != nullptr) *not_measured = e.what();
    return published;
  }
}

}  // namespace mixlab::doctor
