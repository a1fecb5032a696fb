// The Sweeps tab: the sweeps in the run store (by the GUI or mixlab-cli sweep), and for the one
// selected its grid points (median step time over the repeats with their spread, samples/s,
// speed-up over float32: store::sweep_results) with a chart of each policy's speed-up over
// float32 against the batch size (the median step time when float32 was not measured). Resume
// runs a stopped sweep's remaining members in the window; the results export as CSV, the chart
// as PNG or SVG.
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "app/store/run_store.h"
#include "ui/history/prompts.h"

class QLabel;
class QPushButton;
class QTableWidget;
class QVBoxLayout;

namespace mixlab::ui {

class PlotChart;

class SweepsView : public QWidget {
  Q_OBJECT

 public:
  explicit SweepsView(std::filesystem::path db_path, QWidget* parent = nullptr);
  ~SweepsView() override;

  // Reads the sweeps again, keeping the one selected.
  void reload();
  void select_sweep(std::int64_t sweep_id);
  std::int64_t selected_sweep() const;  // 0: none
  // A run is in progress in the window: Resume waits for it.
  void set_running(bool running);

  // The selected sweep's results, long form (store::write_sweep_csv); its chart as PNG or SVG.
  bool export_csv(const std::filesystem::path& file);
  bool export_chart(const QString& path);
  void set_prompts(Prompts prompts) { prompts_ = std::move(prompts); }

  QTableWidget* sweep_table() const { return sweeps_; }
  QTableWidget* point_table() const { return points_; }
  PlotChart* chart() const { return chart_; }
  QPushButton* resume_button() const { return resume_; }

 signals:
  void resume_requested(qint64 sweep_id);
  void error(const QString& message);

 private:
  bool open_store();
  void show_selected();
  void update_buttons();
  void report(const QString& message);

  std::filesystem::path db_path_;
  std::unique_ptr<store::RunStore> store_;
  Prompts prompts_;
  bool running_ = false;
  bool resumable_ = false;  // the selected sweep
  QTableWidget* sweeps_ = nullptr;
  QTableWidget* points_ = nullptr;
  QLabel* message_ = nullptr;
  QVBoxLayout* chart_box_ = nullptr;
  PlotChart* chart_ = nullptr;
  QPushButton* resume_ = nullptr;
  QPushButton* export_csv_ = nullptr;
  QPushButton* export_chart_ = nullptr;
};

}  // namespace mixlab::ui
