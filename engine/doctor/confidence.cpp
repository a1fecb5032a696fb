#include "engine/doctor/confidence.h"

#include <cmath>

#include "engine/core/text_file.h"
#include "engine/doctor/local_profile.h"

namespace mixlab::doctor {

namespace {

using nlohmann::json;

constexpr TextFileKind kZooFileKind{"zoo summary", std::uintmax_t{1} << 20, ""};

// MixLab's own held-out zoo runs (README, "The held-out zoo"): scripts/bench.sh --doctor-zoo
// --steps 100 --warmup 10 --repeats 3 (timed), --roofline-only --steps 30 (roofline), on the
// 2-core VM.
Confidence project_run(const std::string& mode) {
  Confidence c;
  c.known = true;
  c.kind = "cpu";
  c.device = "a 2-core Intel Xeon VM with AMX";
  c.mode = mode;
  c.models = 30;
  c.date = "2026-12-05";
  c.origin = "MixLab's zoo run (README)";
  if (mode == "timed") {
    c.median_error = 0.05;
    c.p90_error = 0.13;
    c.direction_right = 28;
  } else {
    c.median_error = 0.34;
    c.p90_error = 0.72;
    c.direction_right = 18;
  }
  return c;
}

std::string percent(double fraction) { return std::to_string(std::lround(fraction * 100)) + "%"; }

std::string describe(const Confidence& c, bool same_device) {
  const std::string how = c.mode == "timed" ? "with each layer timed" : "from the roofline alone";
  return "Confidence: on " + std::to_string(c.models) + " held-out models " + how + ", " +
         (same_device ? "on this device" : "on " + c.device) +
         ", the doctor's step predictions erred by " + percent(c.median_error) + " (median) and " +
         percent(c.p90_error) + " (90th percentile), and called mixed faster, slower or the "
         "same right for " +
         std::to_string(c.direction_right) + " of " + std::to_string(c.models) + " (" + c.origin +
         ", " + c.date + ").";
}

// The entries of the zoo file, or none.
json entries_of(const std::filesystem::path& file) {
  const TextFileRead read = try_read_text_file(file, kZooFileKind);
  if (!read.ok()) return json::array();
  try {
    json j = json::parse(read.text);
    return j.is_array() ? j : json::array();
  } catch (const json::exception&) {
    return json::array();
  }
}

bool read_entry(const json& e, Confidence& c) {
  try {
    c.kind = e.at("kind").get<std::string>();
    c.device = e.at("device").get<std::string>();
    c.mode = e.at("mode").get<std::string>();
    c.models = e.at("models").get<int>();
    c.median_error = e.at("median_error").get<double>();
    c.p90_error = e.at("p90_error").get<double>();
    c.direction_right = e.at("direction_right").get<int>();
    c.date = e.at("date").get<std::string>();
  } catch (const json::exception&) {
    return false;
  }
  const auto fraction = [](double x) { return std::isfinite(x) && x >= 0 && x < 100; };
  return c.models > 0 && c.direction_right >= 0 && c.direction_right <= c.models &&
         fraction(c.median_error) && fraction(c.p90_error);
}

}  // namespace

std::filesystem::path default_zoo_file() {
  return default_cpu_profile_cache().parent_path() / "doctor-zoo.json";
}

Confidence zoo_confidence(const DeviceProfile& device, bool layers_timed,
                          const std::filesystem::path& zoo_file) {
  const std::string kind = device.is_gpu() ? "cuda" : "cpu";
  const std::string mode = layers_timed ? "timed" : "roofline";
  std::optional<Confidence> same_device, same_kind;
  for (const json& e : entries_of(zoo_file)) {
    Confidence c;
    if (!read_entry(e, c) || c.kind != kind || c.mode != mode) continue;
    c.known = true;
    c.origin = "this machine's zoo run, " + zoo_file.string();
    if (c.device == device.name) same_device = c;
    else same_kind = c;
  }
  if (same_device) {
    same_device->line = describe(*same_device, true);
    return *same_device;
  }
  if (same_kind) {
    same_kind->line = describe(*same_kind, false);
    return *same_kind;
  }
  if (kind == "cpu") {
    Confidence c = project_run(mode);
    c.line = describe(c, false) + " Run scripts/bench.sh --doctor-zoo for this CPU's own figure.";
    return c;
  }
  Confidence c;
  c.kind = kind;
  c.mode = mode;
  c.line = "Confidence: unknown. No held-out zoo has run on a GPU yet, so the error of the "
           "doctor's GPU predictions is not measured (tests/gpu/check.sh runs it on a GPU).";
  return c;
}

nlohmann::ordered_json to_json(const Confidence& c) {
  nlohmann::ordered_json j{{"known", c.known}, {"kind", c.kind}, {"mode", c.mode}};
  if (c.known) {
    j["device"] = c.device;
    j["models"] = c.models;
    j["median_error"] = c.median_error;
    j["p90_error"] = c.p90_error;
    j["direction_right"] = c.direction_right;
    j["date"] = c.date;
    j["origin"] = c.origin;
  }
  j["line"] = c.line;
  return j;
}

}  // namespace mixlab::doctor
