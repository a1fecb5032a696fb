#include "engine/doctor/layer_cache.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "engine/core/text_file.h"
#include "engine/doctor/calibration_cache.h"  // write_calibration_cache
#include "engine/doctor/local_profile.h"
#include "engine/doctor/measure.h"
#include "engine/train/run_fields.h"

namespace mixlab::doctor {

namespace {

using nlohmann::json;

constexpr const char* kFormat = "mixlab-layer-times-1";
// 200 entries of a 176-layer model's two arrays are about 1 MB.
constexpr TextFileKind kLayerCacheKind{"layer-times cache", std::uintmax_t{16} << 20, ""};
constexpr double kMaxMs = 3.6e6;  // an hour: no layer of a micro-benchmark step takes longer

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

std::string now_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &tm);
  return text;
}

// Why `ms` is no time a run gives, naming `what`; empty when it is one.
std::string time_problem(double ms, const std::string& what) {
  if (std::isfinite(ms) && ms >= 0.0 && ms <= kMaxMs) return "";
  return what + " is " + std::to_string(ms) + " ms";
}

std::vector<double> times(const json& entry, const char* field, std::size_t layers,
                          std::string& problem) {
  std::vector<double> out;
  const json& list = entry.at(field);
  if (!list.is_array() || list.size() != layers) {
    if (problem.empty()) {
      problem = std::string(field) + " has " + std::to_string(list.is_array() ? list.size() : 0) +
                " times for " + std::to_string(layers) + " layers";
    }
    return out;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    out.push_back(list[i].get<double>());
    if (problem.empty()) {
      problem = time_problem(out.back(), "layer " + std::to_string(i) + "'s " + field);
    }
  }
  return out;
}

// A string field of an entry, "" when the entry is no object or the field no string.
std::string text_of(const json& entry, const char* field) {
  if (!entry.is_object()) return "";
  const auto it = entry.find(field);
  return it != entry.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::filesystem::path default_layer_cache() {
  return default_cpu_profile_cache().parent_path() / "layer-times.json";
}

std::string layer_times_key(const DiagnosisInput& input, Policy policy, const DeviceInfo& device) {
  MeasureOptions bench;
  bench.steps = kLayerBenchSteps;
  bench.warmup = kLayerBenchWarmup;
  const RunConfig config = applicable_config(measure_config(input, policy, bench), device);
  ModelSpec spec = input.spec;
  spec.name.clear();  // the same layers under another name time the same
  std::string text = std::string(kFormat) + "\n" + to_json(spec, -1) + "\n";
  for (const RunField& field : run_fields()) {
    if (field.name == "learning_rate" || field.name == "seed") continue;
    text.append(field.name).append("=").append(field_text(field, config)).append("\n");
  }
  text += device.kind + "\n" + device.name + "\n" + std::to_string(device.threads) + "\n" +
          std::string(to_string(device.isa)) + "\n" + device.compute_capability + "\n" +
          std::to_string(device.memory_bytes) + "\n" + device.library_versions() + "\n" +
          device.libraries.onednn_isa;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(text)));
  return hex;
}

json to_json(const MeasuredRun& run, const std::string& key, const std::string& model,
             const std::string& device, const std::string& timed_at) {
  json saturation = json::array();
  for (const Fp8Saturation& s : run.fp8_saturation) {
    saturation.push_back(
        {{"layer", s.layer}, {"tensor", s.tensor}, {"share", s.share}, {"step", s.step}});
  }
  return {{"format", kFormat},
          {"key", key},
          {"model", model},
          {"device", device},
          {"policy", std::string(to_string(run.policy))},
          {"timed_at", timed_at},
          {"steps", run.steps},
          {"step_ms", run.step_ms},
          {"data_wait_ms", run.data_wait_ms},
          {"forward_ms", run.forward_ms},
          {"backward_ms", run.backward_ms},
          {"optimizer_ms", run.optimizer_ms},
          {"skipped_steps", run.skipped_steps},
          {"initial_loss_scale", run.initial_loss_scale},
          {"final_loss_scale", run.final_loss_scale},
          {"scale_halvings", run.scale_halvings},
          {"first_step_skipped", run.first_step_skipped},
          {"layer_forward_ms", run.layer_forward_ms},
          {"layer_backward_ms", run.layer_backward_ms},
          {"fp8_saturation", std::move(saturation)}};
}

