#include "ui/screenshot_tour.h"

#include <QApplication>
#include <QDir>
#include <QImage>
#include <QPixmap>
#include <QSet>
#include <QTabWidget>
#include <QTimer>

#include "ui/editor/editor_widget.h"
#include "ui/history/compare_view.h"
#include "ui/main_window.h"
#include "ui/run/live_view.h"
#include "ui/run/run_panel.h"

namespace mixlab::ui {

namespace {
constexpr int kMinColours = 16;  // text, charts and widgets give hundreds
}

ScreenshotTour::ScreenshotTour(MainWindow* window, QString out_dir, int steps, QObject* parent)
    : QObject(parent), window_(window), out_dir_(std::move(out_dir)), steps_(steps) {}

int ScreenshotTour::colour_count(const QImage& image) {
  QSet<QRgb> colours;
  const int step = std::max(1, std::min(image.width(), image.height()) / 200);
  for (int y = 0; y < image.height(); y += step)
    for (int x = 0; x < image.width(); x += step) colours.insert(image.pixel(x, y));
  return static_cast<int>(colours.size());
}

bool ScreenshotTour::save(QWidget* widget, const QString& name, bool process_events) {
  if (process_events) QApplication::processEvents();
  const QString path = QDir(out_dir_).filePath(name);
  const QImage image = widget->grab().toImage();
  if (!image.save(path)) {
    failure_ = tr("cannot write %1").arg(path);
    return false;
  }
  files_ << path;
  const int colours = colour_count(image);
  if (colours < kMinColours) {
    failure_ = tr("%1 looks blank: %2 colours").arg(path).arg(colours);
    return false;
  }
  return true;
}

void ScreenshotTour::start() {
  if (!QDir().mkpath(out_dir_)) {
    emit finished(false, tr("cannot create %1").arg(out_dir_), files_);
    return;
  }
  RunPanel* panel = window_->run_panel();
  panel->set_dataset(QStringLiteral("synthetic"));
  panel->set_steps(steps_);
  window_->tabs()->setCurrentWidget(window_->editor());
  if (!save(window_, QStringLiteral("editor.png"))) {
    emit finished(false, failure_, files_);
    return;
  }
  connect(window_->controller(), &app::RunController::run_finished, this, [this] {
    // The first run's charts, complete, before the second run clears them.
    if (live_saved_) return;
    live_saved_ = true;
    // Now, before the next run's start (already queued) clears the charts: only layout
    // requests are processed, not the queued signals.
    window_->tabs()->setCurrentWidget(window_->live_view());
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    if (!save(window_, QStringLiteral("live.png"), false)) emit finished(false, failure_, files_);
  });
  connect(window_->controller(), &app::RunController::queue_finished, this, [this] {
    QTimer::singleShot(0, this, [this] {
      if (!failure_.isEmpty()) return;
      const bool ok = save(window_, QStringLiteral("compare.png"));
      emit finished(ok, ok ? tr("saved %1").arg(files_.join(QStringLiteral(", "))) : failure_,
                    files_);
    });
  });
  if (!window_->start_precision_comparison())
    emit finished(false, tr("the comparison could not start"), files_);
}

}  // namespace mixlab::ui
