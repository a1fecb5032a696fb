#include "ui/run/live_view.h"

#include <QAction>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "ui/charts/chart.h"
#include "ui/run/overflow_table.h"
#include "ui/settings.h"

namespace mixlab::ui {

namespace {

constexpr std::size_t kMedianWindow = 51;  // steps in the rolling median

double median_of(const std::deque<double>& values) {
  std::vector<double> v(values.begin(), values.end());
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

LiveView::LiveView(QWidget* parent) : QWidget(parent) {
  title_ = new QLabel(tr("No run yet: set up a model and press Start (Ctrl+R)"));
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  figures_ = new QLabel;
  figures_->setToolTip(tr("Median over the last %1 steps").arg(kMedianWindow));
  message_ = new QLabel;
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  message_->hide();
  progress_ = new QProgressBar;
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setToolTip(tr("Steps done of the run's planned steps"));

  step_time_ = new LineChart(tr("Step time"), tr("step"), tr("ms"));
  step_ms_ = step_time_->add_series(tr("step ms"));
  median_ms_ = step_time_->add_series(tr("rolling median (%1 steps)").arg(kMedianWindow));
  // GPU runs: the step's device time (CUDA events) beside its wall time; the gap is the host's
  // share (launches, the readback, waiting for data).
  device_ms_ = step_time_->add_series(tr("device ms"));
  throughput_ = new LineChart(tr("Throughput"), tr("step"), tr("samples/s"));
  samples_ = throughput_->add_series(tr("samples/s (rolling median)"));
  loss_ = new LineChart(tr("Loss"), tr("step"), tr("loss"));
  train_loss_ = loss_->add_series(tr("train"));
  test_loss_ = loss_->add_series(tr("test (per epoch)"), LineChart::Kind::markers);
  accuracy_ = new LineChart(tr("Accuracy"), tr("step"), tr("accuracy"));
  train_acc_ = accuracy_->add_series(tr("train"));
  test_acc_ = accuracy_->add_series(tr("test (per epoch)"), LineChart::Kind::markers);
  layers_ = new LayerTimeChart(tr("Per-layer time"));
  layers_->setToolTip(tr("Each layer's forward and backward time, median over the last %1 "
                         "steps; turn on Per-layer timing in the Run panel")
                          .arg(kMedianWindow));
  layer_refresh_ = new QTimer(this);
  layer_refresh_->setSingleShot(true);
  layer_refresh_->setInterval(100);
  connect(layer_refresh_, &QTimer::timeout, this, &LiveView::refresh_layer_chart);
  loss_scale_ = new LineChart(tr("Loss scale"), tr("step"), tr("scale"));
  loss_scale_->set_y_scale(LineChart::Scale::log10);
  scale_ = loss_scale_->add_series(tr("loss scale"));
  skipped_ = loss_scale_->add_series(tr("skipped steps (overflow)"), LineChart::Kind::markers);

  // Every chart exports itself from its context menu, as the comparison's charts do.
  for (LineChart* chart : {step_time_, throughput_, loss_, accuracy_, loss_scale_}) {
    auto* save = new QAction(tr("Export chart as PNG or SVG…"), chart);
    connect(save, &QAction::triggered, this, [this, chart] { export_chart(chart); });
    chart->addAction(save);
    chart->setContextMenuPolicy(Qt::ActionsContextMenu);
    chart->setToolTip(tr("Hover a line for exact values; right-click to export the chart"));
  }

  overflows_ = new OverflowTable;
  overflows_->setMaximumHeight(160);
  overflows_->hide();

  // mixed_float8: one matmul's FP8 tensors at a time, chosen by name.
  fp8_matmul_ = new QComboBox;
  fp8_matmul_->setObjectName(QStringLiteral("fp8_matmul"));
  fp8_matmul_->setToolTip(tr("The FP8 matmul whose tensors the charts show"));
  fp8_amax_ = new LineChart(tr("FP8 amax"), tr("step"), tr("amax"));
  fp8_scales_ = new LineChart(tr("FP8 scale"), tr("step"), tr("scale"));
  for (LineChart* chart : {fp8_amax_, fp8_scales_}) {
    chart->set_y_scale(LineChart::Scale::log10);
    for (const QString& name : {tr("input"), tr("kernel"), tr("gradient")})
      chart->add_series(name);  // series 0, 1, 2: Fp8Role's order
  }
  fp8_amax_->setToolTip(
      tr("Each FP8 tensor's largest magnitude in the step (the input and "
         "kernel in E4M3, the gradient in E5M2 under hybrid)"));
  fp8_scales_->setToolTip(
      tr("Each FP8 tensor's scale after the step (Keras's: a value x is cast as x / scale), "
         "made from its amax history: it follows the amaxes one step behind"));
  fp8_rounding_ = new LineChart(tr("FP8 rounding"), tr("step"), tr("% of values"));
  saturated_ = fp8_rounding_->add_series(tr("saturated (past the format's maximum)"));
  flushed_ = fp8_rounding_->add_series(tr("flushed to zero"));
  fp8_rounding_->setToolTip(
      tr("The share of the matmul's input, kernel and gradient values that the FP8 cast "
         "saturated or flushed to zero; a layer that saturates often should stay in bfloat16"));
  for (LineChart* chart : {fp8_amax_, fp8_scales_, fp8_rounding_}) {
    auto* save = new QAction(tr("Export chart as PNG or SVG…"), chart);
    connect(save, &QAction::triggered, this, [this, chart] { export_chart(chart); });
    chart->addAction(save);
    chart->setContextMenuPolicy(Qt::ActionsContextMenu);
  }
  connect(fp8_matmul_, &QComboBox::currentIndexChanged, this, &LiveView::show_fp8_matmul);
  fp8_panel_ = new QWidget;
  auto* fp8_layout = new QGridLayout(fp8_panel_);
  fp8_layout->setContentsMargins(0, 0, 0, 0);
  auto* fp8_row = new QHBoxLayout;
  fp8_row->addWidget(new QLabel(tr("FP8 matmul:")));
  fp8_row->addWidget(fp8_matmul_, 1);
  fp8_layout->addLayout(fp8_row, 0, 0, 1, 2);
  fp8_layout->addWidget(fp8_amax_, 1, 0);
  fp8_layout->addWidget(fp8_scales_, 1, 1);
  fp8_layout->addWidget(fp8_rounding_, 2, 0, 1, 2);
  fp8_panel_->hide();

  auto* grid = new QGridLayout;
  grid->addWidget(step_time_, 0, 0);
  grid->addWidget(throughput_, 0, 1);
  grid->addWidget(loss_, 1, 0);
  grid->addWidget(accuracy_, 1, 1);
  grid->addWidget(loss_scale_, 2, 0);
  grid->addWidget(layers_, 2, 1);
  grid->addWidget(overflows_, 3, 0, 1, 2);
  grid->addWidget(fp8_panel_, 4, 0, 1, 2);
  // Every chart keeps a readable height; with the FP8 charts (a mixed_float8 run) the grid
  // scrolls rather than squash them.
  for (LineChart* chart : {step_time_, throughput_, loss_, accuracy_, loss_scale_, fp8_amax_,
                           fp8_scales_, fp8_rounding_})
    chart->setMinimumHeight(200);
  layers_->setMinimumHeight(200);
  auto* charts = new QWidget;
  charts->setLayout(grid);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(charts);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addWidget(progress_);
  layout->addWidget(figures_);
  layout->addWidget(message_);
  layout->addWidget(scroll, 1);
}

void LiveView::begin_run(const app::StartedRun& run) {
  run_id_ = run.run_id;
  total_steps_ = run.total_steps;
  steps_ = 0;
  window_ms_.clear();
  last_median_ms_ = last_samples_per_s_ = 0.0;
  for (LineChart* c : {step_time_, throughput_, loss_, accuracy_, loss_scale_}) c->clear();
  title_->setText(tr("Run %1: %2 on %3")
                      .arg(run.run_id)
                      .arg(run.name.isEmpty() ? tr("(unnamed)") : run.name, run.device_name));
  progress_->setRange(0, static_cast<int>(std::min<std::int64_t>(run.total_steps, INT32_MAX)));
  progress_->setValue(0);
  figures_->clear();
  message_->setVisible(!run.notes.isEmpty());
  message_->setText(run.notes.join(QStringLiteral("; ")));
  layer_titles_ = run.layer_titles;
  layer_forward_ms_.assign(static_cast<std::size_t>(run.layer_titles.size()), {});
  layer_backward_ms_.assign(static_cast<std::size_t>(run.layer_titles.size()), {});
  layers_->set_rows({});
  overflows_->clear_rows();
  overflows_->hide();
  fp8_points_.clear();
  fp8_keys_.clear();
  {
    const QSignalBlocker block(fp8_matmul_);
    fp8_matmul_->clear();
  }
  for (LineChart* chart : {fp8_amax_, fp8_scales_, fp8_rounding_}) chart->clear();
  fp8_panel_->hide();
}

void LiveView::follow(app::RunFeed* feed) {
  connect(feed, &app::RunFeed::run_started, this, &LiveView::begin_run);
  connect(feed, &app::RunFeed::metrics, this, &LiveView::add_metrics);
  connect(feed, &app::RunFeed::layer_times, this, &LiveView::add_layer_times);
  connect(feed, &app::RunFeed::layer_overflows, this, &LiveView::add_layer_overflows);
  connect(feed, &app::RunFeed::fp8_tensors, this, &LiveView::add_fp8_tensors);
  connect(feed, &app::RunFeed::run_finished, this, &LiveView::end_run);
}

void LiveView::add_layer_times(const app::LayerTimes& times) {
  if (times.run_id != run_id_) return;
  for (const LayerTiming& t : times.layers) {
    const auto i = static_cast<std::size_t>(t.layer);
    if (t.layer < 0 || i >= layer_forward_ms_.size()) continue;
    const auto keep = [](std::deque<double>& window, double ms) {
      window.push_back(ms);
      if (window.size() > kMedianWindow) window.pop_front();
    };
    keep(layer_forward_ms_[i], t.forward_ms);
    keep(layer_backward_ms_[i], t.backward_ms);
  }
  if (!layer_refresh_->isActive()) layer_refresh_->start();
}

void LiveView::add_layer_overflows(const app::LayerOverflows& overflows) {
  if (overflows.run_id != run_id_) return;
  for (const LayerOverflow& o : overflows.layers) {
    overflows_->add(o.layer, layer_titles_.value(o.layer), overflows.step, o.nonfinite, o.values);
  }
  overflows_->setVisible(!overflows_->rows().empty());
}

void LiveView::add_fp8_tensors(const app::Fp8Tensors& tensors) {
  if (tensors.run_id != run_id_) return;
  const double x = static_cast<double>(tensors.step);
  // A matmul's three tensors, summed for its rounding shares.
  std::map<std::pair<int, int>, std::array<std::int64_t, 3>> counts;  // values, sat., flushed
  std::vector<std::pair<int, int>> touched;
  for (const Fp8TensorStep& t : tensors.tensors) {
    const std::pair key{t.layer, t.part};
    auto [it, added] = fp8_points_.try_emplace(key);
    if (added) {
      fp8_keys_.push_back(key);
      QString name = layer_titles_.value(t.layer, tr("layer %1").arg(t.layer));
      static const char* const kProjections[] = {"query", "key", "value", "output"};
      if (t.part > 0 || name.contains(QStringLiteral("MultiHeadAttention")))
        name += QStringLiteral(": ") +
                (t.part < 4 ? tr("%1 projection").arg(QLatin1String(kProjections[t.part]))
                            : tr("matmul %1").arg(t.part));
      const QSignalBlocker block(fp8_matmul_);
      fp8_matmul_->addItem(name);
    }
    const int role = static_cast<int>(t.role);
    // A log axis: amaxes of 0 (nothing but zeros) and NaN are left out.
    if (t.amax > 0.0f && std::isfinite(t.amax)) it->second[role].emplace_back(x, t.amax);
    it->second[3 + role].emplace_back(x, t.next_scale);
    auto& c = counts[key];
    c[0] += t.values;
    c[1] += t.saturated;
    c[2] += t.flushed;
    if (touched.empty() || touched.back() != key) touched.push_back(key);
  }
  for (const auto& [key, c] : counts) {
    Fp8Points& p = fp8_points_[key];
    const double n = c[0] > 0 ? static_cast<double>(c[0]) : 1.0;
    p[6].emplace_back(x, 100.0 * static_cast<double>(c[1]) / n);
    p[7].emplace_back(x, 100.0 * static_cast<double>(c[2]) / n);
  }
  if (fp8_panel_->isHidden() && !fp8_keys_.empty()) {
    fp8_panel_->show();
    fp8_matmul_->setCurrentIndex(0);
    show_fp8_matmul(0);
    return;
  }
  // The chosen matmul's new points.
  const int shown = fp8_matmul_->currentIndex();
  if (shown < 0 || static_cast<std::size_t>(shown) >= fp8_keys_.size()) return;
  const auto key = fp8_keys_[static_cast<std::size_t>(shown)];
  if (std::find(touched.begin(), touched.end(), key) == touched.end()) return;
  const Fp8Points& p = fp8_points_[key];
  for (std::size_t s = 0; s < 6; ++s) {
    if (p[s].empty() || p[s].back().x() != x) continue;
    (s < 3 ? fp8_amax_ : fp8_scales_)
        ->append_points(static_cast<int>(s % 3), std::span(&p[s].back(), 1));
  }
  fp8_rounding_->append_points(saturated_, std::span(&p[6].back(), 1));
  fp8_rounding_->append_points(flushed_, std::span(&p[7].back(), 1));
}

void LiveView::show_fp8_matmul(int index) {
  if (index < 0 || static_cast<std::size_t>(index) >= fp8_keys_.size()) return;
  const Fp8Points& p = fp8_points_[fp8_keys_[static_cast<std::size_t>(index)]];
  for (std::size_t s = 0; s < 6; ++s)
    (s < 3 ? fp8_amax_ : fp8_scales_)->set_points(static_cast<int>(s % 3), p[s]);
  fp8_rounding_->set_points(saturated_, p[6]);
  fp8_rounding_->set_points(flushed_, p[7]);
}

void LiveView::refresh_layer_chart() {
  std::vector<LayerTimeChart::Row> rows;
  for (std::size_t i = 0; i < layer_forward_ms_.size(); ++i) {
    if (layer_forward_ms_[i].empty()) continue;
    rows.push_back({layer_titles_.value(static_cast<qsizetype>(i)),
                    median_of(layer_forward_ms_[i]), median_of(layer_backward_ms_[i])});
  }
  layers_->set_rows(std::move(rows));
}

void LiveView::add_metrics(const app::MetricsBatch& batch) {
  if (batch.empty() || batch.run_id != run_id_) return;
  std::vector<QPointF> step_ms, median, device, samples, loss, acc, scale, skipped;
  for (const StepMetrics& s : batch.steps) {
    const double x = static_cast<double>(s.step);
    window_ms_.push_back(s.step_ms);
    if (window_ms_.size() > kMedianWindow) window_ms_.pop_front();
    last_median_ms_ = median_of(window_ms_);
    last_samples_per_s_ = last_median_ms_ > 0.0 ? s.samples / (last_median_ms_ / 1000.0) : 0.0;
    step_ms.emplace_back(x, s.step_ms);
    median.emplace_back(x, last_median_ms_);
    if (std::isfinite(s.device_ms)) device.emplace_back(x, s.device_ms);
    samples.emplace_back(x, last_samples_per_s_);
    loss.emplace_back(x, s.loss);
    acc.emplace_back(x, s.accuracy);
    scale.emplace_back(x, s.loss_scale);
    if (s.skipped) skipped.emplace_back(x, s.loss_scale);
  }
  step_time_->append_points(step_ms_, step_ms);
  step_time_->append_points(median_ms_, median);
  if (!device.empty()) step_time_->append_points(device_ms_, device);
  throughput_->append_points(samples_, samples);
  loss_->append_points(train_loss_, loss);
  accuracy_->append_points(train_acc_, acc);
  loss_scale_->append_points(scale_, scale);
  if (!skipped.empty()) loss_scale_->append_points(skipped_, skipped);

  // Test figures arrive per epoch, placed at the epoch's last step.
  std::vector<QPointF> test_loss, test_acc;
  const double last_x = batch.steps.empty() ? static_cast<double>(steps_) - 1.0
                                            : static_cast<double>(batch.steps.back().step);
  for (const EpochMetrics& e : batch.epochs) {
    if (std::isfinite(e.test_loss)) test_loss.emplace_back(last_x, e.test_loss);
    if (std::isfinite(e.test_accuracy)) test_acc.emplace_back(last_x, e.test_accuracy);
  }
  if (!test_loss.empty()) loss_->append_points(test_loss_, test_loss);
  if (!test_acc.empty()) accuracy_->append_points(test_acc_, test_acc);

  steps_ += batch.steps.size();
  progress_->setValue(static_cast<int>(std::min<std::size_t>(steps_, INT32_MAX)));
  if (!batch.steps.empty()) {
    const StepMetrics& s = batch.steps.back();
    const QLocale c = QLocale::c();
    figures_->setText(tr("step %1 of %2 · epoch %3 · %4 ms per step · %5 samples/s · loss %6 · "
                         "loss scale %7")
                          .arg(c.toString(static_cast<qlonglong>(s.step + 1)),
                               c.toString(static_cast<qlonglong>(total_steps_)))
                          .arg(s.epoch + 1)
                          .arg(c.toString(last_median_ms_, 'f', 3),
                               c.toString(std::llround(last_samples_per_s_)),
                               c.toString(s.loss, 'f', 4), c.toString(s.loss_scale, 'g', 6)));
  }
}

void LiveView::end_run(qint64 run_id, const RunSummary& summary) {
  if (run_id != run_id_) {
    // It ended before training began (its dataset, its store): its charts stay empty.
    run_id_ = run_id;
    steps_ = 0;
    for (LineChart* c : {step_time_, throughput_, loss_, accuracy_, loss_scale_}) c->clear();
    layers_->set_rows({});
    figures_->clear();
    progress_->setValue(0);
    title_->setText(run_id != 0 ? tr("Run %1 did not start").arg(run_id)
                                : tr("The run did not start"));
  }
  if (layer_refresh_->isActive()) refresh_layer_chart();  // the run's last layer times
  const QString status = QString::fromUtf8(to_string(summary.status).data());
  if (summary.status == RunStatus::finished) {
    const QLocale c = QLocale::c();
    message_->setText(tr("Finished: median step %1 ms (p5 %2, p95 %3), %4 samples/s, test "
                         "accuracy %5")
                          .arg(c.toString(summary.median_step_ms, 'f', 3),
                               c.toString(summary.p5_step_ms, 'f', 3),
                               c.toString(summary.p95_step_ms, 'f', 3),
                               c.toString(std::llround(summary.samples_per_s)),
                               std::isfinite(summary.test_accuracy)
                                   ? c.toString(summary.test_accuracy * 100.0, 'f', 2) + "%"
                                   : tr("not measured")));
    message_->setStyleSheet(QString());
  } else {
    message_->setText(tr("Run %1 %2%3")
                          .arg(run_id)
                          .arg(status)
                          .arg(summary.message.empty()
                                   ? QString()
                                   : ": " + QString::fromStdString(summary.message)));
    message_->setStyleSheet(
        summary.status == RunStatus::stopped ? QString() : QStringLiteral("color: #d03030;"));
  }
  message_->show();
}

void LiveView::show_error(const QString& message) {
  message_->setText(message);
  message_->setStyleSheet(QStringLiteral("color: #d03030;"));
  message_->show();
}

QString LiveView::status_text() const {
  return message_->isVisible() ? message_->text() : figures_->text();
}

void LiveView::export_chart(LineChart* chart) {
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Export chart"), settings::kLastDirectory.get(),
                                   tr("PNG image (*.png);;SVG image (*.svg)"));
  if (path.isEmpty()) return;
  settings::kLastDirectory.set(QFileInfo(path).absolutePath());
  QString error;
  if (!chart->save_image(path, &error)) show_error(error);
}

}  // namespace mixlab::ui
