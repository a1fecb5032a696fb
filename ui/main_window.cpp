#include "ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QScreen>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QUrl>
#include <cmath>

#include "engine/backend/backend.h"
#include "engine/core/error.h"
#include "engine/train/run_fields.h"
#include "resources/builtin_models.h"
#include "ui/doctor/doctor_runs.h"
#include "ui/doctor/doctor_view.h"
#include "ui/editor/document_actions.h"
#include "ui/editor/editor_widget.h"
#include "ui/editor/layer_stack_model.h"
#include "ui/editor/model_document.h"
#include "ui/editor/model_export.h"
#include "ui/history/compare_view.h"
#include "ui/history/history_view.h"
#include "ui/history/sweeps_view.h"
#include "ui/run/live_view.h"
#include "ui/run/run_panel.h"
#include "ui/run/sweep_dialog.h"
#include "ui/run/sweep_runner.h"
#include "ui/settings.h"

namespace mixlab::ui {

MainWindow::MainWindow(std::filesystem::path db_path, QWidget* parent)
    : QMainWindow(parent), db_path_(std::move(db_path)) {
  setObjectName(QStringLiteral("MainWindow"));
  setAcceptDrops(true);  // a .json or .keras model dropped on the window opens
  document_ = new ModelDocument(this);
  editor_ = new EditorWidget(document_);
  document_actions_ = new DocumentActions(document_, this);
  const std::vector<DeviceInfo> devices = available_devices();
  run_panel_ = new RunPanel(devices);
  model_export_ = new ModelExport(document_, [this] { return run_panel_->config(); }, this);
  live_ = new LiveView;
  history_ = new HistoryView(db_path_);
  sweeps_ = new SweepsView(db_path_);
  compare_ = new CompareView(db_path_);
  doctor_ = new DoctorView(document_, devices);
  doctor_->set_store_path(db_path_);
  controller_ = new app::RunController(db_path_, this);
  feed_ = new app::RunFeed(controller_, this);
  live_->follow(feed_);
  // A sweep's members start as the window starts a run, without leaving the tab shown.
  sweep_runner_ = new SweepRunner(
      db_path_, controller_,
      [this](app::RunRequest request) { return launch({std::move(request)}, false); }, this);

  tabs_ = new QTabWidget;
  tabs_->addTab(editor_, tr("&Model"));
  tabs_->addTab(live_, tr("&Live"));
  tabs_->addTab(history_, tr("&History"));
  tabs_->addTab(compare_, tr("&Compare"));
  tabs_->addTab(doctor_, tr("&Doctor"));
  // Last, so that the tab remembered by its index from before it existed is still the same.
  tabs_->addTab(sweeps_, tr("S&weeps"));
  tabs_->setTabToolTip(tabs_->indexOf(editor_), tr("Build the model as a stack of layers"));
  tabs_->setTabToolTip(tabs_->indexOf(live_), tr("The run in progress, live"));
  tabs_->setTabToolTip(tabs_->indexOf(history_),
                       tr("Every run recorded in %1").arg(QString::fromStdString(db_path_)));
  tabs_->setTabToolTip(tabs_->indexOf(sweeps_),
                       tr("Grids of runs: each policy's speed-up over float32 by batch size"));
  tabs_->setTabToolTip(tabs_->indexOf(compare_), tr("Runs side by side"));
  tabs_->setTabToolTip(tabs_->indexOf(doctor_),
                       tr("Why mixed precision is slower or faster than float32 for this "
                          "model, and what to change (Ctrl+Shift+D)"));
  setCentralWidget(tabs_);

  auto* dock = new QDockWidget(tr("Run"), this);
  dock->setObjectName(QStringLiteral("RunDock"));
  dock->setWidget(run_panel_);
  addDockWidget(Qt::RightDockWidgetArea, dock);
  resizeDocks({dock}, {400}, Qt::Horizontal);

  device_label_ = new QLabel;
  sweep_label_ = new QLabel;
  sweep_label_->setObjectName(QStringLiteral("sweep_progress"));
  sweep_label_->hide();
  statusBar()->addPermanentWidget(sweep_label_);
  statusBar()->addPermanentWidget(device_label_);

  build_menus();

  const auto show_error = [this](const QString& message) {
    statusBar()->showMessage(message, 10000);
  };
  connect(document_, &ModelDocument::changed, this, &MainWindow::update_validity);
  connect(document_, &ModelDocument::modified_changed, this, &MainWindow::update_title);
  connect(document_, &ModelDocument::file_path_changed, this, &MainWindow::update_title);
  connect(document_actions_, &DocumentActions::error, this, show_error);
  connect(model_export_, &ModelExport::error, this, show_error);
  connect(model_export_, &ModelExport::exported, this,
          [this](const QString& message) { statusBar()->showMessage(message, 10000); });
  connect(document_, &ModelDocument::imported, this, &MainWindow::show_import);
  connect(run_panel_, &RunPanel::precision_changed, document_, &ModelDocument::set_policy);
  connect(run_panel_, &RunPanel::training_changed, editor_, &EditorWidget::set_training);
  connect(run_panel_, &RunPanel::settings_changed, doctor_, &DoctorView::set_run);
  // The doctor's findings badge their layers in the editor; a finding selects its first layer
  // there, and activating it shows the layer.
  connect(doctor_, &DoctorView::layer_findings_changed, editor_->stack_model(),
          &LayerStackModel::set_layer_findings);
  connect(doctor_, &DoctorView::layer_selected, editor_, &EditorWidget::select_layer);
  connect(doctor_, &DoctorView::layer_activated, this, [this](int layer) {
    editor_->select_layer(layer);
    tabs_->setCurrentWidget(editor_);
  });
  connect(run_panel_, &RunPanel::start_requested, this, &MainWindow::start_run);
  connect(run_panel_, &RunPanel::stop_requested, this, [this] {
    sweep_runner_->stop();  // the sweep stops with its member's run
    controller_->stop();
  });
  connect(run_panel_, &RunPanel::compare_requested, this, &MainWindow::start_precision_comparison);
  connect(run_panel_, &RunPanel::compare_all_requested, this, &MainWindow::start_policy_comparison);
  connect(run_panel_, &RunPanel::sweep_requested, this, &MainWindow::open_sweep_dialog);
  connect(sweeps_, &SweepsView::error, this, show_error);
  connect(sweeps_, &SweepsView::resume_requested, this, &MainWindow::resume_sweep);
  connect(sweep_runner_, &SweepRunner::member_ended, sweeps_, &SweepsView::reload);
  connect(sweep_runner_, &SweepRunner::progress, this,
          [this](qint64 id, int ended, int total, double seconds_left) {
            QString text = tr("Sweep %1: %2/%3 runs").arg(id).arg(ended).arg(total);
            if (std::isfinite(seconds_left) && ended < total) {
              text += seconds_left < 90
                          ? tr(", about %1 s left").arg(std::lround(seconds_left))
                          : tr(", about %1 min left").arg(std::lround(seconds_left / 60));
            }
            sweep_label_->setText(text);
            sweep_label_->show();
          });
  connect(sweep_runner_, &SweepRunner::sweep_ended, this, [this](qint64 id, const QString& state) {
    sweep_label_->hide();
    statusBar()->showMessage(tr("Sweep %1 %2").arg(id).arg(state), 10000);
    sweeps_->reload();
    sweeps_->select_sweep(id);
  });
  connect(history_, &HistoryView::error, this, show_error);
  connect(compare_, &CompareView::error, this, show_error);
  // Runs recorded by mixlab-cli (or another window) show up whenever the history is looked at.
  connect(tabs_, &QTabWidget::currentChanged, this, [this](int index) {
    if (tabs_->widget(index) == history_) history_->reload();
    if (tabs_->widget(index) == sweeps_) sweeps_->reload();
  });
  connect(compare_, &CompareView::diagnose_requested, this,
          [this, show_error](qint64 f32, qint64 mixed) {
    QString error;
    if (const std::optional<RunPair> pair = load_run_pair(db_path_, f32, mixed, &error)) {
      doctor_->diagnose_runs(*pair);
      tabs_->setCurrentWidget(doctor_);
    } else {
      show_error(error);
    }
  });
  connect(history_, &HistoryView::compare_requested, this, [this](const QList<qint64>& ids) {
    compare_->show_runs(ids);
    tabs_->setCurrentWidget(compare_);
  });

  connect(feed_, &app::RunFeed::run_started, this, [this](const app::StartedRun& run) {
    statusBar()->showMessage(tr("Run %1 started on %2").arg(run.run_id).arg(run.device_name));
  });
  connect(feed_, &app::RunFeed::run_finished, this,
          [this](qint64 run_id, const RunSummary& summary) {
            history_->reload();
            const QString status = QString::fromUtf8(to_string(summary.status).data());
            statusBar()->showMessage(
                summary.message.empty()
                    ? tr("Run %1 %2").arg(run_id).arg(status)
                    : tr("Run %1 %2: %3")
                          .arg(run_id)
                          .arg(status, QString::fromStdString(summary.message)));
          });
  connect(feed_, &app::RunFeed::queue_finished, this, [this](const QList<qint64>& ids) {
    set_running(false);
    if (compare_when_done_ && ids.size() >= 2) {
      compare_->show_runs(ids);
      tabs_->setCurrentWidget(compare_);
    }
    compare_when_done_ = false;
    sweep_runner_->queue_finished();  // records the member, starts the next one
  });

  device_label_->setText(
      tr("Device: %1").arg(QString::fromStdString(run_panel_->device_info().name)));
  device_label_->setToolTip(QString::fromStdString(run_panel_->device_info().library_versions()));
  document_->set_policy(run_panel_->precision());
  editor_->set_training(run_panel_->batch_size(), run_panel_->optimizer());
  doctor_->set_run(run_panel_->settings());

  if (!restoreGeometry(settings::kWindowGeometry.get())) {
    // 1400x900, or the screen's free area when smaller (a 1366x768 laptop): the layouts fit
    // 1366x698 with the Run dock open.
    QSize size(1400, 900);
    if (const QScreen* s = screen()) size = size.boundedTo(s->availableGeometry().size());
    resize(size);
  }
  restoreState(settings::kWindowState.get());
  tabs_->setCurrentIndex(std::clamp(settings::kCurrentTab.get(), 0, tabs_->count() - 1));
  update_validity();
  update_title();
}

MainWindow::~MainWindow() = default;

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(document_actions_->new_action());
  file->addAction(document_actions_->open_action());
  file->addAction(document_actions_->import_action());
  file->addMenu(document_actions_->templates_menu());
  file->addAction(document_actions_->save_action());
  file->addAction(document_actions_->save_as_action());
  file->addAction(model_export_->export_action());
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  edit->addActions(editor_->edit_actions());

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(run_panel_->start_action());
  run->addAction(run_panel_->stop_action());
  run->addAction(run_panel_->compare_action());
  run->addAction(run_panel_->compare_all_action());
  run->addAction(run_panel_->sweep_action());
  run->addSeparator();
  loss_scaling_demo_ = run->addAction(tr("&Loss-scaling demo (tiny-gpt, float16)"), this,
                                      [this] { start_loss_scaling_demo(); });
  loss_scaling_demo_->setObjectName(QStringLiteral("loss_scaling_demo"));
  loss_scaling_demo_->setToolTip(
      tr("Train tiny-gpt under mixed_float16 from a loss scale of 2^30: static, its float16 "
         "gradients overflow on every step (see the skipped steps and the per-layer overflow "
         "table); dynamic, the scale backs off until they fit and training recovers"));
  // The run panel's shortcuts work wherever the focus is.
  for (QAction* a :
       {run_panel_->start_action(), run_panel_->stop_action(), run_panel_->sweep_action()})
    a->setShortcutContext(Qt::ApplicationShortcut);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  QAction* refresh = view->addAction(tr("&Refresh history"), this, [this] { history_->reload(); });
  refresh->setShortcut(QKeySequence::Refresh);
  refresh->setToolTip(tr("Read the run history again (runs recorded by mixlab-cli appear)"));
  QAction* doctor = view->addAction(tr("&Doctor"), this, [this] { tabs_->setCurrentWidget(doctor_); });
  doctor->setObjectName(QStringLiteral("show_doctor"));
  doctor->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
  doctor->setShortcutContext(Qt::ApplicationShortcut);
  doctor->setToolTip(tr("Why mixed precision is slower or faster than float32 here"));
  view->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About MixLab"), this, &MainWindow::show_about);
}

