#include "ui/screenshot_tour.h"

#include <QApplication>
#include <QCheckBox>
#include <QDeadlineTimer>
#include <QDir>
#include <QImage>
#include <QLineEdit>
#include <QPixmap>
#include <QSet>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTimer>
#include <memory>

#include "engine/train/run_fields.h"
#include "resources/builtin_models.h"
#include "ui/charts/chart.h"
#include "ui/doctor/doctor_charts.h"
#include "ui/doctor/doctor_view.h"
#include "ui/editor/canvas_items.h"
#include "ui/editor/editor_widget.h"
#include "ui/editor/model_canvas.h"
#include "ui/editor/model_document.h"
#include "ui/history/compare_view.h"
#include "ui/history/sweeps_view.h"
#include "ui/main_window.h"
#include "ui/run/live_view.h"
#include "ui/run/run_panel.h"
#include "ui/run/sweep_dialog.h"
#include "ui/run/sweep_runner.h"

namespace mixlab::ui {

namespace {
constexpr int kMinColours = 16;      // text, charts and widgets give hundreds
constexpr int kMinCurvePixels = 20;  // a curve across a plot covers hundreds; a marker ~30
constexpr int kPollMs = 20;
// The live charts redraw at most ten times a second and the comparison reads its curves on a
// thread: a few hundred ms at most; this limit only stops a tour that would wait for ever.
constexpr int kDrawLimitMs = 20000;
}  // namespace

ScreenshotTour::ScreenshotTour(MainWindow* window, QString out_dir, int steps, QObject* parent)
    : QObject(parent), window_(window), out_dir_(std::move(out_dir)), steps_(steps) {}

int ScreenshotTour::colour_count(const QImage& image) {
  QSet<QRgb> colours;
  const int step = std::max(1, std::min(image.width(), image.height()) / 200);
  for (int y = 0; y < image.height(); y += step)
    for (int x = 0; x < image.width(); x += step) colours.insert(image.pixel(x, y));
  return static_cast<int>(colours.size());
}

QString ScreenshotTour::undrawn_curves(const QList<LineChart*>& charts) {
  for (LineChart* chart : charts) {
    if (chart->series_count() == 0 || chart->point_count(0) == 0)
      return tr("the %1 chart holds no points").arg(chart->title());
    if (chart->drawing_pending())
      return tr("the %1 chart has points not drawn yet").arg(chart->title());
    for (int s = 0; s < chart->series_count(); ++s) {
      if (chart->point_count(s) > 0 && chart->drawn_count(s) == 0)
        return tr("the %1 chart draws none of series %2's %3 points")
            .arg(chart->title())
            .arg(s)
            .arg(chart->point_count(s));
    }
    int top = -1;
    for (int s = 0; s < chart->series_count(); ++s) {
      if (chart->point_count(s) > 0 && chart->series_kind(s) == LineChart::Kind::line) top = s;
    }
    if (top < 0) continue;  // markers only
    const int pixels = chart->curve_pixel_count(top);
    if (pixels < kMinCurvePixels)
      return tr("the %1 chart's curve %2 covers %3 pixels of its plot (fewer than %4)")
          .arg(chart->title())
          .arg(top)
          .arg(pixels)
          .arg(kMinCurvePixels);
  }
  return {};
}

QString ScreenshotTour::undrawn_bars(const QList<BarChart*>& charts, int bars) {
  for (BarChart* chart : charts) {
    if (chart->bar_count() != static_cast<std::size_t>(bars))
      return tr("a bar chart shows %1 bars, not %2").arg(chart->bar_count()).arg(bars);
    const int pixels = chart->bar_pixel_count();
    if (pixels < kMinCurvePixels)
      return tr("a bar chart's bars cover %1 pixels of its plot (fewer than %2)")
          .arg(pixels)
          .arg(kMinCurvePixels);
  }
  return {};
}

bool ScreenshotTour::save(QWidget* widget, const QString& name) {
  const QString path = QDir(out_dir_).filePath(name);
  const QImage image = widget->grab().toImage();
  if (!image.save(path)) {
    fail(tr("cannot write %1").arg(path));
    return false;
  }
  files_ << path;
  const int colours = colour_count(image);
  if (colours < kMinColours) {
    fail(tr("%1 looks blank: %2 colours").arg(path).arg(colours));
    return false;
  }
  return true;
}

void ScreenshotTour::fail(const QString& message) {
  if (failed_) return;
  failed_ = true;
  emit finished(false, message, files_);
}

void ScreenshotTour::when_drawn(std::function<QString()> problem, std::function<void()> then) {
  auto* poll = new QTimer(this);
  poll->setInterval(kPollMs);
  const auto deadline = std::make_shared<QDeadlineTimer>(kDrawLimitMs);
  connect(poll, &QTimer::timeout, this, [this, poll, deadline, problem, then] {
    const QString why = problem();
    if (why.isEmpty()) {
      poll->deleteLater();
      poll->stop();
      then();
    } else if (deadline->hasExpired()) {
      poll->deleteLater();
      poll->stop();
      fail(tr("after %1 s: %2").arg(kDrawLimitMs / 1000).arg(why));
    }
  });
  poll->start();
}

void ScreenshotTour::start() {
  if (!QDir().mkpath(out_dir_)) {
    fail(tr("cannot create %1").arg(out_dir_));
    return;
  }
  RunPanel* panel = window_->run_panel();
  panel->set_dataset(QStringLiteral("synthetic"));
  panel->set_steps(steps_);
  panel->set_field_text(run_field("layer_timing"), QStringLiteral("true"));  // the layer chart
  window_->tabs()->setCurrentWidget(window_->editor());
  QApplication::processEvents();
  if (!save(window_, QStringLiteral("editor.png"))) return;
  if (!shoot_canvas()) return;
  // Both runs have ended and the window has heard (its handler, connected first, has drained
  // their last steps and opened the comparison): the Live tab shows the second run.
  // Once: the sweep's runs later end their queues too.
  connect(
      window_->feed(), &app::RunFeed::queue_finished, this,
      [this] { QTimer::singleShot(0, this, &ScreenshotTour::shoot_live); },
      Qt::SingleShotConnection);
  if (!window_->start_precision_comparison()) fail(tr("the comparison could not start"));
}

bool ScreenshotTour::shoot_canvas() {
  // The diagram beside the table, the first Dense layer selected in both, the whole model in
  // view.
  EditorWidget* editor = window_->editor();
  ModelCanvas* canvas = editor->canvas();
  const ModelSpec& spec = window_->document()->spec();
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    if (spec.layers[i].type == LayerType::Dense) {
      editor->select_layer(static_cast<int>(i));
      break;
    }
  }
  canvas->fit();
  QApplication::processEvents();
  if (canvas->block_count() != static_cast<int>(spec.layers.size())) {
    fail(tr("the canvas shows %1 blocks for %2 layers")
             .arg(canvas->block_count())
             .arg(spec.layers.size()));
    return false;
  }
  auto* area = editor->findChild<QWidget*>(QStringLiteral("canvas_table_splitter"));
  if (area == nullptr) {
    fail(tr("the editor has no canvas beside its table"));
    return false;
  }
  return save(area, QStringLiteral("canvas.png"));
}

