// The chart adapter: min/max decimation against a brute-force reference, LineChart, BarChart,
// PlotChart and StackedBarChart on the offscreen platform (point counts, log axes, hover, palette,
// image export).
#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QFile>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QValueAxis>
#include <QImage>
#include <QTemporaryDir>
#include <QToolTip>
#include <QXYSeries>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "app/store/run_store.h"
#include "ui/charts/chart.h"
#include "ui/charts/decimate.h"

using mixlab::ui::BarChart;
using mixlab::ui::decimate_minmax;
using mixlab::ui::KeepPoints;
using mixlab::ui::LineChart;
using mixlab::ui::MinMaxDecimator;
using mixlab::ui::StackedBarChart;
using mixlab::ui::PlotChart;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Sorted x with random gaps (some repeated x), y noise with spikes.
std::vector<QPointF> random_points(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> gap(0.0, 2.0);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<QPointF> points;
  points.reserve(n);
  double x = -37.5;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 7 != 3) x += gap(rng);  // every seventh point shares the previous x
    double y = std::sin(x / 50.0) + 0.1 * noise(rng);
    if (i % 997 == 0) y += 25.0 * noise(rng);
    points.emplace_back(x, y);
  }
  return points;
}

// The column a point falls in, computed as the decimator does (a different rounding at a
// boundary would only move the comparison's goalposts, not test anything).
int column_of(double x, double x_lo, double x_hi, int columns) {
  const double at = std::clamp((x - x_lo) * (columns / (x_hi - x_lo)), 0.0, columns - 1.0);
  return static_cast<int>(at);
}

struct Extremes {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  std::size_t count = 0;
};

std::vector<Extremes> column_extremes(const std::vector<QPointF>& points, double x_lo, double x_hi,
                                      int columns) {
  std::vector<Extremes> extremes(static_cast<std::size_t>(columns));
  for (const QPointF& p : points) {
    if (std::isnan(p.y())) continue;
    Extremes& e = extremes[static_cast<std::size_t>(column_of(p.x(), x_lo, x_hi, columns))];
    e.min = std::min(e.min, p.y());
    e.max = std::max(e.max, p.y());
    ++e.count;
  }
  return extremes;
}

bool same_point(QPointF a, QPointF b) {
  return a.x() == b.x() && a.y() == b.y();
}

std::vector<QPointF> ramp(std::size_t n) {
  std::vector<QPointF> points;
  points.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i);
    points.emplace_back(x, 10.0 + 5.0 * std::sin(x / 1000.0) + (i % 13 == 0 ? 3.0 : 0.0));
  }
  return points;
}

bool all_one_colour(const QImage& image) {
  const QRgb first = image.pixel(0, 0);
  for (int y = 0; y < image.height(); ++y) {
    for (int x = 0; x < image.width(); ++x) {
      if (image.pixel(x, y) != first) return false;
    }
  }
  return true;
}

QByteArray read_all(const QString& path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// Shows a chart at a size and waits until the (offscreen) window is exposed.
bool show_at(QWidget& chart, int width, int height) {
  chart.resize(width, height);
  chart.show();
  return QTest::qWaitForWindowExposed(&chart);
}

// A chart saves a PNG that is a picture (not one colour) and a vector SVG in `dir` as `name`.*.
template <class Chart>
void check_saves_png_and_svg(Chart& chart, const QTemporaryDir& dir, const QString& name) {
  QString error;
  const QString png = dir.filePath(name + QStringLiteral(".png"));
  QVERIFY2(chart.save_image(png, &error), qPrintable(error));
  QImage image;
  QVERIFY(image.load(png));
  QCOMPARE(image.size(), chart.size());
  QVERIFY(!all_one_colour(image));

  const QString svg = dir.filePath(name + QStringLiteral(".svg"));
  QVERIFY2(chart.save_image(svg, &error), qPrintable(error));
  const QByteArray text = read_all(svg);
  QVERIFY(text.startsWith("<?xml"));
  QVERIFY(text.contains("<svg"));
  QVERIFY(text.contains("<path") || text.contains("<polyline"));
  QVERIFY(!text.contains("<image"));  // vectors, not a picture of them
}

}  // namespace

