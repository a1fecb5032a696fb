#include "ui/history/compare_view.h"

#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <exception>
#include <utility>

#include "app/store/run_store.h"
#include "ui/charts/chart.h"
#include "ui/history/compare_settings.h"
#include "ui/history/curve_loader.h"
#include "ui/history/history_format.h"
#include "ui/settings.h"

namespace mixlab::ui {

namespace {

using history::fixed;
using history::grouped;
using history::qstr;
using history::run_label;
using store::RunRecord;

QTableWidgetItem* text_item(const QString& text) {
  auto* item = new QTableWidgetItem(text);
  item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  item->setToolTip(text);
  return item;
}

// A figure: shown formatted, right-aligned, the number itself under Qt::UserRole.
QTableWidgetItem* number_item(double value, const QString& text) {
  QTableWidgetItem* item = text_item(text);
  item->setData(Qt::UserRole, value);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

QTableWidget* make_table(QWidget* parent) {
  auto* table = new QTableWidget(parent);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setWordWrap(false);
  table->horizontalHeader()->setStretchLastSection(true);
  return table;
}

QString x_label(bool by_time) {
  return by_time ? CompareView::tr("elapsed time (s)") : CompareView::tr("step");
}

}  // namespace

CompareView::CompareView(std::filesystem::path db_path, QWidget* parent)
    : QWidget(parent),
      db_path_(std::move(db_path)),
      by_time_(settings::kCompareByTime.get()),
      prompts_(dialog_prompts(this)) {
  loader_ = new CurveLoader(db_path_, this);
  connect(loader_, &CurveLoader::loaded, this, &CompareView::show_curves);
  connect(loader_, &CurveLoader::finished, this, [this] {
    loading_label_->hide();
    emit curves_loaded();
  });
  connect(loader_, &CurveLoader::failed, this, [this](const QString& message) {
    loading_label_->hide();
    report(tr("Cannot read the runs' steps: %1").arg(message));
  });
  build_layout();
}

CompareView::~CompareView() = default;

void CompareView::build_layout() {
  baseline_combo_ = new QComboBox(this);
  baseline_combo_->setObjectName(QStringLiteral("compare_baseline"));
  baseline_combo_->setToolTip(tr("The run the others' speed is measured against"));
  connect(baseline_combo_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index >= 0) set_baseline(baseline_combo_->itemData(index).toLongLong());
  });
  x_axis_combo_ = new QComboBox(this);
  x_axis_combo_->setObjectName(QStringLiteral("compare_x_axis"));
  x_axis_combo_->addItem(tr("by step"), false);
  x_axis_combo_->addItem(tr("by elapsed time"), true);
  x_axis_combo_->setCurrentIndex(by_time_ ? 1 : 0);
  x_axis_combo_->setToolTip(tr("Plot the curves against the step or the time since the start"));
  connect(x_axis_combo_, &QComboBox::currentIndexChanged, this,
          [this](int index) { set_x_by_time(x_axis_combo_->itemData(index).toBool()); });
  loading_label_ = new QLabel(tr("Reading steps…"), this);
  loading_label_->hide();

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Baseline:"), this));
  bar->addWidget(baseline_combo_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Curves:"), this));
  bar->addWidget(x_axis_combo_);
  bar->addSpacing(12);
  bar->addWidget(loading_label_);
  bar->addStretch(1);
  diagnose_ = new QPushButton(tr("Diagnose in the Doctor tab"), this);
  diagnose_->setToolTip(
      tr("Why the mixed run is slower or faster than the float32 one: the doctor's prediction "
         "for this model and batch, with these runs as its measurement"));
  diagnose_->setEnabled(false);
  connect(diagnose_, &QPushButton::clicked, this, [this] {
    const auto [f32, mixed] = precision_pair();
    if (f32 != 0) emit diagnose_requested(f32, mixed);
  });
  bar->addWidget(diagnose_);

  step_time_chart_ = new LineChart(tr("Step time"), x_label(by_time_), tr("ms"), this);
  loss_chart_ = new LineChart(tr("Loss"), x_label(by_time_), tr("loss"), this);
  median_chart_ = new BarChart(tr("Median step time (whiskers: p5–p95)"), tr("ms"), this);
  throughput_chart_ = new BarChart(tr("Throughput"), tr("samples/s"), this);
  auto* charts = new QWidget(this);
  auto* grid = new QGridLayout(charts);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->addWidget(with_export_button(step_time_chart_, Chart::step_time, "step-time"), 0, 0);
  grid->addWidget(with_export_button(loss_chart_, Chart::loss, "loss"), 0, 1);
  grid->addWidget(with_export_button(median_chart_, Chart::median_step, "median-step-time"), 1, 0);
  grid->addWidget(with_export_button(throughput_chart_, Chart::throughput, "throughput"), 1, 1);

  speed_table_ = make_table(this);
  speed_table_->setColumnCount(SpeedCount);
  speed_table_->setHorizontalHeaderLabels({tr("Run"), tr("Precision"), tr("Batch"), tr("Median ms"),
                                           tr("p5 ms"), tr("p95 ms"), tr("Samples/s"),
                                           tr("Speed")});
  speed_table_->horizontalHeaderItem(SpeedRatio)
      ->setToolTip(tr("The baseline's median step time divided by this run's: above 1.00× is "
                      "faster than the baseline"));
  speed_table_->verticalHeader()->hide();
  settings_label_ = new QLabel(this);
  settings_table_ = make_table(this);

  auto* tables = new QWidget(this);
  auto* tables_layout = new QVBoxLayout(tables);
  tables_layout->setContentsMargins(0, 0, 0, 0);
  tables_layout->addWidget(speed_table_, 1);
  tables_layout->addWidget(settings_label_);
  tables_layout->addWidget(settings_table_, 1);

  auto* splitter = new QSplitter(Qt::Vertical, this);
  splitter->addWidget(charts);
  splitter->addWidget(tables);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  // The charts are what the view is for: they get most of the height to begin with.
  charts->setMinimumHeight(360);
  splitter->setSizes({620, 260});

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(splitter, 1);
}

QWidget* CompareView::with_export_button(QWidget* chart, Chart which, const QString& file_name) {
  auto* panel = new QWidget(this);
  auto* button = new QPushButton(tr("Export chart…"), panel);
  button->setObjectName(QStringLiteral("export_") + file_name);
  button->setToolTip(tr("Save this chart as a PNG or SVG image"));
  connect(button, &QPushButton::clicked, this,
          [this, which, file_name] { ask_export(which, file_name); });
  auto* buttons = new QHBoxLayout;
  buttons->addStretch(1);
  buttons->addWidget(button);
  auto* layout = new QVBoxLayout(panel);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(chart, 1);
  layout->addLayout(buttons);
  return panel;
}

bool CompareView::open_store() {
  if (store_ != nullptr) return true;
  try {
    // Read-only: the comparison never writes, and leaves marking interrupted runs to writers.
    store_ = std::make_unique<store::RunStore>(store::RunStore::open(
        db_path_, store::StoreOptions{.read_only = true, .mark_interrupted = false}));
  } catch (const std::exception& e) {
    report(tr("Cannot open the run history %1: %2")
               .arg(QString::fromStdString(db_path_.string()), QString::fromUtf8(e.what())));
    return false;
  }
  return true;
}

void CompareView::report(const QString& message) {
  emit error(message);
}

void CompareView::show_runs(const QList<qint64>& run_ids) {
  loader_->cancel();
  runs_.clear();
  if (!run_ids.isEmpty() && open_store()) {
    for (const qint64 id : run_ids) {
      try {
        if (auto r = store_->find_run(id)) {
          runs_.push_back(std::move(*r));
        } else {
          report(tr("Run %1 is no longer in the history").arg(id));
        }
      } catch (const std::exception& e) {
        report(tr("Cannot read run %1: %2").arg(id).arg(QString::fromUtf8(e.what())));
      }
    }
  }
  baseline_ = runs_.empty() ? 0 : runs_.front().id;
  {
    const QSignalBlocker block(baseline_combo_);
    baseline_combo_->clear();
    for (const RunRecord& r : runs_) baseline_combo_->addItem(run_label(r, 40), qint64(r.id));
  }
  // The legends and bars name each run by what sets its name apart: whole names ("#1
  // “fashion-mlp float32 b32”") did not fit, and Qt cut them to the words all runs share.
  const QStringList labels = history::distinct_run_labels(runs_, 24);
  for (LineChart* chart : {step_time_chart_, loss_chart_}) {
    chart->remove_all_series();
    for (const QString& label : labels) chart->add_series(label);
  }
  update_bars();
  update_speed_table();
  update_settings_table();
  diagnose_->setEnabled(precision_pair().first != 0);
  load_curves();
}

std::pair<qint64, qint64> CompareView::precision_pair() const {
  if (runs_.size() != 2) return {0, 0};
  const RunRecord* f32 = nullptr;
  const RunRecord* mixed = nullptr;
  for (const RunRecord& r : runs_) {
    (r.config.precision == Policy::float32 ? f32 : mixed) = &r;
  }
  if (f32 == nullptr || mixed == nullptr || f32->model_json != mixed->model_json ||
      f32->config.batch_size != mixed->config.batch_size) {
    return {0, 0};
  }
  return {f32->id, mixed->id};
}

void CompareView::load_curves() {
  for (LineChart* chart : {step_time_chart_, loss_chart_}) {
    chart->clear();
    chart->set_x_label(x_label(by_time_));
  }
  if (runs_.empty()) {
    loader_->cancel();
    loading_label_->hide();
    return;
  }
  loading_label_->show();
  loader_->load(run_ids(), by_time_);
}

void CompareView::show_curves(const RunCurves& curves) {
  const auto it = std::find_if(runs_.begin(), runs_.end(),
                               [&](const RunRecord& r) { return r.id == curves.run_id; });
  if (it == runs_.end()) return;
  // Series were added in the runs' order, one per run.
  const int series = int(it - runs_.begin());
  step_time_chart_->set_points(series, curves.step_ms);
  loss_chart_->set_points(series, curves.loss);
}

void CompareView::set_baseline(qint64 run_id) {
  const int index = baseline_combo_->findData(run_id);
  if (index < 0) return;
  baseline_ = run_id;
  if (baseline_combo_->currentIndex() != index) {
    const QSignalBlocker block(baseline_combo_);
    baseline_combo_->setCurrentIndex(index);
  }
  update_speed_table();
}

void CompareView::set_x_by_time(bool by_time) {
  settings::kCompareByTime.set(by_time);
  if (by_time == by_time_) return;
  by_time_ = by_time;
  {
    const QSignalBlocker block(x_axis_combo_);
    x_axis_combo_->setCurrentIndex(by_time ? 1 : 0);
  }
  load_curves();
}

QList<qint64> CompareView::run_ids() const {
  QList<qint64> ids;
  for (const RunRecord& r : runs_) ids.append(r.id);
  return ids;
}

bool CompareView::loading() const {
  return loader_->busy();
}

void CompareView::update_bars() {
  std::vector<BarChart::Bar> medians;
  std::vector<BarChart::Bar> throughputs;
  // A run without the figure (failed early, still running) has no bar rather than a zero one
  // that would read as infinitely fast; the speed table lists it with a dash.
  const QStringList labels = history::distinct_run_labels(runs_, 16);
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    const RunSummary& s = runs_[i].summary;
    const QString& label = labels[qsizetype(i)];
    if (std::isfinite(s.median_step_ms))
      medians.push_back({label, s.median_step_ms, s.p5_step_ms, s.p95_step_ms});
    if (std::isfinite(s.samples_per_s))
      throughputs.push_back({label, s.samples_per_s, kNotMeasured, kNotMeasured});
  }
  median_chart_->set_bars(std::move(medians));
  throughput_chart_->set_bars(std::move(throughputs));
}

