// Order statistics of step times.
#pragma once

#include <span>
#include <vector>

#include "engine/train/run_types.h"

namespace mixlab {

// The q-quantile (0..1) with linear interpolation between order statistics (numpy's default);
// NaN for an empty sample. Takes a copy: the caller's order is kept.
double quantile(std::vector<double> values, double q);

// Fills `summary`'s step-time figures (warmup_steps, median, p5, p95 step ms and samples/s) from
// per-step wall times and sample counts; the first warmup_steps, clamped to 0..n / 2, are left out.
void summarize_step_times(std::span<const double> step_ms, std::span<const int> step_samples,
                          int warmup_steps, RunSummary& summary);

}  // namespace mixlab
