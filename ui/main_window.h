// The main window only wires the panels together: the layer-stack editor, the run panel (a
// dock), the live charts, the run history, the sweeps, the comparison and the doctor; menus,
// shortcuts and the status bar. The live view takes the run controller's events from the feed
// itself.
#pragma once

#include <QList>
#include <QMainWindow>
#include <filesystem>
#include <string>

#include "app/run/run_controller.h"
#include "app/run/run_feed.h"
#include "app/store/sweep_plan.h"

class QLabel;
class QMimeData;
class QTabWidget;
class QTimer;

namespace mixlab::ui {

class CompareView;
class DoctorView;
class DocumentActions;
class EditorWidget;
class HistoryView;
class LiveView;
class ModelDocument;
class ModelExport;
class RunPanel;
class SweepRunner;
class SweepsView;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(std::filesystem::path db_path, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a model: a file path (MixLab or Keras) or a built-in model's name ("fashion-mlp").
  bool open_model(const QString& file_or_builtin);
  // The model files a drop on the window would open (.json, .keras; the first is opened).
  static QStringList droppable_models(const QMimeData* mime);

  ModelDocument* document() const { return document_; }
  EditorWidget* editor() const { return editor_; }
  DocumentActions* document_actions() const { return document_actions_; }
  ModelExport* model_export() const { return model_export_; }
  RunPanel* run_panel() const { return run_panel_; }
  LiveView* live_view() const { return live_; }
  HistoryView* history_view() const { return history_; }
  SweepsView* sweeps_view() const { return sweeps_; }
  SweepRunner* sweep_runner() const { return sweep_runner_; }
  CompareView* compare_view() const { return compare_; }
  DoctorView* doctor_view() const { return doctor_; }
  app::RunController* controller() const { return controller_; }
  // The controller's events in order, on the GUI thread (the live view, this window, tests).
  app::RunFeed* feed() const { return feed_; }
  QTabWidget* tabs() const { return tabs_; }

  // Starts the run as set up; false (with the reason in the status bar) when it cannot.
  bool start_run();
  // Queues float32 and the mixed policy with otherwise identical settings; opens their
  // comparison when both have finished.
  bool start_precision_comparison();
  // "All policies": the model once per policy the device runs, then their comparison.
  bool start_policy_comparison();
  // Run ▸ Loss-scaling demo (issue 29): tiny-gpt under mixed_float16 from a loss scale of 2^30,
  // where its float16 gradients overflow, as two runs: that scale static (every step skipped,
  // the overflow table filling; the run ends diverged), then dynamic from it (it backs off until
  // the gradients fit, and training goes on). Asks to save an edited model first; false when it
  // does not start.
  bool start_loss_scaling_demo();
  QAction* loss_scaling_demo_action() const { return loss_scaling_demo_; }
  // The editor's model as a sweep names it: its file when saved, else its name.
  std::string sweep_model_name() const;
  // Asks for a sweep (the Sweep dialog) and starts it.
  void open_sweep_dialog();
  // Runs a sweep's members one after another with the run panel's device; false (with the
  // reason in the status bar) when it cannot start.
  bool start_sweep(const store::SweepSpec& spec);
  bool resume_sweep(std::int64_t sweep_id);

 protected:
  void closeEvent(QCloseEvent* event) override;
  // A .json or .keras file dropped on the window opens (a Keras file is imported).
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void build_menus();
  void update_validity();
  void update_title();
  void show_about();
  void show_import();  // after a Keras import: the run's policy, and what was not modelled
  // Starts runs on the controller; `show_live`: switch to the Live tab.
  bool launch(std::vector<app::RunRequest> runs, bool show_live = true);
  void set_running(bool running);
  app::RunRequest request_for(const RunConfig& config) const;

  std::filesystem::path db_path_;
  ModelDocument* document_ = nullptr;
  EditorWidget* editor_ = nullptr;
  DocumentActions* document_actions_ = nullptr;
  QAction* loss_scaling_demo_ = nullptr;
  ModelExport* model_export_ = nullptr;
  RunPanel* run_panel_ = nullptr;
  LiveView* live_ = nullptr;
  HistoryView* history_ = nullptr;
  SweepsView* sweeps_ = nullptr;
  SweepRunner* sweep_runner_ = nullptr;
  QLabel* sweep_label_ = nullptr;
  CompareView* compare_ = nullptr;
  DoctorView* doctor_ = nullptr;
  app::RunController* controller_ = nullptr;
  app::RunFeed* feed_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QLabel* device_label_ = nullptr;
  bool compare_when_done_ = false;
};

}  // namespace mixlab::ui
