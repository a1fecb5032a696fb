// The per-layer overflow table (issue 29's loss-scaling demo): for each layer whose gradients
// held NaN or inf on a step whose overflow check failed, on how many such steps, how many values
// in all, the most on one step of how many the layer has, and the last such step. The Live tab
// fills it as a run goes; a recorded run's details fill it from the run store.
#pragma once

#include <QTableWidget>
#include <cstdint>
#include <map>

namespace mixlab::ui {

class OverflowTable : public QTableWidget {
  Q_OBJECT

 public:
  struct Row {
    QString title;  // the layer as the editor names it
    std::int64_t steps = 0;
    std::int64_t nonfinite = 0;  // over those steps
    std::int64_t values = 0;     // the layer's gradient values
    std::int64_t last_step = -1;
  };
  enum Column { kLayer, kSteps, kNonfinite, kValues, kLastStep, kColumns };

  explicit OverflowTable(QWidget* parent = nullptr);

  // Adds one step's count for `layer` (the Live tab); rows stay in layer order.
  void add(int layer, const QString& title, std::int64_t step, std::int64_t nonfinite,
           std::int64_t values);
  // Shows these rows, by layer (a recorded run).
  void set_rows(const std::map<int, Row>& rows);
  void clear_rows();
  const std::map<int, Row>& rows() const { return rows_; }

 private:
  void refresh();
  std::map<int, Row> rows_;
};

}  // namespace mixlab::ui
