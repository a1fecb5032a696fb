// What the Doctor tab's charts show, computed from a diagnosis (data apart from view): the
// roofline's roofs and points, where each policy's step time goes, and the predicted speed-up
// by batch size.
#pragma once

#include <QPointF>
#include <QString>
#include <QStringList>
#include <vector>

#include "engine/doctor/diagnosis.h"
#include "ui/charts/chart.h"

namespace mixlab::ui {

struct PlotSeries {
  std::vector<QPointF> points;
  QStringList labels;  // one per point: what it is, for its tooltip
};

// Arithmetic intensity (FLOP/byte) against achieved GFLOP/s (1e9 FLOP/s: short axis labels).
struct RooflineData {
  double float32_peak_flops = 0.0;
  double mixed_peak_flops = 0.0;  // float32's where the device emulates the mixed policy
  double bandwidth_bytes_per_s = 0.0;
  // y = min(peak, bandwidth * x) across the points' intensities (and the ridge).
  PlotSeries float32_roof, mixed_roof;
  // One point per cost item with FLOPs: its intensity and flops / time_s() / 1e9.
  PlotSeries float32, mixed;
  // One point per layer and direction (forward; backward to data and weights together): the
  // predicted FLOPs over the measured time. Empty without a measurement.
  PlotSeries measured_float32, measured_mixed;
};
RooflineData roofline_data(const doctor::Diagnosis& d);

// One bar per policy (float32, the mixed one), one segment per kind of time either spends
// (doctor::TimeKind), in ms.
struct TimeBreakdown {
  QStringList bars;
  std::vector<StackedBarChart::Segment> segments;
};
TimeBreakdown time_breakdown(const doctor::Diagnosis& d);

// The figures under the verdict: the device, each policy's step predicted (and measured) and
// its training memory.
QString step_figures_text(const doctor::Diagnosis& d);

// Whether two inputs diagnose alike: the same model, device and mixed policy, and the same runs
// measured (a measurement made at one stands for the other).
bool same_input(const doctor::DiagnosisInput& a, const doctor::DiagnosisInput& b);

// The sweep's batch sizes: powers of two from the first to the last.
inline constexpr int kSweepFirstBatch = 8;
inline constexpr int kSweepLastBatch = 4096;
// (batch, float32's predicted step over the mixed policy's) at each of the sweep's batch sizes,
// the rest of `input` as it is; a batch the model cannot be diagnosed at is left out.
std::vector<QPointF> speedup_sweep(const doctor::DiagnosisInput& input);

}  // namespace mixlab::ui
