// Order statistics of step times.
#pragma once

#include <vector>

namespace mixlab {

// The q-quantile (0..1) with linear interpolation between order statistics (numpy's default);
// NaN for an empty sample. Takes a copy: the caller's order is kept.
double quantile(std::vector<double> values, double q);

}  // namespace mixlab
