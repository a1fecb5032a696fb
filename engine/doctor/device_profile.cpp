#include "engine/doctor/device_profile.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/text_file.h"
#include "engine/doctor/figure_bounds.h"
#include "engine/doctor/library_rules.h"
#include "engine/spec/model_spec.h"  // kMaxJsonDepth, kMaxModelFileBytes
#include "resources/builtin_profiles.h"

namespace mixlab::doctor {

namespace {

using nlohmann::json;

// What a GPU kernel launch costs beside its work, and the PCIe link: not datasheet figures but
// the usual measured ones (NVIDIA's "Getting Started with CUDA Graphs" measures a few µs per
// launch of a short kernel on a stream); profiles can override neither, the model says so.
constexpr double kGpuLaunchOverheadS = 4e-6;

std::string fold(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c == ' ' || c == '-' || c == '_') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

class Reader {
 public:
  Reader(std::string_view origin, std::string where) : origin_(origin), where_(std::move(where)) {}
  [[noreturn]] void fail(std::string_view field, std::string_view problem) const {
    std::string text(origin_);
    if (!text.empty()) text += ": ";
    text += where_;
    if (!field.empty()) text += ": field " + quote(field);
    text += ": " + std::string(problem);
    throw ProfileError(text);
  }
  const json& get(const json& object, std::string_view field) const {
    const auto it = object.find(std::string(field));
    if (it == object.end()) fail(field, "is missing");
    return *it;
  }
  double number(const json& object, std::string_view field, bool nullable = false) const {
    const json& v = get(object, field);
    if (v.is_null() && nullable) return 0.0;
    if (!v.is_number()) fail(field, nullable ? "must be a number or null" : "must be a number");
    const double d = v.get<double>();
    if (!(d >= 0.0) || !std::isfinite(d)) fail(field, "must be a finite number >= 0");
    if (!nullable && d == 0.0) fail(field, "must be above 0");
    return d;
  }
  // A device figure: number() times `scale` (the file's unit to the profile's), within bounds.
  double figure(const json& object, std::string_view field, const FigureBounds& bounds,
                double scale = 1.0, bool nullable = false) const {
    const double value = number(object, field, nullable) * scale;
    if (const std::string problem = figure_problem(value, bounds, nullable); !problem.empty()) {
      fail(field, problem);
    }
    return value;
  }
  std::string text(const json& object, std::string_view field) const {
    const json& v = get(object, field);
    if (!v.is_string() || v.get<std::string>().empty()) fail(field, "must be a non-empty string");
    return printable_text(field, v.get<std::string>());
  }
  // Names and ids are shown in reports and terminals: printable text only.
  std::string printable_text(std::string_view field, const std::string& text) const {
    if (printable(text) != text) fail(field, quote(text) + " is not printable text");
    return text;
  }

