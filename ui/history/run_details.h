// A recorded run's details under the history table: its figures in a line, its per-layer times
// as a chart (layers named as in the editor) when it was recorded with per-layer timing, and its
// per-layer overflow counts when steps were skipped for inf/NaN gradients.
#pragma once

#include <QWidget>

class QLabel;

namespace mixlab::store {
class RunStore;
}

namespace mixlab::ui {

class LayerTimeChart;
class OverflowTable;

class RunDetails : public QWidget {
  Q_OBJECT

 public:
  explicit RunDetails(QWidget* parent = nullptr);

  // Shows run `run_id` from `store`; 0 (or a run the store no longer has) shows nothing.
  void show_run(store::RunStore& store, qint64 run_id);
  void clear();
  qint64 run_id() const { return run_id_; }
  QString summary_text() const;
  LayerTimeChart* layer_chart() const { return layers_; }
  OverflowTable* overflow_table() const { return overflows_; }

 private:
  qint64 run_id_ = 0;
  QLabel* summary_ = nullptr;
  LayerTimeChart* layers_ = nullptr;
  OverflowTable* overflows_ = nullptr;
};

}  // namespace mixlab::ui