void CompareView::update_speed_table() {
  const auto base = std::find_if(runs_.begin(), runs_.end(),
                                 [&](const RunRecord& r) { return r.id == baseline_; });
  const double base_ms = base == runs_.end() ? kNotMeasured : base->summary.median_step_ms;
  speed_table_->setRowCount(int(runs_.size()));
  for (int row = 0; row < int(runs_.size()); ++row) {
    const RunRecord& r = runs_[std::size_t(row)];
    const RunSummary& s = r.summary;
    const double speed = base_ms / s.median_step_ms;  // NaN when either is not measured
    QString speed_text = history::ratio(speed);
    if (r.id == baseline_) speed_text += tr(" (baseline)");
    speed_table_->setItem(row, SpeedRun, text_item(run_label(r)));
    speed_table_->setItem(row, SpeedPrecision, text_item(qstr(to_string(r.config.precision))));
    speed_table_->setItem(row, SpeedBatch,
                          number_item(r.config.batch_size, grouped(r.config.batch_size)));
    speed_table_->setItem(row, SpeedMedianMs,
                          number_item(s.median_step_ms, fixed(s.median_step_ms, 3)));
    speed_table_->setItem(row, SpeedP5Ms, number_item(s.p5_step_ms, fixed(s.p5_step_ms, 3)));
    speed_table_->setItem(row, SpeedP95Ms, number_item(s.p95_step_ms, fixed(s.p95_step_ms, 3)));
    speed_table_->setItem(row, SpeedSamplesPerS,
                          number_item(s.samples_per_s, grouped(s.samples_per_s)));
    speed_table_->setItem(row, SpeedRatio, number_item(speed, speed_text));
  }
  speed_table_->resizeColumnsToContents();
}

