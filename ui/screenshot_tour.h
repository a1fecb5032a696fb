// The screenshot tour: the real application drives itself through a short float32-vs-mixed
// comparison and saves the editor, the live charts and the comparison as PNG files, each
// checked to be more than a blank window. `mixlab --screenshot-tour DIR` runs it (the README's
// screenshots and scripts/gui-screenshots.sh, which runs it under xvfb-run).
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

namespace mixlab::ui {

class MainWindow;

class ScreenshotTour : public QObject {
  Q_OBJECT

 public:
  // `steps`: the length of each of the two runs.
  ScreenshotTour(MainWindow* window, QString out_dir, int steps, QObject* parent = nullptr);
  void start();

  // Distinct colours in an image, sampled: a blank window has one or two.
  static int colour_count(const QImage& image);

 signals:
  // Every screenshot saved and non-blank (ok), or why not; the files saved so far.
  void finished(bool ok, const QString& message, const QStringList& files);

 private:
  bool save(QWidget* widget, const QString& name, bool process_events = true);

  MainWindow* window_;
  QString out_dir_;
  int steps_;
  QStringList files_;
  QString failure_;
  bool live_saved_ = false;
};

}  // namespace mixlab::ui
