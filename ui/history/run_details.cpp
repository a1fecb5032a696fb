#include "ui/history/run_details.h"

#include <QLabel>
#include <QLocale>
#include <QVBoxLayout>
#include <cmath>
#include <optional>

#include "app/store/run_store.h"
#include "ui/charts/chart.h"
#include "ui/run/overflow_table.h"

namespace mixlab::ui {

namespace {

QString ms(double value) {
  return std::isfinite(value) ? QLocale::c().toString(value, 'f', 3) : QStringLiteral("-");
}

}  // namespace

RunDetails::RunDetails(QWidget* parent) : QWidget(parent) {
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layers_ = new LayerTimeChart(tr("Per-layer time"));
  layers_->setMinimumHeight(160);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(summary_);
  layout->addWidget(layers_, 1);
  overflows_ = new OverflowTable;
  overflows_->setMaximumHeight(140);
  layout->addWidget(overflows_);
  clear();
}

void RunDetails::clear() {
  run_id_ = 0;
  summary_->setText(tr("Select a run to see its details."));
  layers_->set_title(tr("Per-layer time"));
  layers_->set_rows({});
  overflows_->clear_rows();
  overflows_->hide();
}

void RunDetails::show_run(store::RunStore& store, qint64 run_id) {
  run_id_ = 0;
  std::optional<store::RunRecord> record;
  std::vector<store::LayerTimeSummary> layers;
  std::vector<store::LayerOverflowSummary> overflows;
  if (run_id != 0) {
    try {
      record = store.find_run(run_id);
      if (record) layers = store.layer_times(run_id);
      if (record) overflows = store.layer_overflows(run_id);
    } catch (const std::exception& e) {
      summary_->setText(tr("Run %1 cannot be read: %2").arg(run_id).arg(e.what()));
      layers_->set_rows({});
      overflows_->hide();
      return;
    }
  }
  if (!record) {
    clear();
    return;
  }
  run_id_ = run_id;
  const RunSummary& s = record->summary;
  summary_->setText(tr("Run %1, %2: median step %3 ms (p5 %4, p95 %5), %6 samples/s")
                        .arg(run_id)
                        .arg(QString::fromStdString(record->name))
                        .arg(ms(s.median_step_ms), ms(s.p5_step_ms), ms(s.p95_step_ms))
                        .arg(std::isfinite(s.samples_per_s)
                                 ? QLocale::c().toString(std::llround(s.samples_per_s))
                                 : QStringLiteral("-")));
  std::vector<LayerTimeChart::Row> rows;
  for (const store::LayerTimeSummary& l : layers) {
    rows.push_back({QString::fromStdString(l.title), l.forward_ms, l.backward_ms});
  }
  layers_->set_title(layers.empty()
                         ? tr("Per-layer time: not recorded (turn on Per-layer timing in the "
                              "Run panel)")
                         : tr("Per-layer time of run %1 (median over %2 steps)")
                               .arg(run_id)
                               .arg(layers.front().steps));
  layers_->set_rows(std::move(rows));
  std::map<int, OverflowTable::Row> overflow_rows;
  for (const store::LayerOverflowSummary& o : overflows) {
    overflow_rows[o.layer] = {QString::fromStdString(o.title), o.steps, o.nonfinite, o.values,
                              o.last_step};
  }
  overflows_->set_rows(overflow_rows);
  overflows_->setVisible(!overflow_rows.empty());
}

QString RunDetails::summary_text() const {
  return summary_->text();
}

}  // namespace mixlab::ui