bool MainWindow::open_model(const QString& file_or_builtin) {
  const auto& names = builtin_model_names();
  const std::string name = file_or_builtin.toStdString();
  if (std::find(names.begin(), names.end(), name) != names.end()) {
    document_actions_->open_template(file_or_builtin);
    return true;
  }
  return document_actions_->open_file(file_or_builtin);
}

void MainWindow::update_validity() {
  const ModelDocument::Validation& v = document_->validation();
  run_panel_->set_blocked_reason(v.ok ? QString() : v.message);
  std::int64_t outputs = 0, positions = 1;
  if (v.ok && v.table) {
    outputs = v.table->classes();
    positions = v.table->label_positions();
  }
  int vocabulary = 0;  // the Embedding's rows, for token datasets
  for (const LayerSpec& layer : document_->spec().layers) {
    if (layer.type == LayerType::Embedding) {
      vocabulary = layer.input_dim;
      break;
    }
  }
  run_panel_->set_model_shape(document_->spec().input_shape, outputs, vocabulary, positions);
}

void MainWindow::update_title() {
  setWindowTitle(tr("%1[*] - MixLab").arg(document_->display_name()));
  setWindowModified(document_->is_modified());
}

app::RunRequest MainWindow::request_for(const RunConfig& config) const {
  app::RunRequest r;
  r.spec = document_->spec();
  r.model_name = r.spec.name.empty() ? QFileInfo(document_->display_name()).baseName().toStdString()
                                     : r.spec.name;
  r.config = config;
  // An imported Keras model's weights, while its parameters are unchanged.
  r.config.initial_weights = document_->initial_weights();
  r.device = run_panel_->device();
  return r;
}

