#include "ui/charts/chart_common.h"

#include <QAbstractAxis>
#include <QChart>
#include <QChartView>
#include <QColor>
#include <QDir>
#include <QFileInfo>
#include <QGraphicsLayout>
#include <QImage>
#include <QImageWriter>
#include <QLegend>
#include <QLegendMarker>
#include <QPainter>
#include <QPalette>
#include <QPixmap>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "ui/output_file.h"

namespace mixlab::ui {
namespace {

constexpr int kTargetTickCount = 6;
constexpr double kPadFraction = 0.05;

// Below this lightness (0-255) a window colour counts as dark: dark theme, light text.
constexpr int kDarkLightness = 128;

QString cannot_write(const QString& path, const QString& why) {
  return QObject::tr("Cannot write %1: %2").arg(QDir::toNativeSeparators(path), why);
}

}  // namespace

AxisRange nice_range(double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) return {0.0, 1.0, kTargetTickCount};
  if (lo == hi) {
    const double pad = lo == 0.0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw_step = (hi - lo) / (kTargetTickCount - 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw_step)));
  double step = 10.0 * magnitude;
  for (const double mantissa : {1.0, 2.0, 2.5, 5.0}) {
    // The tolerance keeps a step that equals raw_step up to rounding from being passed over.
    if (mantissa * magnitude >= raw_step * (1.0 - 1e-9)) {
      step = mantissa * magnitude;
      break;
    }
  }
  const double nice_lo = std::floor(lo / step) * step;
  const double nice_hi = std::ceil(hi / step) * step;
  const int tick_count = static_cast<int>(std::lround((nice_hi - nice_lo) / step)) + 1;
  return {nice_lo, nice_hi, tick_count};
}

AxisRange padded_nice_range(double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) return nice_range(lo, hi);
  const double pad = (hi - lo) * kPadFraction;
  const double padded_lo = lo >= 0.0 ? std::max(0.0, lo - pad) : lo - pad;
  const double padded_hi = hi <= 0.0 ? std::min(0.0, hi + pad) : hi + pad;
  return nice_range(padded_lo, padded_hi);
}

AxisRange log_range(double lo_positive, double hi, double base) {
  if (!std::isfinite(lo_positive) || !std::isfinite(hi) || lo_positive <= 0.0 || hi < lo_positive) {
    return {1.0, base, 2};
  }
  // log2 and log10 are exact on their powers (8 is 2^3, not 2^2.9999...): a range that starts on
  // a power starts there.
  const auto log_of = [base](double v) {
    if (base == 2.0) return std::log2(v);
    if (base == 10.0) return std::log10(v);
    return std::log(v) / std::log(base);
  };
  const double lo_power = std::floor(log_of(lo_positive));
  double hi_power = std::ceil(log_of(hi));
  if (hi_power <= lo_power) hi_power = lo_power + 1.0;
  return {std::pow(base, lo_power), std::pow(base, hi_power),
          static_cast<int>(hi_power - lo_power) + 1};
}

AxisRange log10_range(double lo_positive, double hi) {
  return log_range(lo_positive, hi, 10.0);
}

AxisRange padded_log10_range(double lo_positive, double hi) {
  AxisRange r = log10_range(lo_positive, hi);
  if (!std::isfinite(lo_positive) || !std::isfinite(hi) || lo_positive <= 0.0 || hi < lo_positive)
    return r;
  // A value on a decade, up to rounding (log10 and pow round the powers of ten exactly, not 0.1).
  constexpr double kOnDecade = 1e-9;
  if (lo_positive <= r.lo * (1.0 + kOnDecade)) {
    r.lo /= 10.0;
    ++r.tick_count;
  }
  if (hi >= r.hi * (1.0 - kOnDecade)) {
    r.hi *= 10.0;
    ++r.tick_count;
  }
  return r;
}

void show_in_legend(QChart& chart, QAbstractSeries* series, bool has_points) {
  for (QLegendMarker* marker : chart.legend()->markers(series)) marker->setVisible(has_points);
}

QChartView* add_chart_view(QWidget& parent, const QString& title) {
  auto* chart = new QChart;
  chart->setTitle(title);
  chart->legend()->hide();
  // Qt's default frame (a 9 px layout margin and 20 px around the plot) took a third of a chart
  // 160 px high, where a 1366x768 screen puts the Live tab's six: the plot gets it instead.
  chart->layout()->setContentsMargins(0, 0, 0, 0);
  chart->setMargins(QMargins(6, 4, 10, 2));
  auto* view = new QChartView(chart, &parent);
  view->setRenderHint(QPainter::Antialiasing);
  view->setFrameShape(QFrame::NoFrame);
  auto* layout = new QVBoxLayout(&parent);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(view);
  return view;
}