 private:
  std::string_view origin_;
  std::string where_;
};

constexpr const char* kSourcedFields[] = {"compute_capability", "sm_count",  "boost_clock_mhz",
                                          "memory_bytes",       "memory_bandwidth_gb_s",
                                          "l2_bytes",           "peak_tflops"};

}  // namespace

DeviceInfo DeviceProfile::device_info() const {
  if (!is_gpu()) {
    DeviceInfo cpu;
    cpu.kind = "cpu";
    cpu.name = name;
    cpu.threads = threads;
    cpu.isa = isa;
    return cpu;
  }
  DeviceInfo gpu;
  gpu.kind = "cuda";
  gpu.name = name;
  gpu.compute_capability = compute_capability;
  gpu.tensor_cores = tensor_cores;
  gpu.memory_bytes = memory_bytes;
  return gpu;
}

double matmul_peak(const DeviceProfile& profile, DType compute, bool tf32) {
  switch (compute) {
    case DType::f32:
      return tf32 && profile.peak.tf32 > 0.0 ? profile.peak.tf32 : profile.peak.float32;
    case DType::f16:
      return profile.peak.float16_acc32;
    case DType::bf16:
      return profile.peak.bfloat16;
  }
  return 0.0;
}

double typical_host_link_bytes_per_s(double compute_capability) {
  if (compute_capability >= 9.0) return 50e9;  // PCIe 5.0 x16, about 80% of 64 GB/s
  if (compute_capability >= 8.0) return 25e9;  // PCIe 4.0 x16
  return 12e9;                                 // PCIe 3.0 x16
}

std::vector<DeviceProfile> parse_gpu_profiles(std::string_view json_text,
                                              std::string_view origin) {
  json doc;
  try {
    // A profile file is 4 levels deep; deeper nesting is refused while parsing (see
    // kMaxJsonDepth in engine/spec/model_spec.h).
    doc = json::parse(json_text, [&](int depth, json::parse_event_t event, json&) {
      if (depth >= kMaxJsonDepth && (event == json::parse_event_t::object_start ||
                                     event == json::parse_event_t::array_start)) {
        throw ProfileError(std::string(origin) + ": not valid JSON: nested deeper than " +
                           std::to_string(kMaxJsonDepth) + " levels");
      }
      return true;
    });
  } catch (const json::exception& e) {  // parse_error, or out_of_range: a number past double
    throw ProfileError(std::string(origin) + ": not valid JSON: " + e.what());
  }
  const Reader top(origin, "the file");
  if (!doc.is_object()) top.fail("", "must be a JSON object");
  if (top.text(doc, "format") != "mixlab-gpu-profiles-1") {
    top.fail("format", "must be \"mixlab-gpu-profiles-1\"");
  }
  const json& documents = top.get(doc, "documents");
  if (!documents.is_object()) top.fail("documents", "must be an object of id: title");
  const json& list = top.get(doc, "profiles");
  if (!list.is_array() || list.empty()) top.fail("profiles", "must be a non-empty array");

  std::vector<DeviceProfile> profiles;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json& p = list[i];
    const Reader first(origin, "profile " + std::to_string(i + 1));
    if (!p.is_object()) first.fail("", "must be an object");
    DeviceProfile out;
    out.name = first.text(p, "name");
    const Reader r(origin, "profile " + quote(out.name));
    out.kind = "cuda";
    out.compute_capability = r.text(p, "compute_capability");
    const json& tc = r.get(p, "tensor_cores");
    if (!tc.is_boolean()) r.fail("tensor_cores", "must be true or false");
    out.tensor_cores = tc.get<bool>();
    out.sm_count = static_cast<int>(r.figure(p, "sm_count", kSmCountBounds));
    out.boost_clock_mhz = r.figure(p, "boost_clock_mhz", kClockBounds);
    out.memory_bytes = static_cast<std::int64_t>(r.figure(p, "memory_bytes", kMemoryBounds));
    out.bandwidth_bytes_per_s = r.figure(p, "memory_bandwidth_gb_s", kBandwidthBounds, 1e9);
    out.l2_bytes = static_cast<std::int64_t>(r.figure(p, "l2_bytes", kL2Bounds));
    const json& peak = r.get(p, "peak_tflops");
    if (!peak.is_object()) r.fail("peak_tflops", "must be an object");
    const Reader rp(origin, "profile " + quote(out.name) + ", peak_tflops");
    out.peak.float32 = rp.figure(peak, "float32", kPeakRateBounds, 1e12);
    out.peak.tf32 = rp.figure(peak, "tf32", kPeakRateBounds, 1e12, true);
    out.peak.float16_acc32 = rp.figure(peak, "float16_acc32", kPeakRateBounds, 1e12);
    out.peak.float16_acc16 = rp.figure(peak, "float16_acc16", kPeakRateBounds, 1e12, true);
    out.peak.bfloat16 = rp.figure(peak, "bfloat16", kPeakRateBounds, 1e12, true);
    out.peak.fp8 = rp.figure(peak, "fp8", kPeakRateBounds, 1e12, true);
    if (const auto a = p.find("aliases"); a != p.end()) {
      if (!a->is_array()) r.fail("aliases", "must be an array of names");
      for (const json& alias : *a) {
        if (!alias.is_string()) r.fail("aliases", "must be an array of names");
        out.aliases.push_back(r.printable_text("aliases", alias.get<std::string>()));
      }
    }
    const json& sources = r.get(p, "sources");
    if (!sources.is_object()) r.fail("sources", "must be an object of field: document id");
    for (const char* field : kSourcedFields) {
      const std::string id =
          Reader(origin, "profile " + quote(out.name) + ", sources").text(sources, field);
      const auto title = documents.find(id);
      if (title == documents.end() || !title->is_string()) {
        r.fail(std::string("sources.") + field,
               "names document " + quote(id) + ", not in 'documents'");
      }
      out.sources[field] = title->get<std::string>();
    }
    out.launch_overhead_s = kGpuLaunchOverheadS;
    out.sources["launch_overhead"] =
        "a typical CUDA kernel launch on a stream (NVIDIA, Getting Started with CUDA Graphs), "
        "not a datasheet figure";
    char* end = nullptr;
    const double cc = std::strtod(out.compute_capability.c_str(), &end);
    if (end == nullptr || *end != '\0' || cc < 1.0) {
      r.fail("compute_capability", "must be like \"8.6\", not " + quote(out.compute_capability));
    }
    out.host_link_bytes_per_s = typical_host_link_bytes_per_s(cc);
    out.libraries = builtin_library_versions();
    out.sources["libraries"] = kBuiltinLibrariesSource;
    out.sources["misaligned_matmul_efficiency"] = kMisalignedEfficiencyEstimateSource;
    out.sources["host_link"] = "the PCIe generation such GPUs are attached with, at about 80% of "
                               "its peak; not a datasheet figure";
    for (const DeviceProfile& earlier : profiles) {
      if (fold(earlier.name) == fold(out.name)) r.fail("name", "appears twice");
    }
    profiles.push_back(std::move(out));
  }
  return profiles;
}