bool MainWindow::launch(std::vector<app::RunRequest> runs, bool show_live) {
  if (!controller_->start(std::move(runs))) {
    statusBar()->showMessage(tr("A run is in progress: stop it first (Ctrl+.)"), 5000);
    return false;
  }
  set_running(true);
  if (show_live) tabs_->setCurrentWidget(live_);
  return true;
}

void MainWindow::set_running(bool running) {
  run_panel_->set_running(running);
  doctor_->set_run_active(running);
  sweeps_->set_running(running);
}

std::string MainWindow::sweep_model_name() const {
  if (!document_->file_path().isEmpty() && !document_->is_modified())
    return document_->file_path().toStdString();
  const ModelSpec& spec = document_->spec();
  return spec.name.empty() ? QFileInfo(document_->display_name()).baseName().toStdString()
                           : spec.name;
}

void MainWindow::open_sweep_dialog() {
  if (!document_->validation().ok) {
    statusBar()->showMessage(tr("Cannot start: %1").arg(document_->validation().message), 10000);
    return;
  }
  try {
    SweepDialog dialog(sweep_base(*run_panel_, sweep_model_name()), this);
    if (dialog.exec() == QDialog::Accepted) start_sweep(dialog.spec());
  } catch (const Error& e) {
    statusBar()->showMessage(tr("Cannot start: %1").arg(QString::fromStdString(e.what())), 10000);
  }
}

