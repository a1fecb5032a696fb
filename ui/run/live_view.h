// The live view of the run in progress: step time per step with its rolling median, samples/s,
// train loss per step with the test loss per epoch, accuracy, the loss scale on a log axis with
// skipped steps marked, and per-layer times; a line of current figures above them. It follows a
// RunFeed: a run's start, steps, epochs, layer times and end arrive in order, in bulk.
#pragma once

#include <QPointF>
#include <QWidget>
#include <array>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "app/run/run_controller.h"
#include "app/run/run_feed.h"

class QComboBox;
class QLabel;
class QProgressBar;
class QTimer;

namespace mixlab::ui {

class LayerTimeChart;
class LineChart;
class OverflowTable;

class LiveView : public QWidget {
  Q_OBJECT

 public:
  explicit LiveView(QWidget* parent = nullptr);

  // Draws what `feed` hands on, from now on.
  void follow(app::RunFeed* feed);

  // A new run: clears the charts.
  void begin_run(const app::StartedRun& run);
  // Appends a batch of the current run's metrics to every chart at once (another run's are
  // ignored: the feed announces each run before its steps).
  void add_metrics(const app::MetricsBatch& batch);
  // One step's per-layer times: the layer chart shows each layer's median over the last steps
  // (redrawn at most ten times a second).
  void add_layer_times(const app::LayerTimes& times);
  // A step whose overflow check failed: its layers' inf/NaN gradient counts join the overflow
  // table, shown from the run's first such step.
  void add_layer_overflows(const app::LayerOverflows& overflows);
  // mixed_float8: a training step's FP8 tensors. The FP8 charts (shown from the run's first
  // such step) draw the chosen matmul's amaxes and scales on a log axis and the share of its
  // values that saturated or were flushed to zero, step by step.
  void add_fp8_tensors(const app::Fp8Tensors& tensors);
  // Shows how the run ended (its message when it failed).
  void end_run(qint64 run_id, const RunSummary& summary);
  // A run that could not start at all (no store): its message.
  void show_error(const QString& message);

  qint64 run_id() const { return run_id_; }
  std::size_t steps_shown() const { return steps_; }
  QString status_text() const;
  LineChart* step_time_chart() const { return step_time_; }
  LineChart* throughput_chart() const { return throughput_; }
  LineChart* loss_chart() const { return loss_; }
  LineChart* accuracy_chart() const { return accuracy_; }
  LineChart* loss_scale_chart() const { return loss_scale_; }
  LayerTimeChart* layer_chart() const { return layers_; }
  OverflowTable* overflow_table() const { return overflows_; }
  LineChart* fp8_amax_chart() const { return fp8_amax_; }
  LineChart* fp8_scale_chart() const { return fp8_scales_; }
  LineChart* fp8_rounding_chart() const { return fp8_rounding_; }
  QComboBox* fp8_matmul_box() const { return fp8_matmul_; }

 private:
  void export_chart(LineChart* chart);
  void refresh_layer_chart();
  void show_fp8_matmul(int index);

  qint64 run_id_ = 0;
  std::int64_t total_steps_ = 0;
  std::size_t steps_ = 0;
  std::deque<double> window_ms_;  // the last steps' times, for the rolling median
  double last_median_ms_ = 0.0;
  double last_samples_per_s_ = 0.0;

  QLabel* title_ = nullptr;
  QLabel* figures_ = nullptr;
  QLabel* message_ = nullptr;
  QProgressBar* progress_ = nullptr;
  LineChart* step_time_ = nullptr;
  LineChart* throughput_ = nullptr;
  LineChart* loss_ = nullptr;
  LineChart* accuracy_ = nullptr;
  LineChart* loss_scale_ = nullptr;
  LayerTimeChart* layers_ = nullptr;
  OverflowTable* overflows_ = nullptr;
  QTimer* layer_refresh_ = nullptr;
  // --- mixed_float8 ---
  QWidget* fp8_panel_ = nullptr;
  QComboBox* fp8_matmul_ = nullptr;
  LineChart* fp8_amax_ = nullptr;
  LineChart* fp8_scales_ = nullptr;
  LineChart* fp8_rounding_ = nullptr;
  // Per FP8 matmul (layer, part), its points: the amaxes of input, kernel and gradient (the
  // series of fp8_amax_), their scales (fp8_scales_'s), then its saturated and flushed shares.
  using Fp8Points = std::array<std::vector<QPointF>, 8>;
  std::map<std::pair<int, int>, Fp8Points> fp8_points_;
  std::vector<std::pair<int, int>> fp8_keys_;  // in the combo's order
  QStringList layer_titles_;
  // The last steps' times per layer, for the rolling medians.
  std::vector<std::deque<double>> layer_forward_ms_, layer_backward_ms_;
  // Series indices.
  int step_ms_ = 0, median_ms_ = 0, device_ms_ = 0, samples_ = 0, train_loss_ = 0, test_loss_ = 0,
      train_acc_ = 0, test_acc_ = 0, scale_ = 0, skipped_ = 0, saturated_ = 0, flushed_ = 0;
};

}  // namespace mixlab::ui
