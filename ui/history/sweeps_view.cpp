#include "ui/history/sweeps_view.h"

#include <QApplication>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "app/store/csv_export.h"
#include "app/store/safe_file.h"
#include "app/store/sweep_results.h"
#include "app/store/sweeps.h"
#include "ui/charts/chart.h"

namespace mixlab::ui {

namespace {

enum SweepColumn { kSweepId, kSweepName, kSweepExecutor, kSweepState, kSweepDone, kSweepColumns };
enum PointColumn {
  kPointLabel,
  kPointRuns,
  kPointMedian,
  kPointSpread,
  kPointSamples,
  kPointSpeedup,
  kPointColumns
};

QTableWidget* make_table(int columns, const QStringList& headers) {
  auto* table = new QTableWidget(0, columns);
  table->setHorizontalHeaderLabels(headers);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->setWordWrap(false);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setStretchLastSection(true);
  return table;
}

QTableWidgetItem* item(const QString& text, bool number = false) {
  auto* it = new QTableWidgetItem(text);
  if (number) it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return it;
}

QString number(double value, int decimals) {
  return std::isfinite(value) ? QString::number(value, 'f', decimals) : QStringLiteral("–");
}

QString text_of(std::string_view text) {
  return QString::fromUtf8(text.data(), qsizetype(text.size()));
}

}  // namespace

SweepsView::SweepsView(std::filesystem::path db_path, QWidget* parent)
    : QWidget(parent), db_path_(std::move(db_path)), prompts_(dialog_prompts(this)) {
  sweeps_ =
      make_table(kSweepColumns, {tr("ID"), tr("Name"), tr("Executor"), tr("State"), tr("Done")});
  sweeps_->setObjectName(QStringLiteral("sweeps"));
  points_ = make_table(kPointColumns, {tr("Point"), tr("Runs"), tr("Median ms"), tr("Min–max ms"),
                                       tr("Samples/s"), tr("× float32")});
  points_->setObjectName(QStringLiteral("points"));
  points_->horizontalHeaderItem(kPointRuns)->setToolTip(tr("Runs measured of those planned"));
  points_->horizontalHeaderItem(kPointMedian)
      ->setToolTip(tr("The median over the repeats of each run's median step time"));
  points_->horizontalHeaderItem(kPointSpeedup)
      ->setToolTip(tr("float32's median step time at the same other settings over this "
                      "point's: above 1.00 is faster"));

  resume_ = new QPushButton(tr("Resume"));
  resume_->setToolTip(tr("Run the members of this stopped sweep that have not run yet"));
  export_csv_ = new QPushButton(tr("Export CSV…"));
  export_csv_->setToolTip(tr("Every member of the sweep with its run's settings and figures"));
  export_chart_ = new QPushButton(tr("Export chart…"));
  export_chart_->setToolTip(tr("Save the chart as a PNG or SVG image"));
  message_ = new QLabel;
  message_->setWordWrap(true);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(message_, 1);
  buttons->addWidget(resume_);
  buttons->addWidget(export_csv_);
  buttons->addWidget(export_chart_);

  auto* chart_panel = new QWidget;
  chart_box_ = new QVBoxLayout(chart_panel);
  chart_box_->setContentsMargins(0, 0, 0, 0);
  chart_ = new PlotChart(tr("Speed-up over float32"), tr("batch size"), tr("× float32"),
                         PlotChart::Scale::log2, PlotChart::Scale::linear);
  chart_box_->addWidget(chart_);

  auto* results = new QSplitter(Qt::Horizontal);
  results->addWidget(points_);
  results->addWidget(chart_panel);
  results->setSizes({1, 1});  // halves
  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(sweeps_);
  splitter->addWidget(results);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 3);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(splitter, 1);
  layout->addLayout(buttons);

  connect(sweeps_, &QTableWidget::itemSelectionChanged, this, &SweepsView::show_selected);
  connect(resume_, &QPushButton::clicked, this, [this] {
    if (const std::int64_t id = selected_sweep()) emit resume_requested(id);
  });
  connect(export_csv_, &QPushButton::clicked, this, [this] {
    if (!prompts_.save_file || selected_sweep() == 0) return;
    QString path =
        prompts_.save_file(tr("Export sweep"), QStringLiteral("sweep-%1.csv").arg(selected_sweep()),
                           tr("CSV (*.csv)"));
    if (path.isEmpty()) return;
    if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".csv");
    export_csv(path.toStdString());
  });
  connect(export_chart_, &QPushButton::clicked, this, [this] {
    if (!prompts_.save_file || selected_sweep() == 0) return;
    QString path =
        prompts_.save_file(tr("Export chart"), QStringLiteral("sweep-%1.png").arg(selected_sweep()),
                           tr("PNG image (*.png);;SVG image (*.svg)"));
    if (path.isEmpty()) return;
    if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".png");
    export_chart(path);
  });
  update_buttons();
}

