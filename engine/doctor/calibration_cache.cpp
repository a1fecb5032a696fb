#include "engine/doctor/calibration_cache.h"

#include <unistd.h>

#include <fstream>
#include <limits>
#include <stdexcept>
#include <utility>

#include "engine/backend/cpu/cpu_isa.h"
#include "engine/core/text_file.h"
#include "engine/doctor/figure_bounds.h"

namespace mixlab::doctor {

namespace {

using nlohmann::json;

// A cache holds an entry per CPU, thread count and library build: a few KiB.
constexpr TextFileKind kCacheFileKind{"calibration cache", std::uintmax_t{4} << 20, ""};

// One figure's check: (field, what is wrong or "").
struct FigureCheck {
  const char* field;
  std::string problem;
};

std::string first_problem(std::initializer_list<FigureCheck> checks) {
  for (const FigureCheck& c : checks) {
    if (!c.problem.empty()) return "field '" + std::string(c.field) + "' " + c.problem;
  }
  return {};
}

// A whole, non-negative number field (a float such as 1e300 would not convert safely).
std::int64_t whole_field(const json& j, const char* field) {
  const json& v = j.at(field);
  if (v.is_number_unsigned() &&
      v.get<std::uint64_t>() <= std::uint64_t{std::numeric_limits<std::int64_t>::max()}) {
    return v.get<std::int64_t>();
  }
  if (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() >= 0) {
    return v.get<std::int64_t>();
  }
  throw std::invalid_argument(std::string(field) + ": not a whole number >= 0");
}

int int_field(const json& j, const char* field) {
  const std::int64_t value = whole_field(j, field);
  if (value > std::numeric_limits<int>::max()) throw std::out_of_range(field);
  return static_cast<int>(value);
}

template <class Calibration>
Calibration from_json(const json& j);

template <>
CpuCalibration from_json<CpuCalibration>(const json& j) {
  CpuCalibration c;
  c.cpu = j.at("cpu").get<std::string>();
  c.threads = int_field(j, "threads");
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
  c.f32_narrow_conv_flops = j.at("f32_narrow_conv_flops").get<double>();
  c.bf16_conv_flops = j.at("bf16_conv_flops").get<double>();
  c.bf16_narrow_conv_flops = j.at("bf16_narrow_conv_flops").get<double>();
  c.bf16_narrow_conv_weights_flops = j.at("bf16_narrow_conv_weights_flops").get<double>();
  c.f32_elementwise_bytes_per_s = j.at("f32_elementwise_bytes_per_s").get<double>();
  c.bf16_elementwise_bytes_per_s = j.at("bf16_elementwise_bytes_per_s").get<double>();
  c.f32_bnorm_bytes_per_s = j.at("f32_bnorm_bytes_per_s").get<double>();
  c.bf16_bnorm_bytes_per_s = j.at("bf16_bnorm_bytes_per_s").get<double>();
  c.stream_bytes_per_s = j.at("stream_bytes_per_s").get<double>();
  c.pooling_bytes_per_s = j.at("pooling_bytes_per_s").get<double>();
  c.call_overhead_s = j.at("call_overhead_s").get<double>();
  return c;
}

// 0 where the calibration measures no such path (bf16 without oneDNN's kernels), as
// calibrate_cpu writes it.
std::string figures_problem(const CpuCalibration& c) {
  return first_problem({
      {"f32_matmul_flops", figure_problem(c.f32_matmul_flops, kPeakRateBounds)},
      {"bf16_matmul_flops", figure_problem(c.bf16_matmul_flops, kPeakRateBounds, true)},
      {"f32_small_matmul_flops", figure_problem(c.f32_small_matmul_flops, kPeakRateBounds, true)},
      {"f32_conv_flops", figure_problem(c.f32_conv_flops, kPeakRateBounds, true)},
      {"f32_narrow_conv_flops", figure_problem(c.f32_narrow_conv_flops, kPeakRateBounds, true)},
      {"bf16_conv_flops", figure_problem(c.bf16_conv_flops, kPeakRateBounds, true)},
      {"bf16_narrow_conv_flops", figure_problem(c.bf16_narrow_conv_flops, kPeakRateBounds, true)},
      {"bf16_narrow_conv_weights_flops",
       figure_problem(c.bf16_narrow_conv_weights_flops, kPeakRateBounds, true)},
      {"f32_elementwise_bytes_per_s",
       figure_problem(c.f32_elementwise_bytes_per_s, kBandwidthBounds, true)},
      {"bf16_elementwise_bytes_per_s",
       figure_problem(c.bf16_elementwise_bytes_per_s, kBandwidthBounds, true)},
      {"f32_bnorm_bytes_per_s", figure_problem(c.f32_bnorm_bytes_per_s, kBandwidthBounds, true)},
      {"bf16_bnorm_bytes_per_s", figure_problem(c.bf16_bnorm_bytes_per_s, kBandwidthBounds, true)},
      {"stream_bytes_per_s", figure_problem(c.stream_bytes_per_s, kBandwidthBounds)},
      {"pooling_bytes_per_s", figure_problem(c.pooling_bytes_per_s, kBandwidthBounds, true)},
      {"call_overhead_s", figure_problem(c.call_overhead_s, kOverheadBounds)},
  });
}

template <>
GpuCalibration from_json<GpuCalibration>(const json& j) {
  GpuCalibration c;
  c.gpu = j.at("gpu").get<std::string>();
  c.compute_capability = j.at("compute_capability").get<std::string>();
  c.libraries = j.at("libraries").get<std::string>();
  c.sm_count = int_field(j, "sm_count");
  c.clock_mhz = j.at("clock_mhz").get<double>();
  c.memory_bytes = whole_field(j, "memory_bytes");
  c.l2_bytes = whole_field(j, "l2_bytes");
  c.memory_bus_bytes_per_s = j.at("memory_bus_bytes_per_s").get<double>();
  c.f32_matmul_flops = j.at("f32_matmul_flops").get<double>();
  c.tf32_matmul_flops = j.at("tf32_matmul_flops").get<double>();
  c.f16_matmul_flops = j.at("f16_matmul_flops").get<double>();
  c.bf16_matmul_flops = j.at("bf16_matmul_flops").get<double>();
  // Absent from caches written before it was measured: then not measured.
  c.misaligned_matmul_efficiency = j.contains("misaligned_matmul_efficiency")
                                       ? j.at("misaligned_matmul_efficiency").get<double>()
                                       : 0.0;
  c.copy_bytes_per_s = j.at("copy_bytes_per_s").get<double>();
  c.host_copy_bytes_per_s = j.at("host_copy_bytes_per_s").get<double>();
  c.call_overhead_s = j.at("call_overhead_s").get<double>();
  return c;
}

// 0 where calibrate_gpu measures nothing (TF32 and bfloat16 before Ampere) or the driver
// reports nothing (the memory bus, the L2 size).
std::string figures_problem(const GpuCalibration& c) {
  return first_problem({
      {"sm_count", figure_problem(c.sm_count, kSmCountBounds)},
      {"clock_mhz", figure_problem(c.clock_mhz, kClockBounds)},
      {"memory_bytes", figure_problem(static_cast<double>(c.memory_bytes), kMemoryBounds)},
      {"l2_bytes", figure_problem(static_cast<double>(c.l2_bytes), kL2Bounds, true)},
      {"memory_bus_bytes_per_s", figure_problem(c.memory_bus_bytes_per_s, kBandwidthBounds, true)},
      {"f32_matmul_flops", figure_problem(c.f32_matmul_flops, kPeakRateBounds)},
      {"tf32_matmul_flops", figure_problem(c.tf32_matmul_flops, kPeakRateBounds, true)},
      {"f16_matmul_flops", figure_problem(c.f16_matmul_flops, kPeakRateBounds)},
      {"bf16_matmul_flops", figure_problem(c.bf16_matmul_flops, kPeakRateBounds, true)},
      {"misaligned_matmul_efficiency",
       figure_problem(c.misaligned_matmul_efficiency, kFractionBounds, true)},
      {"copy_bytes_per_s", figure_problem(c.copy_bytes_per_s, kBandwidthBounds)},
      {"host_copy_bytes_per_s", figure_problem(c.host_copy_bytes_per_s, kBandwidthBounds)},
      {"call_overhead_s", figure_problem(c.call_overhead_s, kOverheadBounds)},
  });
}

}  // namespace

json to_json(const CpuCalibration& c) {
  return {{"cpu", c.cpu},
          {"threads", c.threads},
          {"isa", std::string(to_string(c.isa))},
          {"onednn", c.onednn},
          {"f32_matmul_flops", c.f32_matmul_flops},
          {"bf16_matmul_flops", c.bf16_matmul_flops},
          {"f32_small_matmul_flops", c.f32_small_matmul_flops},
          {"f32_conv_flops", c.f32_conv_flops},
          {"f32_narrow_conv_flops", c.f32_narrow_conv_flops},
          {"bf16_conv_flops", c.bf16_conv_flops},
          {"bf16_narrow_conv_flops", c.bf16_narrow_conv_flops},
          {"bf16_narrow_conv_weights_flops", c.bf16_narrow_conv_weights_flops},
          {"f32_elementwise_bytes_per_s", c.f32_elementwise_bytes_per_s},
          {"bf16_elementwise_bytes_per_s", c.bf16_elementwise_bytes_per_s},
          {"f32_bnorm_bytes_per_s", c.f32_bnorm_bytes_per_s},
          {"bf16_bnorm_bytes_per_s", c.bf16_bnorm_bytes_per_s},
          {"stream_bytes_per_s", c.stream_bytes_per_s},
          {"pooling_bytes_per_s", c.pooling_bytes_per_s},
          {"call_overhead_s", c.call_overhead_s}};
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
          {"misaligned_matmul_efficiency", c.misaligned_matmul_efficiency},
          {"copy_bytes_per_s", c.copy_bytes_per_s},
          {"host_copy_bytes_per_s", c.host_copy_bytes_per_s},
          {"call_overhead_s", c.call_overhead_s}};
}

