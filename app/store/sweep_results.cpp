#include "app/store/sweep_results.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "engine/core/error.h"

namespace mixlab::store {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median_of(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The point's key: model and settings without the seed.
std::string key_of(const std::string& model,
                   const std::vector<std::pair<std::string, std::string>>& settings,
                   bool without_precision) {
  std::string key = model;
  for (const auto& [flag, value] : settings) {
    if (without_precision && flag == "precision") continue;
    key += '\n' + flag + '=' + value;
  }
  return key;
}

}  // namespace

std::string SweepPoint::label(const std::vector<std::string>& axes) const {
  std::string out;
  for (const std::string& axis : axes) {
    std::string value;
    if (axis == "model") value = model;
    for (const auto& [flag, v] : settings) {
      if (flag == axis) value = v;
    }
    const std::string part = axis == "model" || axis == "precision" ? value : axis + " " + value;
    out += (out.empty() ? "" : ", ") + part;
  }
  return out.empty() ? model : out;
}

SweepResults sweep_results(RunStore& store, const SweepRecord& sweep) {
  SweepResults results;
  try {
    results.spec = parse_sweep_json(sweep.spec_json, "sweep " + std::to_string(sweep.id));
  } catch (const ConfigError&) {
    // A sweep from a MixLab whose settings this one does not know: show its points anyway.
  }
  results.axes = results.spec.axes();

  std::map<std::string, std::size_t> index;  // key -> points
  struct Measured {
    std::vector<double> step_ms, samples_per_s;
  };
  std::vector<Measured> measured;
  for (const SweepMemberRecord& m : sweep.members) {
    SweepMember member;
    try {
      member = parse_sweep_member(m.settings_json);
    } catch (const std::exception&) {
      continue;
    }
    std::vector<std::pair<std::string, std::string>> settings;
    for (const auto& s : member.settings) {
      if (s.first != "seed" || std::count(results.axes.begin(), results.axes.end(), "seed") > 0)
        settings.push_back(s);
    }
    const std::string key = key_of(member.model, settings, false);
    auto [it, inserted] = index.emplace(key, results.points.size());
    if (inserted) {
      SweepPoint p;
      p.model = member.model;
      p.settings = settings;
      p.precision = member.value("precision").empty() ? "float32" : member.value("precision");
      const std::string batch = member.value("batch-size");
      p.batch_size = batch.empty() ? 0 : std::stoll(batch);
      results.points.push_back(std::move(p));
      measured.emplace_back();
    }
    SweepPoint& p = results.points[it->second];
    ++p.planned;
    if (m.state == MemberState::failed) ++p.failed;
    if (!m.run_id || m.state != MemberState::done) continue;
    const auto run = store.find_run(*m.run_id);
    if (!run) continue;
    p.run_ids.push_back(run->id);
    if (std::isfinite(run->summary.median_step_ms)) {
      ++p.measured;
      measured[it->second].step_ms.push_back(run->summary.median_step_ms);
      measured[it->second].samples_per_s.push_back(run->summary.samples_per_s);
    }
  }
  for (std::size_t i = 0; i < results.points.size(); ++i) {
    SweepPoint& p = results.points[i];
    const auto& v = measured[i].step_ms;
    p.median_step_ms = median_of(v);
    p.min_step_ms = v.empty() ? kNaN : *std::min_element(v.begin(), v.end());
    p.max_step_ms = v.empty() ? kNaN : *std::max_element(v.begin(), v.end());
    p.median_samples_per_s = median_of(measured[i].samples_per_s);
  }
  // float32 at the same other settings.
  std::map<std::string, double> float32;
  for (const SweepPoint& p : results.points) {
    if (p.precision == "float32")
      float32[key_of(p.model, p.settings, true)] = p.median_step_ms;
  }
  for (SweepPoint& p : results.points) {
    p.speedup_over_float32 = kNaN;
    if (p.precision == "float32") continue;
    const auto it = float32.find(key_of(p.model, p.settings, true));
    if (it != float32.end() && std::isfinite(it->second) && std::isfinite(p.median_step_ms) &&
        p.median_step_ms > 0.0)
      p.speedup_over_float32 = it->second / p.median_step_ms;
  }
  return results;
}

}  // namespace mixlab::store