SweepsView::~SweepsView() = default;

bool SweepsView::open_store() {
  if (store_) return true;
  try {
    store_ = std::make_unique<store::RunStore>(store::RunStore::open(db_path_));
  } catch (const std::exception& e) {
    report(tr("Cannot open the run history %1: %2")
               .arg(QString::fromStdString(db_path_.string()), QString::fromUtf8(e.what())));
    return false;
  }
  return true;
}

void SweepsView::report(const QString& message) {
  message_->setText(message);
  emit error(message);
}

void SweepsView::reload() {
  if (!open_store()) return;
  const std::int64_t selected = selected_sweep();
  std::vector<store::SweepRecord> sweeps;
  try {
    sweeps = store::list_sweeps(*store_);
  } catch (const std::exception& e) {
    report(tr("Cannot read the sweeps: %1").arg(QString::fromUtf8(e.what())));
    return;
  }
  const QSignalBlocker blocker(sweeps_);
  sweeps_->setRowCount(static_cast<int>(sweeps.size()));
  for (int row = 0; row < static_cast<int>(sweeps.size()); ++row) {
    const store::SweepRecord& s = sweeps[static_cast<std::size_t>(row)];
    const int done = s.count(store::MemberState::done);
    const int failed = s.count(store::MemberState::failed);
    QString done_text = QStringLiteral("%1/%2").arg(done).arg(s.members.size());
    if (failed > 0) done_text += tr(" (%1 failed)").arg(failed);
    QString state = text_of(store::to_string(s.state));
    if (s.state == store::SweepState::running && !s.owner_is_alive())
      state = tr("stopped (killed)");
    auto* id = item(QString::number(s.id), true);
    id->setData(Qt::UserRole, qint64(s.id));
    sweeps_->setItem(row, kSweepId, id);
    sweeps_->setItem(row, kSweepName, item(QString::fromStdString(s.name)));
    sweeps_->setItem(row, kSweepExecutor, item(QString::fromStdString(s.executor)));
    sweeps_->setItem(row, kSweepState, item(state));
    sweeps_->setItem(row, kSweepDone, item(done_text, true));
    sweeps_->item(row, kSweepName)->setToolTip(QString::fromStdString(s.message));
  }
  sweeps_->resizeColumnsToContents();
  int row = sweeps.empty() ? -1 : 0;
  for (int r = 0; r < static_cast<int>(sweeps.size()); ++r) {
    if (sweeps[static_cast<std::size_t>(r)].id == selected) row = r;
  }
  sweeps_->selectRow(row);
  if (row < 0) sweeps_->clearSelection();
  show_selected();
}

void SweepsView::select_sweep(std::int64_t sweep_id) {
  for (int r = 0; r < sweeps_->rowCount(); ++r) {
    if (sweeps_->item(r, kSweepId)->data(Qt::UserRole).toLongLong() == sweep_id) {
      sweeps_->selectRow(r);
      return;
    }
  }
}

std::int64_t SweepsView::selected_sweep() const {
  const QList<QTableWidgetSelectionRange> ranges = sweeps_->selectedRanges();
  if (ranges.isEmpty()) return 0;
  const QTableWidgetItem* id = sweeps_->item(ranges.front().topRow(), kSweepId);
  return id != nullptr ? id->data(Qt::UserRole).toLongLong() : 0;
}

void SweepsView::set_running(bool running) {
  running_ = running;
  update_buttons();
}

void SweepsView::update_buttons() {
  const bool selected = selected_sweep() != 0;
  resume_->setEnabled(selected && resumable_ && !running_);
  export_csv_->setEnabled(selected);
  export_chart_->setEnabled(selected);
}