std::vector<DeviceProfile> load_gpu_profiles(const std::filesystem::path& path) {
  static constexpr TextFileKind kProfileFile{"profile file", kMaxModelFileBytes, ""};
  return parse_gpu_profiles(read_text_file<ProfileError>(path, kProfileFile), path.string());
}

std::span<const DeviceProfile> builtin_gpu_profiles() {
  static const std::vector<DeviceProfile> profiles =
      parse_gpu_profiles(builtin_gpu_profiles_json(), "resources/doctor/gpu-profiles.json");
  return profiles;
}

const DeviceProfile& find_profile(std::span<const DeviceProfile> profiles, std::string_view name) {
  const std::string wanted = fold(name);
  const auto names_of = [](const DeviceProfile& p) {
    std::vector<std::string> names{fold(p.name)};
    for (const std::string& alias : p.aliases) names.push_back(fold(alias));
    return names;
  };
  for (const DeviceProfile& p : profiles) {
    for (const std::string& n : names_of(p)) {
      if (n == wanted) return p;
    }
  }
  // Not a name: the profiles that one of whose names starts with it ("h100" is "H100 SXM").
  std::vector<const DeviceProfile*> starting;
  for (const DeviceProfile& p : profiles) {
    const auto names = names_of(p);
    if (!wanted.empty() && std::any_of(names.begin(), names.end(), [&](const std::string& n) {
          return n.starts_with(wanted);
        })) {
      starting.push_back(&p);
    }
  }
  if (starting.size() == 1) return *starting.front();
  const auto list = [](const auto& items, auto name_of) {
    std::string text;
    for (const auto& item : items) text += (text.empty() ? "" : ", ") + name_of(item);
    return text;
  };
  if (starting.size() > 1) {
    throw ProfileError("device profile " + quote(name) + " is ambiguous: it could be " +
                       list(starting, [](const DeviceProfile* p) { return p->name; }) +
                       "; name one of them");
  }
  throw ProfileError("unknown device profile " + quote(name) + "; profiles: " +
                     list(profiles, [](const DeviceProfile& p) { return printable(p.name); }));
}

DeviceProfile gpu_profile_from_device(const DeviceInfo& gpu, int sm_count, double clock_mhz,
                                      double bandwidth_bytes_per_s) {
  // NVIDIA names GPUs "NVIDIA GeForce RTX 2060" or "NVIDIA H200": try the name as it is, then
  // without the vendor and the product line.
  std::string short_name = gpu.name;
  for (const std::string_view prefix : {"NVIDIA ", "GeForce ", "Tesla "}) {
    if (short_name.starts_with(prefix)) short_name.erase(0, prefix.size());
  }
  for (const std::string& name : {gpu.name, short_name}) {
    try {
      DeviceProfile p = find_profile(builtin_gpu_profiles(), name);
      p.name = gpu.name;
      p.memory_bytes = gpu.memory_bytes;
      return p;
    } catch (const ProfileError&) {
      // not profiled under this name
    }
  }
  // Not a profiled GPU: float32 from the CUDA cores (128 FP32 lanes per SM from Ampere on, 64
  // before: NVIDIA's architecture whitepapers) at the clock; tensor rates from the generation's
  // dense per-SM throughput are not guessed: float16 is taken at 4x float32 with tensor cores.
  DeviceProfile p;
  p.name = gpu.name;
  p.kind = "cuda";
  p.compute_capability = gpu.compute_capability;
  p.tensor_cores = gpu.tensor_cores;
  p.sm_count = sm_count;
  p.boost_clock_mhz = clock_mhz;
  p.memory_bytes = gpu.memory_bytes;
  p.bandwidth_bytes_per_s = bandwidth_bytes_per_s;
  const double cc = compute_capability_value(gpu);
  const double lanes = cc >= 8.6 ? 128.0 : 64.0;
  p.peak.float32 = 2.0 * lanes * sm_count * clock_mhz * 1e6;
  p.peak.float16_acc32 = gpu.tensor_cores ? 4.0 * p.peak.float32 : p.peak.float32;
  p.peak.bfloat16 = has_bf16_and_tf32(cc) ? p.peak.float16_acc32 : 0.0;
  p.peak.tf32 = has_bf16_and_tf32(cc) ? p.peak.float16_acc32 / 2.0 : 0.0;
  p.launch_overhead_s = kGpuLaunchOverheadS;
  p.host_link_bytes_per_s = typical_host_link_bytes_per_s(cc);
  p.sources["peak_tflops"] = "estimated from the SM count and clock (no published profile)";
  p.libraries = builtin_library_versions();
  p.sources["libraries"] = kBuiltinLibrariesSource;
  p.sources["misaligned_matmul_efficiency"] = kMisalignedEfficiencyEstimateSource;
  return p;
}

}  // namespace mixlab::doctor