bool MainWindow::start_sweep(const store::SweepSpec& spec) {
  if (!document_->validation().ok) {
    statusBar()->showMessage(tr("Cannot start: %1").arg(document_->validation().message), 10000);
    return false;
  }
  sweep_runner_->set_editor_model(sweep_model_name(), document_->spec(),
                                  document_->initial_weights());
  if (sweep_runner_->start(spec) != 0) {
    tabs_->setCurrentWidget(live_);
    return true;
  }
  statusBar()->showMessage(tr("Cannot start the sweep: %1").arg(sweep_runner_->error()), 10000);
  return false;
}

bool MainWindow::resume_sweep(std::int64_t sweep_id) {
  if (document_->validation().ok)
    sweep_runner_->set_editor_model(sweep_model_name(), document_->spec(),
                                    document_->initial_weights());
  if (sweep_runner_->resume(sweep_id)) {
    tabs_->setCurrentWidget(live_);
    return true;
  }
  statusBar()->showMessage(
      tr("Cannot resume sweep %1: %2").arg(sweep_id).arg(sweep_runner_->error()), 10000);
  sweeps_->reload();
  return false;
}

bool MainWindow::start_run() {
  if (!document_->validation().ok) {
    statusBar()->showMessage(tr("Cannot start: %1").arg(document_->validation().message), 10000);
    return false;
  }
  try {
    return launch({request_for(run_panel_->config())});
  } catch (const Error& e) {
    live_->show_error(QString::fromStdString(e.what()));
    statusBar()->showMessage(tr("Cannot start: %1").arg(QString::fromStdString(e.what())), 10000);
    return false;
  }
}

