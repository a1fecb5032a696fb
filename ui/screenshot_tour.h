// The screenshot tour: the real application drives itself through a short float32-vs-mixed
// comparison and saves the editor, its model canvas beside the table, the live charts, the
// comparison and the Doctor tab (an RTX 2060 profile's prediction) as PNG files. It waits until every chart has drawn its points
// and checks what a user would see: no window that is blank, no chart that should hold a curve
// and draws none (the points each chart holds, and pixels of each curve's colour inside its
// plot area). `mixlab --screenshot-tour DIR` runs
// it (the README's screenshots and scripts/gui-screenshots.sh, which runs it under xvfb-run).
#pragma once

#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <functional>

class QImage;
class QWidget;

namespace mixlab::ui {

class BarChart;
class LineChart;
class MainWindow;

class ScreenshotTour : public QObject {
  Q_OBJECT

 public:
  // `steps`: the length of each of the two runs.
  ScreenshotTour(MainWindow* window, QString out_dir, int steps, QObject* parent = nullptr);
  void start();

  // Distinct colours in an image, sampled: a blank window has one or two.
  static int colour_count(const QImage& image);
  // Why these charts do not yet show a run's curves, or empty when they do: each chart's first
  // series holds points, every series that holds points has been handed them (nothing waits
  // for a refresh), and the colour of the topmost line that holds points (drawn last, so no
  // other covers it) shows inside the plot area.
  static QString undrawn_curves(const QList<LineChart*>& charts);
  // The same for bar charts: each has `bars` bars and their colour shows inside its plot area.
  static QString undrawn_bars(const QList<BarChart*>& charts, int bars);

 signals:
  // Every screenshot saved and checked (ok), or why not; the files saved so far.
  void finished(bool ok, const QString& message, const QStringList& files);

 private:
  bool save(QWidget* widget, const QString& name);
  void fail(const QString& message);
  // Calls `then` once `problem` returns empty (checked every few ms while the event loop runs);
  // fails with its last answer when that takes longer than the time limit.
  void when_drawn(std::function<QString()> problem, std::function<void()> then);
  // The canvas beside the table (canvas.png); false when it failed.
  bool shoot_canvas();
  // resnet20's graph on the canvas (graph.png); false when it failed.
  bool shoot_graph();
  void shoot_live();
  void shoot_compare();
  void shoot_doctor();
  void start_sweep();
  void shoot_sweeps();

  MainWindow* window_;
  QString out_dir_;
  int steps_;
  QStringList files_;
  bool failed_ = false;
};

}  // namespace mixlab::ui
