// What the charts share (internal to ui/charts): axis ranges, the palette's colours,
// saving an image.
#pragma once

#include <QString>

QT_BEGIN_NAMESPACE
class QAbstractSeries;
class QChart;
class QChartView;
class QColor;
class QPalette;
class QWidget;
QT_END_NAMESPACE

namespace mixlab::ui {

struct AxisRange {
  double lo = 0.0;
  double hi = 1.0;
  int tick_count = 2;  // ticks on nice numbers, ends included
};

// The smallest range with 4-7 ticks on nice steps (1, 2, 2.5, 5 x 10^n) that covers [lo, hi]:
// an x axis so fitted stays put while live points arrive, until they pass its end.
AxisRange nice_range(double lo, double hi);
// nice_range of [lo, hi] widened by a few percent each side (without crossing zero when the data
// do not): a y axis whose curve does not touch the frame.
AxisRange padded_nice_range(double lo, double hi);
// Whole powers of `base` around [lo_positive, hi]; 1-base when there is no positive value.
AxisRange log_range(double lo_positive, double hi, double base);
// Whole decades around [lo_positive, hi]; 1-10 when there is no positive value.
AxisRange log10_range(double lo_positive, double hi);
// log10_range with a decade more on a side where the data sit on a decade (a constant 1: 0.1 to
// 10): a y axis whose curve does not lie on the frame.
AxisRange padded_log10_range(double lo_positive, double hi);

// Shows a series' legend entry only while the series has points to show (a run's device time
// on the CPU has none).
void show_in_legend(QChart& chart, QAbstractSeries* series, bool has_points);

// A chart (titled, legend hidden) in an antialiased, frameless view that fills `parent`; the view
// is a child of `parent`, the chart is the view's.
QChartView* add_chart_view(QWidget& parent, const QString& title);

// The chart theme (dark or light by the palette's window colour) with the palette's window colour
// as background and its text colour for titles, labels and legend; axis labels are never cut to
// "...".
void style_chart(QChart& chart, QChartView& view, const QPalette& palette);

// Saves `widget` as SVG (".svg", vector) or as a raster image whose format the suffix names (PNG
// without a suffix). Returns false and sets `error` (naming the file) when the format is unknown
// or the file cannot be written.
bool save_chart_image(QWidget& widget, const QString& title, const QString& path, QString* error);

// Pixels of `colour` (each channel within a few levels: antialiasing blends a line's edges, not
// its core) inside the chart's plot area, as `widget` (the chart view's parent) paints now.
int colour_pixels_in_plot(QWidget& widget, const QChartView& view, const QColor& colour);

}  // namespace mixlab::ui