bool MainWindow::start_precision_comparison() {
  if (!document_->validation().ok) return false;
  try {
    std::vector<app::RunRequest> runs{
        request_for(run_panel_->config_with(Policy::float32)),
        request_for(run_panel_->config_with(run_panel_->mixed_policy()))};
    compare_when_done_ = launch(std::move(runs));
    return compare_when_done_;
  } catch (const Error& e) {
    live_->show_error(QString::fromStdString(e.what()));
    return false;
  }
}

bool MainWindow::start_policy_comparison() {
  if (!document_->validation().ok) return false;
  try {
    std::vector<app::RunRequest> runs;
    for (const Policy p : run_panel_->comparison_policies())
      runs.push_back(request_for(run_panel_->config_with(p)));
    compare_when_done_ = launch(std::move(runs));
    return compare_when_done_;
  } catch (const Error& e) {
    live_->show_error(QString::fromStdString(e.what()));
    return false;
  }
}

bool MainWindow::start_loss_scaling_demo() {
  if (controller_->busy()) {
    statusBar()->showMessage(tr("A run is in progress: stop it first (Ctrl+.)"), 5000);
    return false;
  }
  if (!document_actions_->maybe_save() || !document_actions_->open_template("tiny-gpt"))
    return false;
  constexpr int kDemoSteps = 60;  // about 45 s on a 2-core CPU in emulated float16
  constexpr double kOverflowingScale = 1073741824.0;  // 2^30: tiny-gpt's gradients exceed 65504
  run_panel_->set_precision(Policy::mixed_float16);
  if (const QString problem = run_panel_->set_dataset(QStringLiteral("tokens:synthetic:128:256"));
      !problem.isEmpty()) {
    statusBar()->showMessage(tr("Cannot start the demo: %1").arg(problem), 10000);
    return false;
  }
  run_panel_->set_steps(kDemoSteps);
  run_panel_->set_field_text(run_field("loss_scale"), QStringLiteral("dynamic:1073741824"));
  update_validity();
  if (!document_->validation().ok) {
    statusBar()->showMessage(tr("Cannot start: %1").arg(document_->validation().message), 10000);
    return false;
  }
  try {
    RunConfig fixed = run_panel_->config();
    fixed.loss_scale = LossScaleConfig::fixed(kOverflowingScale);
    RunConfig dynamic = run_panel_->config();
    dynamic.loss_scale = LossScaleConfig::dynamic();
    dynamic.loss_scale.initial_scale = kOverflowingScale;
    if (!launch({request_for(fixed), request_for(dynamic)})) return false;
    statusBar()->showMessage(
        tr("Loss-scaling demo: a static scale of 2^30 first (float16 overflows; the run ends "
           "diverged), then a dynamic one from 2^30 (it backs off and recovers)"),
        15000);
    return true;
  } catch (const Error& e) {
    live_->show_error(QString::fromStdString(e.what()));
    return false;
  }
}