MeasuredRun measured_run_from_json(const json& e, std::size_t layers, std::string& problem) {
  MeasuredRun m;
  problem.clear();
  const std::string policy = e.at("policy").get<std::string>();
  for (const Policy p : kAllPolicies) {
    if (to_string(p) == policy) m.policy = p;
  }
  m.steps = e.at("steps").get<std::int64_t>();
  m.step_ms = e.at("step_ms").get<double>();
  m.data_wait_ms = e.at("data_wait_ms").get<double>();
  m.forward_ms = e.at("forward_ms").get<double>();
  m.backward_ms = e.at("backward_ms").get<double>();
  m.optimizer_ms = e.at("optimizer_ms").get<double>();
  m.skipped_steps = e.at("skipped_steps").get<std::int64_t>();
  m.initial_loss_scale = e.at("initial_loss_scale").get<double>();
  m.final_loss_scale = e.at("final_loss_scale").get<double>();
  m.scale_halvings = e.at("scale_halvings").get<int>();
  m.first_step_skipped = e.at("first_step_skipped").get<bool>();
  m.layer_forward_ms = times(e, "layer_forward_ms", layers, problem);
  m.layer_backward_ms = times(e, "layer_backward_ms", layers, problem);
  // mixed_float8's saturation (absent from entries written before it was kept: none then).
  if (const auto it = e.find("fp8_saturation"); it != e.end() && it->is_array()) {
    for (const json& s : *it) {
      Fp8Saturation row{s.at("layer").get<int>(), s.at("tensor").get<std::string>(),
                        s.at("share").get<double>(), s.at("step").get<std::int64_t>()};
      if (row.layer < 0 || static_cast<std::size_t>(row.layer) >= layers || !(row.share >= 0) ||
          row.share > 1) {
        if (problem.empty()) problem = "its FP8 saturation is not a run's";
        continue;
      }
      m.fp8_saturation.push_back(std::move(row));
    }
  }
  for (const auto& [value, what] : {std::pair{m.step_ms, "the step"},
                                    std::pair{m.data_wait_ms, "the data wait"},
                                    std::pair{m.forward_ms, "the forward pass"},
                                    std::pair{m.backward_ms, "the backward pass"},
                                    std::pair{m.optimizer_ms, "the optimizer"}}) {
    if (problem.empty()) problem = time_problem(value, what);
  }
  if (problem.empty() && (m.steps < 1 || m.skipped_steps < 0 || m.skipped_steps > m.steps)) {
    problem = "its step counts are not a run's";
  }
  return m;
}

Measurement cached_bench_layers(const DiagnosisInput& input, Backend& backend,
                                const std::filesystem::path& cache_file, bool retime,
                                const std::atomic<bool>& cancel, LayerCacheUse* use) {
  LayerCacheUse local;
  LayerCacheUse& u = use != nullptr ? *use : local;
  const DeviceInfo device = backend.device();
  const std::size_t layers = input.spec.layers.size();

  const TextFileRead read = try_read_text_file(cache_file, kLayerCacheKind);
  const bool writable = read.ok() || read.missing;
  json entries = json::array();
  if (read.ok()) {
    try {
      entries = json::parse(read.text);
      if (!entries.is_array()) throw std::runtime_error("not a JSON list");
    } catch (const std::exception& e) {
      u.note = cache_file.string() + ": not a layer-times cache (" + e.what() +
               "); the layers timed again";
      entries = json::array();
    }
  } else if (!read.missing) {
    u.note = read.problem + "; ignored, the layers timed again";
  }

  std::vector<json> kept;  // the entries other than those timed now, oldest first
  const auto find = [&](const std::string& key) -> const json* {
    for (const json& e : entries) {
      if (text_of(e, "format") == kFormat && text_of(e, "key") == key) return &e;
    }
    return nullptr;
  };
  const auto policy_run = [&](Policy policy) {
    const std::string key = layer_times_key(input, policy, device);
    if (!retime) {
      if (const json* e = find(key)) {
        std::string problem;
        try {
          MeasuredRun m = measured_run_from_json(*e, layers, problem);
          if (problem.empty()) {
            const std::string when = text_of(*e, "timed_at");
            m.cached = "timed " + (when.empty() ? std::string("earlier") : when) + ", kept in " +
                       cache_file.string();
            ++u.cached;
            return std::pair{m, json()};
          }
        } catch (const std::exception& ex) {
          problem = ex.what();
        }
        if (!u.note.empty()) u.note += "; ";
        u.note += cache_file.string() + ": the entry of " + std::string(to_string(policy)) +
                  " is not used (" + problem + "); the layers timed again";
      }
    }
    MeasuredRun m = bench_layers(input, policy, backend, cancel);
    ++u.timed;
    return std::pair{m, to_json(m, key, input.spec.name, device.name, now_utc())};
  };
  Measurement out;
  auto [f32, f32_entry] = policy_run(Policy::float32);
  auto [mixed, mixed_entry] = policy_run(input.mixed);
  out.float32 = std::move(f32);
  out.mixed = std::move(mixed);
  json baseline_entry;
  if (input.mixed == Policy::mixed_float8) {
    auto [baseline, entry] = policy_run(Policy::mixed_bfloat16);
    out.baseline = std::move(baseline);
    baseline_entry = std::move(entry);
  }
  if (u.timed == 0) return out;

  std::vector<std::string> replaced;
  for (const json* e : {&f32_entry, &mixed_entry, &baseline_entry}) {
    if (!e->is_null()) replaced.push_back((*e)["key"].get<std::string>());
  }
  for (const json& e : entries) {
    if (text_of(e, "format") != kFormat) continue;  // another version's, or not an entry
    const std::string key = text_of(e, "key");
    if (std::find(replaced.begin(), replaced.end(), key) == replaced.end()) kept.push_back(e);
  }
  for (const json* e : {&f32_entry, &mixed_entry, &baseline_entry}) {
    if (!e->is_null()) kept.push_back(*e);
  }
  if (kept.size() > static_cast<std::size_t>(kLayerCacheEntries)) {
    kept.erase(kept.begin(), kept.end() - kLayerCacheEntries);
  }
  if (!writable) {
    u.note += " (the cache is left as it is: not a regular file)";
  } else if (!write_calibration_cache(cache_file, kept)) {
    u.note += (u.note.empty() ? "" : "; ") + cache_file.string() +
              ": cannot be written; the layers will be timed again next time";
  }
  return out;
}

}  // namespace mixlab::doctor