class ChartTest : public QObject {
  Q_OBJECT

 private slots:
  void decimation_keeps_each_columns_min_and_max() {
    for (const int columns : {1, 7, 300, 1200}) {
      const std::vector<QPointF> in = random_points(200'000, static_cast<unsigned>(columns));
      const std::vector<QPointF> out = decimate_minmax(in, columns);
      QVERIFY(out.size() <= 4 * static_cast<std::size_t>(columns));
      QVERIFY(same_point(out.front(), in.front()));
      QVERIFY(same_point(out.back(), in.back()));
      QVERIFY(std::is_sorted(out.begin(), out.end(),
                             [](QPointF a, QPointF b) { return a.x() < b.x(); }));
      const double x_lo = in.front().x(), x_hi = in.back().x();
      const auto want = column_extremes(in, x_lo, x_hi, columns);
      const auto got = column_extremes(out, x_lo, x_hi, columns);
      for (int c = 0; c < columns; ++c) {
        const auto i = static_cast<std::size_t>(c);
        QCOMPARE(got[i].count > 0, want[i].count > 0);
        QCOMPARE(got[i].min, want[i].min);
        QCOMPARE(got[i].max, want[i].max);
      }
      // Every point given back is one of the input's.
      for (const QPointF& p : out) {
        const auto it = std::lower_bound(in.begin(), in.end(), p.x(),
                                         [](QPointF q, double x) { return q.x() < x; });
        bool found = false;
        for (auto j = it; j != in.end() && j->x() == p.x(); ++j) found = found || same_point(*j, p);
        QVERIFY(found);
      }
    }
  }

  void decimation_leaves_small_inputs_untouched() {
    const std::vector<QPointF> in = random_points(200, 1);
    const std::vector<QPointF> out = decimate_minmax(in, 100);
    QCOMPARE(out.size(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) QVERIFY(same_point(out[i], in[i]));
    QCOMPARE(decimate_minmax({}, 100).size(), std::size_t{0});
    QCOMPARE(decimate_minmax(std::vector<QPointF>{{1.0, 2.0}}, 100).size(), std::size_t{1});
  }

  void decimation_skips_nan() {
    std::vector<QPointF> in = random_points(50'000, 2);
    for (std::size_t i = 5; i < in.size(); i += 11) in[i].setY(kNaN);
    // A column of NaN only: it stays empty.
    for (std::size_t i = 20'000; i < 20'400; ++i) in[i].setY(kNaN);
    const int columns = 250;
    const std::vector<QPointF> out = decimate_minmax(in, columns);
    QVERIFY(std::none_of(out.begin(), out.end(), [](QPointF p) { return std::isnan(p.y()); }));
    const auto want = column_extremes(in, in.front().x(), in.back().x(), columns);
    const auto got = column_extremes(out, in.front().x(), in.back().x(), columns);
    for (std::size_t c = 0; c < want.size(); ++c) {
      QCOMPARE(got[c].count > 0, want[c].count > 0);
      QCOMPARE(got[c].min, want[c].min);
      QCOMPARE(got[c].max, want[c].max);
    }
    const std::vector<QPointF> small{{0, 1}, {1, kNaN}, {2, 3}};
    QCOMPARE(decimate_minmax(small, 100).size(), std::size_t{2});
  }

  // The live path: adding points in chunks gives what adding them at once gives.
  void streaming_decimation_matches_one_pass() {
    const std::vector<QPointF> in = random_points(100'000, 3);
    const double x_lo = in.front().x() - 10.0, x_hi = in.back().x() + 10.0;
    MinMaxDecimator once(x_lo, x_hi, 640, KeepPoints::finite);
    once.add(in);
    MinMaxDecimator chunks(x_lo, x_hi, 640, KeepPoints::finite);
    std::mt19937 rng(4);
    for (std::size_t at = 0; at < in.size();) {
      const std::size_t n = std::min<std::size_t>(in.size() - at, rng() % 90);
      chunks.add(std::span<const QPointF>(in).subspan(at, n));
      at += n;
      QCOMPARE(chunks.size(), chunks.result().size());
    }
    const auto a = once.result(), b = chunks.result();
    QCOMPARE(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) QVERIFY(same_point(a[i], b[i]));
  }

  void million_points_plot_a_few_thousand() {
    LineChart chart(QStringLiteral("Step time"), QStringLiteral("step"), QStringLiteral("ms"));
    QVERIFY(show_at(chart, 800, 500));
    const int series = chart.add_series(QStringLiteral("run 1"));
    chart.set_points(series, ramp(1'000'000));
    QCoreApplication::processEvents();
    QCOMPARE(chart.point_count(series), std::size_t{1'000'000});
    QVERIFY(chart.plotted_count(series) > 100);
    QVERIFY2(chart.plotted_count(series) <= 4 * 800,
             qPrintable(QString::number(chart.plotted_count(series))));

    // The live path: a few dozen points at a time.
    std::vector<QPointF> more;
    for (int i = 0; i < 40; ++i) more.emplace_back(1'000'000 + i, 12.0);
    chart.append_points(series, more);
    QCOMPARE(chart.point_count(series), std::size_t{1'000'040});
    QVERIFY(chart.plotted_count(series) <= 4 * 800);
    chart.append_points(series, {});
    QCOMPARE(chart.point_count(series), std::size_t{1'000'040});

    chart.clear();
    QCOMPARE(chart.point_count(series), std::size_t{0});
    QCOMPARE(chart.plotted_count(series), std::size_t{0});
    chart.remove_all_series();
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, chart.point_count(series));
  }

  void appending_plots_what_setting_plots() {
    // Two charts of one size: one fed live, one given every point at once.
    LineChart live(QString(), QStringLiteral("step"), QStringLiteral("ms"));
    LineChart whole(QString(), QStringLiteral("step"), QStringLiteral("ms"));
    for (LineChart* chart : {&live, &whole}) {
      QVERIFY(show_at(*chart, 600, 400));
      chart->add_series(QStringLiteral("loss"));
    }
    const std::vector<QPointF> points = random_points(30'000, 5);
    for (std::size_t at = 0; at < points.size(); at += 37) {
      const std::size_t n = std::min<std::size_t>(37, points.size() - at);
      live.append_points(0, std::span<const QPointF>(points).subspan(at, n));
    }
    whole.set_points(0, points);
    QCoreApplication::processEvents();
    QCOMPARE(live.point_count(0), points.size());
    QCOMPARE(live.plotted_count(0), whole.plotted_count(0));
  }

  void appended_points_are_drawn_at_the_next_refresh_not_before() {
    // What the screenshot tour waits for: live points reach the plot at its next refresh (at
    // most 10 a second), and until then the chart says so and paints no curve.
    LineChart chart(QStringLiteral("Step time"), QStringLiteral("step"), QStringLiteral("ms"));
    QVERIFY(show_at(chart, 600, 400));
    const int series = chart.add_series(QStringLiteral("step ms"));
    QCOMPARE(chart.curve_pixel_count(series), 0);
    const std::vector<QPointF> points = random_points(300, 3);
    chart.append_points(series, points);
    QVERIFY(chart.drawing_pending());
    QCOMPARE(chart.drawn_count(series), std::size_t{0});
    QCOMPARE(chart.curve_pixel_count(series), 0);
    QTRY_VERIFY_WITH_TIMEOUT(!chart.drawing_pending(), 2000);  // the refresh, not a flush
    const std::size_t drawn = chart.drawn_count(series);
    QVERIFY(drawn > 0);
    QCOMPARE(chart.plotted_count(series), drawn);  // nothing was left for a flush
    QVERIFY(chart.curve_pixel_count(series) > 100);
  }

  void points_appended_while_hidden_are_drawn_when_shown() {
    // A run that ends before its chart is first shown (a 300-step run takes under 100 ms).
    QWidget parent;
    parent.resize(600, 400);
    auto* chart = new LineChart(QStringLiteral("Loss"), QStringLiteral("step"),
                                QStringLiteral("loss"), &parent);
    chart->resize(600, 400);
    const int series = chart->add_series(QStringLiteral("train"));
    chart->append_points(series, random_points(300, 4));
    QCoreApplication::processEvents();
    QVERIFY(!chart->isVisible());
    parent.show();
    QVERIFY(QTest::qWaitForWindowExposed(&parent));
    QVERIFY(!chart->drawing_pending());
    QVERIFY(chart->drawn_count(series) > 0);
    QVERIFY(chart->curve_pixel_count(series) > 100);
  }

  void log_scale_drops_non_positive_values() {
    LineChart chart(QStringLiteral("Loss scale"), QStringLiteral("step"), QStringLiteral("scale"));
    QVERIFY(show_at(chart, 800, 500));
    const int series = chart.add_series(QStringLiteral("scale"));
    std::vector<QPointF> points;
    for (int i = 0; i < 60; ++i) points.emplace_back(i, std::pow(2.0, i % 20) - (i % 10 == 0));
    // 0 at i = 0, 20, 40 (2^0 - 1); negative nowhere else; one NaN and one infinity.
    points[5].setY(kNaN);
    points[6].setY(std::numeric_limits<double>::infinity());
    chart.set_points(series, points);
    QCOMPARE(chart.plotted_count(series), std::size_t{58});
    chart.set_y_scale(LineChart::Scale::log10);
    QCOMPARE(chart.plotted_count(series), std::size_t{55});
    QCOMPARE(chart.point_count(series), std::size_t{60});
    chart.append_points(series, std::vector<QPointF>{{60, -3.0}, {61, 1e6}});
    QCOMPARE(chart.plotted_count(series), std::size_t{56});
    chart.set_y_scale(LineChart::Scale::linear);
    QCOMPARE(chart.plotted_count(series), std::size_t{60});
    // A log axis with nothing positive to show still works.
    const int zeros = chart.add_series(QStringLiteral("zeros"), LineChart::Kind::markers);
    chart.set_points(zeros, std::vector<QPointF>{{0, 0.0}, {1, -1.0}});
    chart.set_y_scale(LineChart::Scale::log10);
    QCOMPARE(chart.plotted_count(zeros), std::size_t{0});
    QCoreApplication::processEvents();
  }

  void hover_shows_the_nearest_original_point() {
    LineChart chart(QStringLiteral("Step time"), QStringLiteral("step"), QStringLiteral("ms"));
    QVERIFY(show_at(chart, 800, 500));
    const int series = chart.add_series(QStringLiteral("run 7"));
    std::vector<QPointF> points = ramp(1'000'000);
    points[123'456].setY(42.125);
    chart.set_points(series, std::move(points));
    auto* view = chart.findChild<QChartView*>();
    QVERIFY(view);
    auto* plot = qobject_cast<QXYSeries*>(view->chart()->series().at(0));
    QVERIFY(plot);
    emit plot->hovered(QPointF(123'456.3, 20.0), true);
    const QString text = QToolTip::text();
    QVERIFY2(text.contains(QStringLiteral("run 7")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("step: 123456")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("ms: 42.125")), qPrintable(text));
    emit plot->hovered(QPointF(123'456.3, 20.0), false);
  }

  void palette_picks_the_background() {
    LineChart chart(QStringLiteral("Loss"), QStringLiteral("step"), QStringLiteral("loss"));
    QVERIFY(show_at(chart, 400, 300));
    chart.set_points(chart.add_series(QStringLiteral("loss")), ramp(1000));
    for (const QColor window : {QColor(30, 30, 34), QColor(250, 250, 245)}) {
      QPalette palette = chart.palette();
      palette.setColor(QPalette::Window, window);
      palette.setColor(QPalette::WindowText, window.lightness() < 128 ? Qt::white : Qt::black);
      chart.setPalette(palette);
      QCoreApplication::processEvents();
      const QImage image = chart.grab().toImage();
      QCOMPARE(QColor(image.pixel(2, 2)), window);
    }
  }

  void line_chart_saves_png_and_svg() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    LineChart chart(QStringLiteral("Step time"), QStringLiteral("step"), QStringLiteral("ms"));
    QVERIFY(show_at(chart, 640, 400));
    chart.set_points(chart.add_series(QStringLiteral("float32")), ramp(100'000));
    chart.set_points(chart.add_series(QStringLiteral("skipped"), LineChart::Kind::markers),
                     {{10'000, 12.0}, {50'000, 14.0}});
    QCoreApplication::processEvents();
    check_saves_png_and_svg(chart, dir, QStringLiteral("chart"));
  }

  // A chart as short as the Live tab's six on a 1366x768 screen (160 px) gives its frame's height
  // to the plot: Qt's default frame (a 9 px layout margin and 20 px around the plot) left a plot of
  // 20 px there. Measured against a QChart with Qt's defaults and the same texts, so that the
  // fonts of the machine cancel out.
  void a_short_chart_gives_its_height_to_the_plot() {
    LineChart chart(QStringLiteral("Step time"), QStringLiteral("step"), QStringLiteral("ms"));
    QVERIFY(show_at(chart, 460, 160));
    chart.set_points(chart.add_series(QStringLiteral("float32")), ramp(300));
    chart.set_points(chart.add_series(QStringLiteral("mixed")), ramp(300));  // shows the legend
    QCoreApplication::processEvents();
    const QChartView* view = chart.findChild<QChartView*>();
    QVERIFY(view != nullptr);
    const double ours = view->chart()->plotArea().height();

    auto* plain = new QChart;  // Qt's defaults, MixLab's texts
    plain->setTitle(QStringLiteral("Step time"));
    auto* x = new QValueAxis;
    auto* y = new QValueAxis;
    x->setTitleText(QStringLiteral("step"));
    y->setTitleText(QStringLiteral("ms"));
    plain->addAxis(x, Qt::AlignBottom);
    plain->addAxis(y, Qt::AlignLeft);
    for (const char* name : {"float32", "mixed"}) {
      auto* series = new QLineSeries;
      series->setName(QString::fromLatin1(name));
      series->append(0, 0);
      series->append(300, 300);
      plain->addSeries(series);
      series->attachAxis(x);
      series->attachAxis(y);
    }
    plain->legend()->setAlignment(Qt::AlignBottom);
    QChartView reference(plain);
    reference.resize(460, 160);
    reference.show();
    QVERIFY(QTest::qWaitForWindowExposed(&reference));
    QCoreApplication::processEvents();
    const double qt_default = plain->plotArea().height();
    QVERIFY2(ours >= qt_default + 20, qPrintable(QStringLiteral("plot %1 px, %2 px with Qt's frame")
                                                     .arg(ours)
                                                     .arg(qt_default)));
  }

  void saving_where_it_cannot_fails_naming_the_file() {
    LineChart chart(QStringLiteral("Step time"), QStringLiteral("step"), QStringLiteral("ms"));
    chart.resize(320, 200);
    QString error;
    QVERIFY(!chart.save_image(QStringLiteral("/proc/x.png"), &error));
    QVERIFY2(error.contains(QStringLiteral("/proc/x.png")), qPrintable(error));
    error.clear();
    QVERIFY(!chart.save_image(QStringLiteral("/proc/x.svg"), &error));
    QVERIFY2(error.contains(QStringLiteral("/proc/x.svg")), qPrintable(error));
    QTemporaryDir dir;
    const QString odd = dir.filePath(QStringLiteral("chart.notaformat"));
    QVERIFY(!chart.save_image(odd, &error));
    QVERIFY2(error.contains(odd), qPrintable(error));
    QVERIFY(!QFile::exists(odd));
    QVERIFY(!chart.save_image(QStringLiteral("/proc/x.png")));  // no error wanted: no crash
    // Never over a run database (issue 25): refused by store::check_output_target.
    const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
    mixlab::store::RunStore::open(QFile::encodeName(db).toStdString());
    const QByteArray before = read_all(db);
    QVERIFY(!chart.save_image(db, &error));
    QVERIFY2(error.contains(QStringLiteral("run database")), qPrintable(error));
    QCOMPARE(read_all(db), before);
  }

  void a_chart_never_shown_saves_too() {
    QTemporaryDir dir;
    LineChart chart(QStringLiteral("Hidden"), QStringLiteral("step"), QStringLiteral("ms"));
    chart.resize(500, 300);
    chart.set_points(chart.add_series(QStringLiteral("a")), ramp(5000));
    check_saves_png_and_svg(chart, dir, QStringLiteral("hidden"));
    QVERIFY(read_all(dir.filePath(QStringLiteral("hidden.svg"))).contains("Hidden"));  // title
  }

  void layer_time_chart_shows_one_stacked_bar_per_layer() {
    QTemporaryDir dir;
    mixlab::ui::LayerTimeChart chart(QStringLiteral("Per-layer time"));
    QVERIFY(show_at(chart, 640, 400));
    QCOMPARE(chart.bar_pixel_count(), 0);
    chart.set_rows({{QStringLiteral("0 Dense 3000, relu"), 4.0, 7.5},
                    {QStringLiteral("1 Dense 10"), 0.25, 0.5},
                    {QStringLiteral("1 Dense 10"), 0.5, kNaN}});  // equal names stay apart
    QCOMPARE(chart.row_count(), std::size_t{3});
    QCoreApplication::processEvents();
    QVERIFY(chart.bar_pixel_count() > 500);
    check_saves_png_and_svg(chart, dir, QStringLiteral("layers"));
    chart.set_rows({});
    QCOMPARE(chart.row_count(), std::size_t{0});
    QCOMPARE(chart.bar_pixel_count(), 0);
  }

  void plot_chart_places_points_on_log_axes_and_names_them_on_hover() {
    QTemporaryDir dir;
    PlotChart chart(QStringLiteral("Roofline"), QStringLiteral("FLOP/byte"),
                  QStringLiteral("FLOP/s"), PlotChart::Scale::log10, PlotChart::Scale::log10);
    QVERIFY(show_at(chart, 640, 400));
    const int roof = chart.add_series(QStringLiteral("roof"), PlotChart::Kind::dashed_line);
    const int points = chart.add_series(QStringLiteral("items"), PlotChart::Kind::markers, roof);
    QCOMPARE(chart.series_count(), 2);
    QCOMPARE(chart.series_kind(roof), PlotChart::Kind::dashed_line);
    chart.set_points(roof, {{0.1, 1e9}, {10.0, 1e11}, {1000.0, 1e11}});
    // Any order; a log axis leaves out what it cannot place (0, negative, NaN).
    chart.set_points(points, {{50.0, 5e10}, {0.0, 1e9}, {2.0, -1.0}, {0.5, 3e9}, {kNaN, 1.0}},
                     {QStringLiteral("dense forward"), QStringLiteral("a"), QStringLiteral("b"),
                      QStringLiteral("dense backward"), QStringLiteral("c")});
    QCOMPARE(chart.points(points).size(), std::size_t{5});
    QCOMPARE(chart.plotted_count(points), std::size_t{2});
    QCOMPARE(chart.plotted_count(roof), std::size_t{3});
    QCoreApplication::processEvents();
    QVERIFY(chart.curve_pixel_count(roof) > 20);
    auto* view = chart.findChild<QChartView*>();
    QVERIFY(view);
    // Each policy's points take its roof's colour.
    const QList<QAbstractSeries*> plots = view->chart()->series();
    QCOMPARE(qobject_cast<QXYSeries*>(plots.at(points))->color(),
             qobject_cast<QXYSeries*>(plots.at(roof))->color());
    // The axes span whole decades around the points.
    const auto* x_axis = qobject_cast<QLogValueAxis*>(view->chart()->axes(Qt::Horizontal).at(0));
    QVERIFY(x_axis);
    QCOMPARE(x_axis->min(), 0.1);
    QCOMPARE(x_axis->max(), 1000.0);
    emit qobject_cast<QXYSeries*>(plots.at(points))->hovered(QPointF(0.6, 2.5e9), true);
    QVERIFY2(QToolTip::text().startsWith(QStringLiteral("dense backward\nitems")),
             qPrintable(QToolTip::text()));
    check_saves_png_and_svg(chart, dir, QStringLiteral("xy"));
    chart.clear();
    QCOMPARE(chart.plotted_count(roof), std::size_t{0});
  }

  void plot_chart_log2_axis_spans_powers_of_two() {
    PlotChart chart(QStringLiteral("Sweep"), QStringLiteral("batch"), QStringLiteral("speed-up"),
                  PlotChart::Scale::log2, PlotChart::Scale::linear);
    QVERIFY(show_at(chart, 640, 400));
    const int s = chart.add_series(QStringLiteral("predicted"), PlotChart::Kind::line);
    chart.set_points(s, {{8, 0.8}, {64, 1.1}, {4096, 2.5}});
    auto* view = chart.findChild<QChartView*>();
    const auto* x_axis = qobject_cast<QLogValueAxis*>(view->chart()->axes(Qt::Horizontal).at(0));
    QVERIFY(x_axis);
    QCOMPARE(x_axis->base(), 8.0);  // every third power of two labelled: 8, 64, 512, 4096
    QCOMPARE(x_axis->min(), 8.0);
    QCOMPARE(x_axis->max(), 4096.0);
    const auto* y_axis = qobject_cast<QValueAxis*>(view->chart()->axes(Qt::Vertical).at(0));
    QVERIFY(y_axis);
    QVERIFY(y_axis->min() <= 0.8 && y_axis->max() >= 2.5);
    QCoreApplication::processEvents();
    QVERIFY(chart.curve_pixel_count(s) > 20);
  }

  void stacked_bar_chart_stacks_segments_per_bar() {
    QTemporaryDir dir;
    StackedBarChart chart(QStringLiteral("Where the time goes"), QStringLiteral("ms"));
    QVERIFY(show_at(chart, 640, 400));
    QCOMPARE(chart.bar_count(), std::size_t{0});
    chart.set_bars({QStringLiteral("float32"), QStringLiteral("mixed_float16")},
                   {{QStringLiteral("matmul"), {6.0, 2.0}},
                    {QStringLiteral("optimizer"), {4.0, 5.0}},
                    {QStringLiteral("casts"), {0.0}}});  // a missing value counts 0
    QCOMPARE(chart.bar_count(), std::size_t{2});
    QCOMPARE(chart.segment_count(), std::size_t{3});
    QCOMPARE(chart.bar_total(0), 10.0);
    QCOMPARE(chart.bar_total(1), 7.0);
    QCoreApplication::processEvents();
    QVERIFY(chart.bar_pixel_count() > 500);
    check_saves_png_and_svg(chart, dir, QStringLiteral("stacked"));
    chart.set_bars({}, {});
    QCOMPARE(chart.bar_count(), std::size_t{0});
    QCOMPARE(chart.bar_pixel_count(), 0);
  }

  void bar_chart_shows_bars_and_saves() {
    QTemporaryDir dir;
    BarChart chart(QStringLiteral("Median step time"), QStringLiteral("ms"));
    QVERIFY(show_at(chart, 640, 400));
    QCOMPARE(chart.bar_count(), std::size_t{0});
    chart.set_bars({{QStringLiteral("float32"), 12.5, 11.0, 15.0},
                    {QStringLiteral("mixed_float16"), 9.0, 8.5, 13.0},
                    {QStringLiteral("mixed_float16"), 9.5, kNaN, kNaN},
                    {QStringLiteral("mixed_bfloat16"), 10.0, kNaN, 11.0}});
    QCOMPARE(chart.bar_count(), std::size_t{4});
    QCoreApplication::processEvents();
    QVERIFY(chart.bar_pixel_count() > 1000);  // four bars of ~80 x 100-250 px
    check_saves_png_and_svg(chart, dir, QStringLiteral("bars"));
    QString error;
    QVERIFY(!chart.save_image(QStringLiteral("/proc/bars.png"), &error));
    QVERIFY2(error.contains(QStringLiteral("/proc/bars.png")), qPrintable(error));

    chart.set_bars({{QStringLiteral("one"), 3.0, 2.0, 4.0}});
    QCOMPARE(chart.bar_count(), std::size_t{1});
    chart.set_bars({});
    QCOMPARE(chart.bar_count(), std::size_t{0});
    QCOMPARE(chart.bar_pixel_count(), 0);
  }
};

QTEST_MAIN(ChartTest)
#include "chart_test.moc"
