#include "ui/doctor/doctor_charts.h"

#include <QHBoxLayout>
#include <QSplitter>

#include "ui/charts/chart.h"
#include "ui/doctor/doctor_figures.h"
#include "ui/qt_text.h"

namespace mixlab::ui {
namespace {

void set_series(PlotChart& chart, int series, PlotSeries data) {
  chart.set_points(series, std::move(data.points), std::move(data.labels));
}

}  // namespace

DoctorCharts::DoctorCharts(QWidget* parent) : QWidget(parent) {
  roofline_ = new PlotChart(tr("Roofline"), tr("FLOP per byte"), tr("GFLOP/s"),
                          PlotChart::Scale::log10, PlotChart::Scale::log10);
  roofline_->setToolTip(
      tr("Each layer's forward and backward and the step's own work: arithmetic intensity "
         "against the FLOP/s the cost model predicts, under the device's roofs "
         "(min(peak, bandwidth × intensity)). Points far under their roof lose time to "
         "overhead, quantization or alignment; points on the slope are memory-bound."));
  // Each policy's points take its roof's colour.
  roofline_->add_series(tr("float32 roof"), PlotChart::Kind::dashed_line);
  roofline_->add_series(tr("mixed roof"), PlotChart::Kind::dashed_line);
  roofline_->add_series(tr("float32"), PlotChart::Kind::markers, Float32Roof);
  roofline_->add_series(tr("mixed"), PlotChart::Kind::markers, MixedRoof);
  roofline_->add_series(tr("float32 measured"), PlotChart::Kind::markers);
  roofline_->add_series(tr("mixed measured"), PlotChart::Kind::markers);

  time_ = new StackedBarChart(tr("Where the step time goes (predicted)"), tr("ms per step"));
  time_->setToolTip(tr("Each policy's predicted step by kind of work; launch and library-call "
                       "overhead apart"));

  sweep_ = new PlotChart(tr("Predicted speed-up by batch size"), tr("batch size"),
                       tr("speed-up"), PlotChart::Scale::log2, PlotChart::Scale::linear);
  sweep_->setToolTip(tr("float32's predicted step over the mixed policy's: above 1 the mixed "
                        "policy is faster; the Run panel's batch size is marked"));
  sweep_->add_series(tr("predicted"), PlotChart::Kind::line);
  sweep_->add_series(tr("as fast"), PlotChart::Kind::dashed_line);
  sweep_->add_series(tr("this batch"), PlotChart::Kind::markers);
  sweep_->add_series(tr("measured"), PlotChart::Kind::markers);

  // The roofline, the one with most to read, on the left; the other two stacked beside it.
  auto* right = new QSplitter(Qt::Vertical);
  right->addWidget(time_);
  right->addWidget(sweep_);
  right->setChildrenCollapsible(false);
  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->addWidget(roofline_);
  splitter->addWidget(right);
  // Halves: at 3:2 the time chart's bars were too narrow for their names ("mixed_float16").
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 1);
  splitter->setChildrenCollapsible(false);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(splitter);
}

void DoctorCharts::show_diagnosis(const doctor::Diagnosis* d) {
  if (d == nullptr) {
    roofline_->clear();
    time_->set_bars({}, {});
    sweep_->clear();
    return;
  }
  show_roofline(*d);
  const TimeBreakdown t = ui::time_breakdown(*d);
  time_->set_bars(t.bars, t.segments);
  show_sweep(*d);
}

void DoctorCharts::show_roofline(const doctor::Diagnosis& d) {
  const QString mixed = qt_text(to_string(d.input.mixed));
  roofline_->set_series_name(MixedRoof, tr("%1 roof").arg(mixed));
  roofline_->set_series_name(PredictedMixed, mixed);
  roofline_->set_series_name(MeasuredMixed, tr("%1 measured").arg(mixed));
  RooflineData r = roofline_data(d);
  set_series(*roofline_, Float32Roof, std::move(r.float32_roof));
  set_series(*roofline_, MixedRoof, std::move(r.mixed_roof));
  set_series(*roofline_, PredictedFloat32, std::move(r.float32));
  set_series(*roofline_, PredictedMixed, std::move(r.mixed));
  set_series(*roofline_, MeasuredFloat32, std::move(r.measured_float32));
  set_series(*roofline_, MeasuredMixed, std::move(r.measured_mixed));
}

void DoctorCharts::show_sweep(const doctor::Diagnosis& d) {
  // Ten diagnoses: predicted again only when more than the batch size has changed.
  doctor::DiagnosisInput key = d.input;
  key.run.batch_size = 0;
  if (!sweep_input_ || !same_input(*sweep_input_, key)) {
    sweep_points_ = speedup_sweep(d.input);
    sweep_input_ = key;
  }
  const QString mixed = qt_text(to_string(d.input.mixed));
  sweep_->set_series_name(CurrentBatch, tr("batch %1").arg(d.input.run.batch_size));
  sweep_->set_series_name(Speedup, mixed);
  sweep_->set_points(Speedup, sweep_points_);
  sweep_->set_points(AsFast, {QPointF(kSweepFirstBatch, 1.0), QPointF(kSweepLastBatch, 1.0)});
  sweep_->set_points(CurrentBatch, {QPointF(d.input.run.batch_size, d.predicted_speedup())},
                     {tr("batch %1 (the Run panel's)").arg(d.input.run.batch_size)});
  if (d.measured) {
    sweep_->set_points(MeasuredSpeedup, {QPointF(d.input.run.batch_size, d.measured->speedup())},
                       {tr("measured at batch %1").arg(d.input.run.batch_size)});
  } else {
    sweep_->set_points(MeasuredSpeedup, {});
  }
}

}  // namespace mixlab::ui

// The moc output compiled here rather than in the target's shared mocs_compilation.cpp, which
// would tie this file to every other moc'd header of mixlab_ui.
#include "moc_doctor_charts.cpp"
