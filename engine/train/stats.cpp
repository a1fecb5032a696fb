#include "engine/train/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mixlab {

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, values.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

void summarize_step_times(std::span<const double> step_ms, std::span<const int> step_samples,
                          int warmup_steps, RunSummary& summary) {
  const auto n = static_cast<std::int64_t>(step_ms.size());
  // A warm-up read back from a damaged run database can be negative or larger than the run.
  summary.warmup_steps = std::clamp<std::int64_t>(warmup_steps, 0, n / 2);
  const auto first = static_cast<std::size_t>(summary.warmup_steps);
  const std::vector<double> measured(step_ms.begin() + summary.warmup_steps, step_ms.end());
  if (measured.empty()) return;
  summary.median_step_ms = quantile(measured, 0.5);
  summary.p5_step_ms = quantile(measured, 0.05);
  summary.p95_step_ms = quantile(measured, 0.95);
  double ms = 0.0, samples = 0.0;
  for (std::size_t i = first; i < step_ms.size(); ++i) {
    ms += step_ms[i];
    samples += step_samples[i];
  }
  summary.samples_per_s = ms > 0.0 ? samples / (ms / 1000.0) : kNotMeasured;
}

}  // namespace mixlab