void SweepsView::show_selected() {
  points_->setRowCount(0);
  resumable_ = false;
  message_->clear();
  const std::int64_t id = selected_sweep();
  std::optional<store::SweepRecord> sweep;
  store::SweepResults results;
  if (id != 0 && open_store()) {
    try {
      sweep = store::find_sweep(*store_, id);
      if (sweep) results = store::sweep_results(*store_, *sweep);
    } catch (const std::exception& e) {
      report(tr("Cannot read sweep %1: %2").arg(id).arg(QString::fromUtf8(e.what())));
    }
  }
  if (sweep) {
    resumable_ = sweep->executor == "local" &&
                 (sweep->state == store::SweepState::stopped ||
                  (sweep->state == store::SweepState::running && !sweep->owner_is_alive()));
    message_->setText(QString::fromStdString(sweep->message));
  }

  // The table: one row per grid point, in plan order.
  points_->setRowCount(static_cast<int>(results.points.size()));
  bool any_speedup = false;
  for (int row = 0; row < static_cast<int>(results.points.size()); ++row) {
    const store::SweepPoint& p = results.points[static_cast<std::size_t>(row)];
    any_speedup = any_speedup || std::isfinite(p.speedup_over_float32);
    points_->setItem(row, kPointLabel, item(QString::fromStdString(p.label(results.axes))));
    QString runs = QStringLiteral("%1/%2").arg(p.measured).arg(p.planned);
    if (p.failed > 0) runs += tr(" (%1 failed)").arg(p.failed);
    points_->setItem(row, kPointRuns, item(runs, true));
    points_->setItem(row, kPointMedian, item(number(p.median_step_ms, 3), true));
    points_->setItem(row, kPointSpread,
                     item(p.measured > 0 ? QStringLiteral("%1–%2").arg(number(p.min_step_ms, 3),
                                                                       number(p.max_step_ms, 3))
                                         : number(NAN, 0),
                          true));
    points_->setItem(row, kPointSamples, item(number(p.median_samples_per_s, 0), true));
    points_->setItem(row, kPointSpeedup, item(number(p.speedup_over_float32, 2), true));
  }
  points_->resizeColumnsToContents();

  // The chart: each policy's speed-up over float32 (or its median step time when float32 was
  // not measured) against the batch size; one series per policy, and per model when several.
  auto* chart = any_speedup
                    ? new PlotChart(tr("Speed-up over float32"), tr("batch size"), tr("× float32"),
                                    PlotChart::Scale::log2, PlotChart::Scale::linear)
                    : new PlotChart(tr("Median step time"), tr("batch size"), tr("ms"),
                                    PlotChart::Scale::log2, PlotChart::Scale::linear);
  const bool by_model =
      std::find(results.axes.begin(), results.axes.end(), "model") != results.axes.end();
  std::map<std::string, std::vector<const store::SweepPoint*>> series;  // by name
  std::vector<std::string> order;
  for (const store::SweepPoint& p : results.points) {
    if (any_speedup && p.precision == "float32") continue;
    const std::string name = by_model ? p.model + ", " + p.precision : p.precision;
    if (!series.contains(name)) order.push_back(name);
    series[name].push_back(&p);
  }
  for (const std::string& name : order) {
    std::vector<const store::SweepPoint*>& points = series[name];
    std::stable_sort(points.begin(), points.end(),
                     [](const auto* a, const auto* b) { return a->batch_size < b->batch_size; });
    std::vector<QPointF> xy;
    QStringList labels;
    for (const store::SweepPoint* p : points) {
      const double y = any_speedup ? p->speedup_over_float32 : p->median_step_ms;
      if (!std::isfinite(y)) continue;
      xy.emplace_back(static_cast<double>(p->batch_size), y);
      labels << QString::fromStdString(p->label(results.axes));
    }
    const int s = chart->add_series(QString::fromStdString(name), PlotChart::Kind::line);
    chart->set_points(s, std::move(xy), labels);
  }
  if (any_speedup) {
    // Break-even, dashed: above it mixed precision is faster than float32, below it slower.
    double low = INFINITY, high = 0.0;
    for (const store::SweepPoint& p : results.points) {
      if (p.batch_size <= 0) continue;
      low = std::min(low, static_cast<double>(p.batch_size));
      high = std::max(high, static_cast<double>(p.batch_size));
    }
    if (high > 0.0) {
      const int s = chart->add_series(tr("float32 (1×)"), PlotChart::Kind::dashed_line);
      chart->set_points(s, {QPointF(low, 1.0), QPointF(high, 1.0)});
    }
  }
  chart_box_->replaceWidget(chart_, chart);
  delete chart_;
  chart_ = chart;
  update_buttons();
}

bool SweepsView::export_csv(const std::filesystem::path& file) {
  const std::int64_t id = selected_sweep();
  if (id == 0 || !open_store()) return false;
  QApplication::setOverrideCursor(Qt::WaitCursor);
  bool ok = true;
  try {
    const std::optional<store::SweepRecord> sweep = store::find_sweep(*store_, id);
    if (!sweep) throw store::StoreError("sweep " + std::to_string(id) + " is no longer there");
    store::write_file_atomically(
        file, [&](std::ostream& out) { store::write_sweep_csv(out, *store_, *sweep); });
  } catch (const std::exception& e) {
    report(tr("Export failed: %1").arg(QString::fromUtf8(e.what())));
    ok = false;
  }
  QApplication::restoreOverrideCursor();
  return ok;
}

bool SweepsView::export_chart(const QString& path) {
  QString why;
  if (chart_->save_image(path, &why)) return true;
  report(tr("Cannot save the chart as %1: %2").arg(path, why));
  return false;
}

}  // namespace mixlab::ui