template <class Calibration>
std::vector<CacheEntry<Calibration>> parse_calibration_cache(std::string_view text,
                                                             std::string_view origin) {
  json list;
  try {
    list = json::parse(text);
  } catch (const json::exception& e) {
    throw ProfileError(std::string(origin) + ": not valid JSON: " + e.what());
  }
  if (!list.is_array()) throw ProfileError(std::string(origin) + ": not a JSON list");
  std::vector<CacheEntry<Calibration>> entries;
  for (const json& e : list) {
    CacheEntry<Calibration> entry;
    try {
      entry.calibration = from_json<Calibration>(e);
    } catch (const std::exception&) {
      continue;  // another format's entry (json::exception), or a count out of range
    }
    entry.problem = figures_problem(entry.calibration);
    entries.push_back(std::move(entry));
  }
  return entries;
}

template <class Calibration>
CacheFile<Calibration> read_calibration_cache(const std::filesystem::path& path) {
  CacheFile<Calibration> file;
  const TextFileRead read = try_read_text_file(path, kCacheFileKind);
  if (read.missing) return file;
  if (!read.ok()) {
    file.problem = read.problem;
    std::error_code ec;
    file.writable = std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec));
    return file;
  }
  try {
    file.entries = parse_calibration_cache<Calibration>(read.text, path.string());
  } catch (const ProfileError& e) {
    file.problem = e.what();  // a broken cache is measured over, and rewritten
  }
  return file;
}

bool write_calibration_cache(const std::filesystem::path& path, const std::vector<json>& entries) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  std::filesystem::path temporary = path;
  temporary += ".tmp-" + std::to_string(::getpid());
  std::filesystem::remove(temporary, ec);  // a leftover of this pid's, whatever it is
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << json(entries).dump(2) << "\n";
    out.close();
    if (!out) {
      std::filesystem::remove(temporary, ec);
      return false;
    }
  }
  std::filesystem::rename(temporary, path, ec);
  if (!ec) return true;
  std::filesystem::remove(temporary, ec);
  return false;
}

template std::vector<CacheEntry<CpuCalibration>> parse_calibration_cache(std::string_view,
                                                                         std::string_view);
template std::vector<CacheEntry<GpuCalibration>> parse_calibration_cache(std::string_view,
                                                                         std::string_view);
template CacheFile<CpuCalibration> read_calibration_cache(const std::filesystem::path&);
template CacheFile<GpuCalibration> read_calibration_cache(const std::filesystem::path&);

}  // namespace mixlab::doctor
