// A sweep's results per grid point: the median step time over its repeats with their spread,
// and each policy's speed-up over float32 at the same other settings. Shared by `mixlab-cli
// sweep show` and the GUI's Sweeps view. Qt-free.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "app/store/sweep_plan.h"
#include "app/store/sweeps.h"

namespace mixlab::store {

struct SweepPoint {
  std::string model;
  std::vector<std::pair<std::string, std::string>> settings;  // the point's, seed left out
  std::string precision;                                      // "float32" when not set
  std::int64_t batch_size = 0;                                // 0 when not set: the default
  int planned = 0;                                            // members (repeats)
  int measured = 0;  // members whose run has a median step time
  int failed = 0;
  std::vector<std::int64_t> run_ids;
  double median_step_ms = 0.0;  // median of the runs' medians; NaN when none measured
  double min_step_ms = 0.0;     // the spread over repeats
  double max_step_ms = 0.0;
  double median_samples_per_s = 0.0;
  // float32's median step time at the same other settings over this point's: > 1 is faster.
  // NaN for float32 itself, or when float32 was not measured at those settings.
  double speedup_over_float32 = 0.0;

  // "precision mixed_float16, batch-size 64": the point's settings along the sweep's axes.
  std::string label(const std::vector<std::string>& axes) const;
};

struct SweepResults {
  SweepSpec spec;
  std::vector<std::string> axes;
  std::vector<SweepPoint> points;  // in plan order of their first member
};

// Reads the sweep's members and their runs. Members whose settings do not parse are counted
// as failed.
SweepResults sweep_results(RunStore& store, const SweepRecord& sweep);

}  // namespace mixlab::store
