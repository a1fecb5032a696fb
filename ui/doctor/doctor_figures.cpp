#include "ui/doctor/doctor_figures.h"

#include <QObject>
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "engine/core/error.h"
#include "engine/doctor/doctor_text.h"
#include "engine/doctor/measure.h"
#include "engine/train/run_fields.h"
#include "ui/qt_text.h"

namespace mixlab::ui {
namespace {

constexpr double kGiga = 1e9;

QString gflops(double flops) {
  return QStringLiteral("%1 GFLOP").arg(flops / 1e9, 0, 'g', 3);
}

// y = min(peak, bandwidth * x) from x_lo to x_hi: the slope, the ridge and the flat roof.
PlotSeries roof(double peak_flops, double bandwidth, double x_lo, double x_hi,
                const QString& label) {
  PlotSeries s;
  if (peak_flops <= 0 || bandwidth <= 0 || x_lo <= 0 || x_hi <= x_lo) return s;
  const double ridge = peak_flops / bandwidth;
  const auto add = [&](double x) {
    s.points.emplace_back(x, std::min(peak_flops, bandwidth * x) / kGiga);
    s.labels << label;
  };
  add(x_lo);
  if (ridge > x_lo && ridge < x_hi) add(ridge);
  add(x_hi);
  return s;
}

void add_predicted(const doctor::StepCost& cost, PlotSeries& out) {
  for (const doctor::CostItem& item : cost.items) {
    if (item.flops <= 0 || item.time_s() <= 0 || item.bytes() <= 0) continue;
    out.points.emplace_back(item.intensity(), item.flops / item.time_s() / kGiga);
    out.labels << QStringLiteral("%1: %2 in %3, %4")
                      .arg(qt_text(item.label), gflops(item.flops),
                           qt_text(doctor::millis(item.time_s())),
                           item.memory_bound() ? QObject::tr("memory-bound")
                                               : QObject::tr("compute-bound"));
  }
}

// Each layer's forward and backward: the predicted FLOPs and bytes over the measured time.
void add_measured(const doctor::StepCost& cost, const doctor::MeasuredRun& run,
                  PlotSeries& out) {
  const auto add = [&](int layer, bool backward, double ms) {
    double flops = 0.0, bytes = 0.0;
    for (const doctor::CostItem& item : cost.items) {
      if (item.layer != layer) continue;
      const bool is_backward = item.phase == doctor::CostPhase::backward_data ||
                               item.phase == doctor::CostPhase::backward_weights;
      if (is_backward != backward) continue;
      flops += item.flops;
      bytes += item.bytes();
    }
    if (flops <= 0 || bytes <= 0 || !(ms > 0)) return;
    out.points.emplace_back(flops / bytes, flops / (ms / 1e3) / kGiga);
    out.labels << QObject::tr("layer %1 %2: %3 measured in %4 ms")
                      .arg(layer)
                      .arg(backward ? QObject::tr("backward") : QObject::tr("forward"))
                      .arg(gflops(flops))
                      .arg(ms, 0, 'g', 3);
  };
  for (std::size_t l = 0; l < run.layer_forward_ms.size(); ++l) {
    add(static_cast<int>(l), false, run.layer_forward_ms[l]);
    if (l < run.layer_backward_ms.size()) add(static_cast<int>(l), true, run.layer_backward_ms[l]);
  }
}

}  // namespace

RooflineData roofline_data(const doctor::Diagnosis& d) {
  RooflineData r;
  const doctor::DeviceProfile& device = d.input.device;
  r.bandwidth_bytes_per_s = device.bandwidth_bytes_per_s;
  r.float32_peak_flops = doctor::matmul_peak(device, DType::f32, d.input.run.tf32);
  r.mixed_peak_flops = doctor::matmul_peak(device, compute_dtype(d.input.mixed), false);
  if (r.mixed_peak_flops <= 0) r.mixed_peak_flops = r.float32_peak_flops;  // emulated

  add_predicted(d.float32, r.float32);
  add_predicted(d.mixed, r.mixed);
  if (d.measured) {
    add_measured(d.float32, d.measured->float32, r.measured_float32);
    add_measured(d.mixed, d.measured->mixed, r.measured_mixed);
  }

  // The roofs span every point and both ridges, with some room either side.
  double lo = std::numeric_limits<double>::infinity(), hi = 0.0;
  for (const PlotSeries* s : {&r.float32, &r.mixed, &r.measured_float32, &r.measured_mixed}) {
    for (const QPointF& p : s->points) {
      lo = std::min(lo, p.x());
      hi = std::max(hi, p.x());
    }
  }
  if (r.bandwidth_bytes_per_s > 0) {
    for (const double peak : {r.float32_peak_flops, r.mixed_peak_flops}) {
      if (peak <= 0) continue;
      lo = std::min(lo, peak / r.bandwidth_bytes_per_s);
      hi = std::max(hi, peak / r.bandwidth_bytes_per_s);
    }
  }
  if (!std::isfinite(lo) || hi <= 0) return r;
  const double x_lo = lo / 2, x_hi = hi * 2;
  r.float32_roof = roof(r.float32_peak_flops, r.bandwidth_bytes_per_s, x_lo, x_hi,
                        QObject::tr("float32 roof: %1 TFLOP/s, %2 GB/s")
                            .arg(r.float32_peak_flops / 1e12, 0, 'g', 3)
                            .arg(r.bandwidth_bytes_per_s / 1e9, 0, 'g', 3));
  r.mixed_roof = roof(r.mixed_peak_flops, r.bandwidth_bytes_per_s, x_lo, x_hi,
                      QObject::tr("%1 roof: %2 TFLOP/s, %3 GB/s")
                          .arg(qt_text(to_string(d.input.mixed)))
                          .arg(r.mixed_peak_flops / 1e12, 0, 'g', 3)
                          .arg(r.bandwidth_bytes_per_s / 1e9, 0, 'g', 3));
  return r;
}

TimeBreakdown time_breakdown(const doctor::Diagnosis& d) {
  TimeBreakdown t;
  t.bars << QStringLiteral("float32") << qt_text(to_string(d.input.mixed));
  for (int k = 0; k < doctor::kTimeKinds; ++k) {
    const auto kind = static_cast<doctor::TimeKind>(k);
    const double f32_ms = d.float32.seconds(kind) * 1e3;
    const double mixed_ms = d.mixed.seconds(kind) * 1e3;
    if (f32_ms <= 0 && mixed_ms <= 0) continue;
    t.segments.push_back({qt_text(to_string(kind)), {f32_ms, mixed_ms}});
  }
  return t;
}

bool same_input(const doctor::DiagnosisInput& a, const doctor::DiagnosisInput& b) {
  const auto device = [](const doctor::DeviceProfile& p) {
    return std::tie(p.name, p.kind, p.measured, p.threads);
  };
  if (!(a.spec == b.spec && a.mixed == b.mixed && device(a.device) == device(b.device)))
    return false;
  // The runs' settings as the doctor runs them (measure_config: the batch size, optimizer, GPU
  // options and every other field of the table but the doctor's own, which the Run panel's
  // precision or dataset do not change). The same spec: the shapes infer, as they did for `a`.
  const doctor::MeasureOptions options;
  const RunConfig run_a = doctor::measure_config(a, Policy::float32, options);
  const RunConfig run_b = doctor::measure_config(b, Policy::float32, options);
  return std::all_of(run_fields().begin(), run_fields().end(), [&](const RunField& field) {
    return field.get(run_a) == field.get(run_b);
  });
}

QString step_figures_text(const doctor::Diagnosis& d) {
  const QString mixed = qt_text(to_string(d.input.mixed));
  const doctor::DeviceProfile& dev = d.input.device;
  QString text =
      QObject::tr("%1, %2. Predicted step: float32 %3, %4 %5 (%6 float32). Training memory: "
                  "%7 and %8.")
          .arg(QString::fromStdString(dev.name),
               dev.measured ? QObject::tr("roofs measured on this machine")
                            : QObject::tr("published figures: a prediction"),
               qt_text(doctor::millis(d.float32.step_s())), mixed,
               qt_text(doctor::millis(d.mixed.step_s())),
               qt_text(doctor::speedup_words(d.predicted_speedup())),
               qt_text(doctor::megabytes(static_cast<double>(d.float32.memory.total()))),
               qt_text(doctor::megabytes(static_cast<double>(d.mixed.memory.total()))));
  if (d.measured) {
    text += QObject::tr("\nMeasured step (median of %1): float32 %2 ms, %3 %4 ms (%5 float32).")
                .arg(d.measured->mixed.steps)
                .arg(d.measured->float32.step_ms, 0, 'f', 2)
                .arg(mixed)
                .arg(d.measured->mixed.step_ms, 0, 'f', 2)
                .arg(qt_text(doctor::speedup_words(d.measured->speedup())));
  }
  return text;
}

std::vector<QPointF> speedup_sweep(const doctor::DiagnosisInput& input) {
  std::vector<QPointF> points;
  for (int batch = kSweepFirstBatch; batch <= kSweepLastBatch; batch *= 2) {
    doctor::DiagnosisInput at = input;
    at.run.batch_size = batch;
    try {
      const doctor::Diagnosis d = doctor::diagnose(at);
      if (d.mixed.support.level == Support::unsupported) continue;
      points.emplace_back(batch, d.predicted_speedup());
    } catch (const Error&) {
      // A batch this model cannot be planned at: no point there.
    }
  }
  return points;
}

}  // namespace mixlab::ui
