// Reads runs' step curves (step time and loss against step or elapsed time) on a thread of its
// own, so that comparing runs of a million steps each leaves the window responsive: reading one
// such run takes about half a second.
//
// The thread opens its own read-only RunStore connection and hands each run's points to the GUI
// thread as values. A new load() cancels the one in progress; results of a cancelled load never
// arrive.
#pragma once

#include <QList>
#include <QObject>
#include <QPointF>
#include <QString>
#include <filesystem>
#include <thread>
#include <vector>

namespace mixlab::ui {

struct RunCurves {
  qint64 run_id = 0;
  std::vector<QPointF> step_ms;  // (x, step time in ms)
  std::vector<QPointF> loss;     // (x, loss)
};

class CurveLoader : public QObject {
  Q_OBJECT

 public:
  explicit CurveLoader(std::filesystem::path db_path, QObject* parent = nullptr);
  ~CurveLoader() override;  // cancels and waits for the thread

  // Starts reading `run_ids` in order; x is the elapsed seconds with `by_time`, else the step.
  void load(const QList<qint64>& run_ids, bool by_time);
  void cancel();
  bool busy() const { return busy_; }

 signals:
  void loaded(const RunCurves& curves);  // one per run, in load()'s order
  void finished();                       // every run of the load is in
  void failed(const QString& message);   // the load stopped here

 private:
  std::filesystem::path db_path_;
  std::jthread worker_;
  int generation_ = 0;  // of the load whose results count (GUI thread only)
  bool busy_ = false;
};

}  // namespace mixlab::ui
