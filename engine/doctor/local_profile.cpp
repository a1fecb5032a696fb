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

CpuCalibration from_json(const json& j) {
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

}  // namespace

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
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::filesystem::path base = xdg != nullptr && *xdg != '\0' ? std::filesystem::path(xdg)
                               : home != nullptr              ? std::filesystem::path(home) / ".cache"
                                                              : std::filesystem::temp_directory_path();
  return base / "mixlab" / "cpu-profiles.json";
}

DeviceProfile local_cpu_profile(int threads, const std::filesystem::path& cache_file,
                                bool recalibrate, bool* measured_now) {
  const int t = threads > 0 ? threads : omp_get_num_procs();
  const std::string cpu = cpu_model_name();
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
  // The oneDNN build and ISA this process runs, as a calibration names them.
  const std::string isa = cpu::onednn_isa_name();
  if (!recalibrate) {
    for (const json& e : entries) {
      try {
        const CpuCalibration c = from_json(e);
        if (c.cpu == cpu && c.threads == t && c.onednn.ends_with(" " + isa)) {
          if (measured_now != nullptr) *measured_now = false;
          return cpu_profile(c);
        }
      } catch (const std::exception&) {
        // an entry of another format: ignored
      }
    }
  }
  const CpuCalibration c = calibrate_cpu(t);
  if (measured_now != nullptr) *measured_now = true;
  json kept = json::array();
  for (const json& e : entries) {
    try {
      const CpuCalibration old = from_json(e);
      if (old.cpu == c.cpu && old.threads == c.threads && old.onednn == c.onednn) continue;
      kept.push_back(e);
    } catch (const std::exception&) {
    }
  }
  kept.push_back(to_json(c));
  std::error_code ec;
  std::filesystem::create_directories(cache_file.parent_path(), ec);
  std::ofstream out(cache_file);
  if (out) out << kept.dump(2) << "\n";
  return cpu_profile(c);
}

}  // namespace mixlab::doctor