bool ScreenshotTour::shoot_graph() {
  // The built-in resnet20 in the editor (last, when no run needs the model any more), its
  // blocks folded but the second, whose Add is selected (which opens it), at 3:4.
  window_->document()->reset(parse_model_json(*builtin_model_json("resnet20"), "resnet20"), {},
                             QStringLiteral("resnet20"));
  window_->tabs()->setCurrentWidget(window_->editor());
  EditorWidget* editor = window_->editor();
  ModelCanvas* canvas = editor->canvas();
  if (canvas->is_chain() || !canvas->layout().graphviz) {
    fail(tr("the canvas does not draw resnet20 as a graph: %1").arg(canvas->layout().problem));
    return false;
  }
  auto* area = editor->findChild<QSplitter*>(QStringLiteral("canvas_table_splitter"));
  if (area == nullptr) {
    fail(tr("the editor has no canvas beside its table"));
    return false;
  }
  // The canvas gets the room a graph wants, as a user drags the splitter.
  area->setSizes({area->width() * 3 / 5, area->width() * 2 / 5});
  canvas->fold_all();
  editor->find_layer(QStringLiteral("s1b2_add"), false);
  canvas->set_zoom(0.75);
  QApplication::processEvents();
  canvas->centerOn(canvas->block(editor->current_layer()));
  QApplication::processEvents();
  return save(area, QStringLiteral("graph.png"));
}

void ScreenshotTour::shoot_live() {
  window_->tabs()->setCurrentWidget(window_->live_view());
  LiveView* live = window_->live_view();
  const QList<LineChart*> charts{live->step_time_chart(), live->throughput_chart(),
                                 live->loss_chart(), live->accuracy_chart(),
                                 live->loss_scale_chart()};
  LayerTimeChart* layers = live->layer_chart();
  when_drawn(
      [charts, layers]() -> QString {
        QString why = undrawn_curves(charts);
        if (why.isEmpty() && layers->row_count() == 0)
          why = tr("the per-layer chart holds no layers");
        if (why.isEmpty() && layers->bar_pixel_count() < kMinCurvePixels)
          why = tr("the per-layer chart draws no bars");
        return why;
      },
             [this] {
               if (save(window_, QStringLiteral("live.png"))) shoot_compare();
             });
}

