// The Doctor tab's three charts side by side: the roofline (each cost item's intensity against
// its achieved FLOP/s under the float32 and mixed roofs, and measured layers when there is a
// measurement), where each policy's predicted step time goes, and the predicted speed-up of the
// mixed policy by batch size with the current batch marked. The sweep is predicted again only
// when something but the batch size changes.
#pragma once

#include <QWidget>
#include <QPointF>
#include <optional>
#include <vector>

#include "engine/doctor/diagnosis.h"

namespace mixlab::ui {

class StackedBarChart;
class PlotChart;

class DoctorCharts : public QWidget {
  Q_OBJECT

 public:
  // The roofline chart's series, in this order.
  enum RooflineSeries : int {
    Float32Roof,
    MixedRoof,
    PredictedFloat32,
    PredictedMixed,
    MeasuredFloat32,
    MeasuredMixed,
    RooflineSeriesCount
  };
  // The sweep chart's series, in this order.
  enum SweepSeries : int { Speedup, AsFast, CurrentBatch, MeasuredSpeedup, SweepSeriesCount };

  explicit DoctorCharts(QWidget* parent = nullptr);

  // Shows a diagnosis; nullptr empties every chart.
  void show_diagnosis(const doctor::Diagnosis* d);

  PlotChart* roofline() const { return roofline_; }
  StackedBarChart* time_breakdown() const { return time_; }
  PlotChart* sweep() const { return sweep_; }

 private:
  void show_roofline(const doctor::Diagnosis& d);
  void show_sweep(const doctor::Diagnosis& d);

  PlotChart* roofline_ = nullptr;
  StackedBarChart* time_ = nullptr;
  PlotChart* sweep_ = nullptr;
  // The input the sweep was predicted for (at batch 0) and its points.
  std::optional<doctor::DiagnosisInput> sweep_input_;
  std::vector<QPointF> sweep_points_;
};

}  // namespace mixlab::ui
