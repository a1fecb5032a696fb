// The comparison of recorded runs: step time and loss overlaid (one series per run, against the
// step or the elapsed time), median step time with its p5–p95 spread and samples/s as bars, each
// run's speed against a baseline, and the settings in which the runs differ.
//
// Run records are read at once on the GUI thread (one row each); their steps are read by a
// CurveLoader on its own thread and drawn as they arrive, so that runs of a million steps do not
// freeze the window. The charts decimate what they draw.
#pragma once

#include <QList>
#include <QString>
#include <QWidget>
#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "app/store/run_record.h"
#include "ui/history/prompts.h"

class QComboBox;
class QLabel;
class QPushButton;
class QTableWidget;

namespace mixlab::store {
class RunStore;
}

namespace mixlab::ui {

class BarChart;
class CurveLoader;
class LineChart;
struct RunCurves;

class CompareView : public QWidget {
  Q_OBJECT

 public:
  enum class Chart { step_time, loss, median_step, throughput };
  // The speed table's columns.
  enum SpeedColumn {
    SpeedRun,
    SpeedPrecision,
    SpeedBatch,
    SpeedMedianMs,
    SpeedP5Ms,
    SpeedP95Ms,
    SpeedSamplesPerS,
    SpeedRatio,  // the baseline's median step time / this run's; Qt::UserRole holds the number
    SpeedCount
  };

  explicit CompareView(std::filesystem::path db_path, QWidget* parent = nullptr);
  ~CompareView() override;

  // Shows these runs, in this order; ids not in the store are left out with an error(). The
  // baseline becomes the first run.
  void show_runs(const QList<qint64>& run_ids);
  void set_baseline(qint64 run_id);
  // x = elapsed seconds instead of the step; remembered in settings::kCompareByTime.
  void set_x_by_time(bool by_time);

  QList<qint64> run_ids() const;
  qint64 baseline() const { return baseline_; }  // 0 without runs
  bool x_by_time() const { return by_time_; }
  bool loading() const;  // steps are still being read

  // Saves a chart as PNG or SVG (by the file's suffix); false and error() when it cannot.
  bool export_chart(Chart chart, const QString& path);
  void set_prompts(Prompts prompts) { prompts_ = std::move(prompts); }

  LineChart* step_time_chart() const { return step_time_chart_; }
  LineChart* loss_chart() const { return loss_chart_; }
  BarChart* median_chart() const { return median_chart_; }
  BarChart* throughput_chart() const { return throughput_chart_; }
  QTableWidget* speed_table() const { return speed_table_; }
  // One row per differing setting (its name in the vertical header), one column per run.
  QTableWidget* settings_table() const { return settings_table_; }
  // "Diagnose in the Doctor tab": enabled when the runs shown are a float32 vs mixed comparison
  // (one float32 run and one mixed run of the same model and batch size).
  QPushButton* diagnose_button() const { return diagnose_; }
  // That pair (float32 first), or {0, 0} when the runs shown are not one.
  std::pair<qint64, qint64> precision_pair() const;

 signals:
  void curves_loaded();  // every shown run's steps are on the charts
  void error(const QString& message);
  // The user asked for the diagnosis of a float32 vs mixed pair of runs.
  void diagnose_requested(qint64 float32_run, qint64 mixed_run);

 private:
  void build_layout();
  QWidget* with_export_button(QWidget* chart, Chart which, const QString& file_name);
  bool open_store();
  void load_curves();
  void show_curves(const RunCurves& curves);
  void update_bars();
  void update_speed_table();
  void update_settings_table();
  void ask_export(Chart which, const QString& file_name);
  void report(const QString& message);

  std::filesystem::path db_path_;
  std::unique_ptr<store::RunStore> store_;
  std::vector<store::RunRecord> runs_;
  qint64 baseline_ = 0;
  bool by_time_ = false;
  Prompts prompts_;

  CurveLoader* loader_ = nullptr;
  QComboBox* baseline_combo_ = nullptr;
  QComboBox* x_axis_combo_ = nullptr;
  QLabel* loading_label_ = nullptr;
  LineChart* step_time_chart_ = nullptr;
  LineChart* loss_chart_ = nullptr;
  BarChart* median_chart_ = nullptr;
  BarChart* throughput_chart_ = nullptr;
  QTableWidget* speed_table_ = nullptr;
  QLabel* settings_label_ = nullptr;
  QTableWidget* settings_table_ = nullptr;
  QPushButton* diagnose_ = nullptr;
};

}  // namespace mixlab::ui