void ScreenshotTour::shoot_compare() {
  CompareView* compare = window_->compare_view();
  window_->tabs()->setCurrentWidget(compare);
  when_drawn(
      [compare]() -> QString {
        if (compare->run_ids().size() != 2)
          return tr("the comparison shows %1 runs, not 2").arg(compare->run_ids().size());
        if (compare->loading()) return tr("the comparison is still reading its runs' steps");
        QString why = undrawn_curves({compare->step_time_chart(), compare->loss_chart()});
        if (why.isEmpty())
          why = undrawn_bars({compare->median_chart(), compare->throughput_chart()}, 2);
        return why;
      },
      [this] {
        if (save(window_, QStringLiteral("compare.png"))) shoot_doctor();
      });
}

void ScreenshotTour::shoot_doctor() {
  // A GPU profile: a prediction, the same on every machine, with no roofs to measure first.
  DoctorView* doctor = window_->doctor_view();
  if (!doctor->select_device(QStringLiteral("RTX 2060"))) {
    fail(tr("the Doctor tab has no RTX 2060 profile"));
    return;
  }
  window_->tabs()->setCurrentWidget(doctor);
  doctor->refresh_now();
  DoctorCharts* charts = doctor->charts();
  when_drawn(
      [doctor, charts]() -> QString {
        if (doctor->diagnosis() == nullptr)
          return tr("the Doctor tab has no diagnosis: %1").arg(doctor->verdict_text());
        PlotChart* roofline = charts->roofline();
        for (const int s : {DoctorCharts::Float32Roof, DoctorCharts::MixedRoof,
                            DoctorCharts::PredictedFloat32, DoctorCharts::PredictedMixed}) {
          if (roofline->curve_pixel_count(s) < kMinCurvePixels)
            return tr("the roofline draws too little of %1").arg(roofline->series_name(s));
        }
        if (charts->time_breakdown()->bar_count() != 2 ||
            charts->time_breakdown()->bar_pixel_count() < kMinCurvePixels)
          return tr("the time breakdown does not draw its two bars");
        if (charts->sweep()->curve_pixel_count(DoctorCharts::Speedup) < kMinCurvePixels)
          return tr("the sweep draws no curve");
        return {};
      },
      [this] {
        if (save(window_, QStringLiteral("doctor.png"))) start_sweep();
      });
}

void ScreenshotTour::start_sweep() {
  // The editor's model, float32 and mixed_bfloat16 at three batch sizes, as the Sweep dialog
  // sets it up.
  store::SweepSpec spec;
  try {
    SweepDialog dialog(sweep_base(*window_->run_panel(), window_->sweep_model_name()), window_);
    dialog.precision_box(Policy::float32)->setChecked(true);
    dialog.precision_box(Policy::mixed_bfloat16)->setChecked(true);
    dialog.batch_sizes()->setText(QStringLiteral("16, 32, 64"));
    spec = dialog.spec();
  } catch (const Error& e) {
    fail(tr("the Sweep dialog refused its grid: %1").arg(QString::fromUtf8(e.what())));
    return;
  }
  connect(
      window_->sweep_runner(), &SweepRunner::sweep_ended, this,
      [this] { QTimer::singleShot(0, this, &ScreenshotTour::shoot_sweeps); },
      Qt::SingleShotConnection);
  if (!window_->start_sweep(spec))
    fail(tr("the sweep could not start: %1").arg(window_->statusBar()->currentMessage()));
}

void ScreenshotTour::shoot_sweeps() {
  SweepsView* sweeps = window_->sweeps_view();
  window_->tabs()->setCurrentWidget(sweeps);
  when_drawn(
      [sweeps]() -> QString {
        if (sweeps->point_table()->rowCount() != 6)
          return tr("the Sweeps tab shows %1 grid points, not 6")
              .arg(sweeps->point_table()->rowCount());
        PlotChart* chart = sweeps->chart();
        if (chart == nullptr || chart->series_count() < 1) return tr("the sweep chart is empty");
        if (chart->curve_pixel_count(0) < kMinCurvePixels)
          return tr("the sweep chart draws no curve");
        return {};
      },
      [this] {
        if (!save(window_, QStringLiteral("sweeps.png"))) return;
        if (!shoot_graph()) return;
        emit finished(true, tr("saved %1").arg(files_.join(QStringLiteral(", "))), files_);
      });
}

}  // namespace mixlab::ui