void MainWindow::show_about() {
  // Which backends can train here, and why one cannot.
  QString backends;
  for (const BackendStatus& b : backend_statuses()) {
    backends += QStringLiteral("<li><b>%1</b>: %2 %3</li>")
                    .arg(QString::fromStdString(b.name),
                         b.available ? tr("available,") : tr("unavailable:"),
                         QString::fromStdString(b.detail).toHtmlEscaped());
  }
  QMessageBox::about(
      this, tr("About MixLab"),
      tr("<h3>MixLab %1</h3><p>A workbench for mixed-precision training experiments.</p>"
         "<p>Backends:<ul>%2</ul></p><p>Qt %3. Run history: %4</p>")
          .arg(QStringLiteral(MIXLAB_VERSION), backends, QString::fromLatin1(qVersion()),
               QString::fromStdString(db_path_.string()).toHtmlEscaped()));
}

void MainWindow::show_import() {
  const ModelDocument::Import* import = document_->last_import();
  if (import == nullptr) return;
  // The file's policy is the run's, as the run panel shows it (it drives the document's).
  run_panel_->set_precision(document_->policy());
  const QString name = QFileInfo(import->path).fileName();
  QString message =
      tr("Imported %1 (%2): %n layer(s)", nullptr, static_cast<int>(document_->spec().layers.size()))
          .arg(name, QString::fromStdString(import->format));
  if (import->weights) {
    message += tr(", starting weights for %n layer(s)", nullptr,
                  static_cast<int>(import->weights->layers.size()));
  }
  message += tr(", precision %1").arg(QString::fromUtf8(to_string(document_->policy())));
  statusBar()->showMessage(message, 15000);
  if (import->warnings.empty()) return;
  QStringList lines;
  for (const std::string& w : import->warnings) lines << QString::fromStdString(w);
  // Not modal for the event loop: the window stays usable (and tests are not blocked).
  auto* box = new QMessageBox(QMessageBox::Information, tr("Imported with warnings"),
                              tr("%1\n\nMixLab does not model %n field(s) of this file:", nullptr,
                                 static_cast<int>(lines.size()))
                                  .arg(message),
                              QMessageBox::Ok, this);
  box->setObjectName(QStringLiteral("ImportWarnings"));
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setInformativeText(lines.mid(0, 5).join(QLatin1Char('\n')));
  box->setDetailedText(lines.join(QLatin1Char('\n')));
  box->open();
}

QStringList MainWindow::droppable_models(const QMimeData* mime) {
  QStringList paths;
  if (mime == nullptr || !mime->hasUrls()) return paths;
  for (const QUrl& url : mime->urls()) {
    if (!url.isLocalFile()) continue;
    const QString path = url.toLocalFile();
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("json") || suffix == QLatin1String("keras")) paths << path;
  }
  return paths;
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (!droppable_models(event->mimeData()).isEmpty()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QStringList paths = droppable_models(event->mimeData());
  if (paths.isEmpty()) return;
  event->acceptProposedAction();
  if (document_actions_->maybe_save()) document_actions_->open_file(paths.front());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!document_actions_->maybe_save()) {
    event->ignore();
    return;
  }
  settings::kWindowGeometry.set(saveGeometry());
  settings::kWindowState.set(saveState());
  settings::kCurrentTab.set(tabs_->currentIndex());
  controller_->stop();  // the run in progress ends within a step and is recorded as stopped
  event->accept();
}

}  // namespace mixlab::ui