void CompareView::update_settings_table() {
  const std::vector<SettingDifference> differences = differing_settings(runs_);
  settings_table_->clear();
  settings_table_->setRowCount(int(differences.size()));
  settings_table_->setColumnCount(differences.empty() ? 0 : int(runs_.size()));
  if (!differences.empty()) {
    // Set only with rows to show: the labels would add columns to an empty table.
    QStringList columns;
    for (const RunRecord& r : runs_) columns.append(run_label(r, 30));
    settings_table_->setHorizontalHeaderLabels(columns);
  }
  QStringList rows;
  for (int row = 0; row < int(differences.size()); ++row) {
    rows.append(differences[std::size_t(row)].name);
    const QStringList& values = differences[std::size_t(row)].values;
    for (int column = 0; column < int(values.size()); ++column)
      settings_table_->setItem(row, column, text_item(values[column]));
  }
  settings_table_->setVerticalHeaderLabels(rows);
  settings_table_->resizeColumnsToContents();  // each run's name whole over its column
  if (runs_.size() < 2) {
    settings_label_->setText(tr("Settings: choose two or more runs to compare them"));
  } else if (differences.empty()) {
    settings_label_->setText(tr("Settings: all settings equal"));
  } else {
    settings_label_->setText(tr("Settings that differ:"));
  }
  settings_table_->setVisible(!differences.empty());
}

bool CompareView::export_chart(Chart chart, const QString& path) {
  QString why;
  bool ok = false;
  switch (chart) {
    case Chart::step_time:
      ok = step_time_chart_->save_image(path, &why);
      break;
    case Chart::loss:
      ok = loss_chart_->save_image(path, &why);
      break;
    case Chart::median_step:
      ok = median_chart_->save_image(path, &why);
      break;
    case Chart::throughput:
      ok = throughput_chart_->save_image(path, &why);
      break;
  }
  if (!ok) report(tr("Cannot save the chart as %1: %2").arg(path, why));
  return ok;
}

void CompareView::ask_export(Chart which, const QString& file_name) {
  if (!prompts_.save_file) return;
  QString path = prompts_.save_file(tr("Export chart"), file_name + QStringLiteral(".png"),
                                    tr("PNG image (*.png);;SVG image (*.svg)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".png");
  export_chart(which, path);
}

}  // namespace mixlab::ui