void style_chart(QChart& chart, QChartView& view, const QPalette& palette) {
  const QColor window = palette.color(QPalette::Window);
  // WindowText, not Text: Text is meant for item views' Base background, ours is Window.
  const QColor text = palette.color(QPalette::WindowText);
  // The theme picks series colours, grid and fonts that read on a background of its lightness.
  chart.setTheme(window.lightness() < kDarkLightness ? QChart::ChartThemeDark
                                                     : QChart::ChartThemeLight);
  chart.setBackgroundBrush(window);
  chart.setBackgroundRoundness(0);
  chart.setTitleBrush(text);
  chart.legend()->setLabelColor(text);
  chart.legend()->setShowToolTips(true);  // a legend entry cut short shows whole on hover
  for (QAbstractAxis* axis : chart.axes()) {
    axis->setLabelsColor(text);
    axis->setTitleBrush(text);
    // Qt cuts a label to "..." when its slot is a little lower than the font's line (a speed-up
    // axis in a short chart read "...", "...", "..."); whole labels instead, and Qt hides one
    // that would overlap its neighbour.
    axis->setTruncateLabels(false);
  }
  view.setBackgroundBrush(window);
}

int colour_pixels_in_plot(QWidget& widget, const QChartView& view, const QColor& colour) {
  constexpr int kTolerance = 24;  // per channel, of 255
  const QImage image = widget.grab().toImage();
  const qreal dpr = image.devicePixelRatio();
  const QRect in_view = view.mapFromScene(view.chart()->plotArea()).boundingRect();
  const QRect area =
      QRect(view.mapTo(&widget, in_view.topLeft()), in_view.size()).intersected(widget.rect());
  const QRect pixels(static_cast<int>(area.left() * dpr), static_cast<int>(area.top() * dpr),
                     static_cast<int>(area.width() * dpr), static_cast<int>(area.height() * dpr));
  int count = 0;
  for (int y = pixels.top(); y <= pixels.bottom() && y < image.height(); ++y) {
    for (int x = pixels.left(); x <= pixels.right() && x < image.width(); ++x) {
      const QColor c = image.pixelColor(x, y);
      count += std::abs(c.red() - colour.red()) <= kTolerance &&
               std::abs(c.green() - colour.green()) <= kTolerance &&
               std::abs(c.blue() - colour.blue()) <= kTolerance;
    }
  }
  return count;
}

bool save_chart_image(QWidget& widget, const QString& title, const QString& path, QString* error) {
  const auto fail = [error](const QString& message) {
    if (error) *error = message;
    return false;
  };
  if (const QString refused = output_refusal(path); !refused.isEmpty()) return fail(refused);
  const QString suffix = QFileInfo(path).suffix().toLower();
  const bool svg = suffix == QLatin1String("svg");
  const QByteArray format = suffix.isEmpty() ? QByteArray("png") : suffix.toLatin1();
  if (!svg && !QImageWriter::supportedImageFormats().contains(format)) {
    return fail(cannot_write(path, QObject::tr("unknown image format \".%1\"").arg(suffix)));
  }
  // QSaveFile: a failed export leaves no half-written file, and a full disk shows in commit().
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return fail(cannot_write(path, file.errorString()));
  if (svg) {
    const QRect area = widget.rect();
    QSvgGenerator generator;
    generator.setOutputDevice(&file);
    generator.setSize(area.size());
    generator.setViewBox(area);
    generator.setTitle(title);
    generator.setResolution(widget.logicalDpiX());  // the physical size the screen shows
    QPainter painter;
    if (!painter.begin(&generator)) return fail(cannot_write(path, QObject::tr("SVG failed")));
    // QWidget::render, like grab(), lays out a widget that was never shown; the chart's items
    // paint through the painter, so lines and text stay vectors.
    widget.render(&painter);
    painter.end();
  } else if (!widget.grab().save(&file, format.constData())) {
    return fail(cannot_write(path, QObject::tr("could not encode %1").arg(QString(format))));
  }
  if (!file.commit()) return fail(cannot_write(path, file.errorString()));
  return true;
}

}  // namespace mixlab::ui
