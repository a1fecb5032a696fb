// The Doctor tab: why the mixed policy is slower or faster than float32 for the model in the
// editor, at the Run panel's settings (batch size, optimizer, GPU options), on a device picked
// here (this CPU, a GPU present, or a GPU profile: a prediction). The verdict first, then the findings (clicking one
// selects its first layer in the Model tab, whose layer list badges every layer with findings),
// a roofline chart, where each policy's step time goes and the predicted speed-up by batch
// size. Measure runs both policies on this machine's device (doctor::measure, on a thread) and
// sets the measurement beside the prediction; Save report… writes the JSON and a CSV of the
// findings. The prediction follows every change of its inputs at once (a few ms).
#pragma once

#include <QMap>
#include <QStringList>
#include <QWidget>
#include <filesystem>
#include <optional>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/doctor/diagnosis.h"
#include "ui/doctor/doctor_devices.h"
#include "ui/doctor/doctor_runs.h"

class QAbstractItemView;
class QCheckBox;
class QComboBox;
class QStandardItemModel;
class QLabel;
class QPushButton;
class QTableView;
class QTimer;

namespace mixlab::ui {

class DoctorCharts;
class DoctorWorker;
class FindingsModel;
class ModelDocument;

class DoctorView : public QWidget {
  Q_OBJECT

 public:
  // `devices`: engine available_devices(), the CPU first.
  DoctorView(ModelDocument* doc, const std::vector<DeviceInfo>& devices,
             QWidget* parent = nullptr);
  ~DoctorView() override;

  // Where Measure keeps its two runs (tagged "doctor") and the report: the window's run store.
  void set_store_path(const std::filesystem::path& db);
  // The Run panel's settings, which the diagnosis (and its measurement) is made at: the batch
  // size, optimizer, seed, threads and GPU options (doctor::DiagnosisInput::run).
  void set_run(const RunConfig& run);
  // The Compare tab's float32 vs mixed pair of runs: their model, settings, mixed policy and
  // device instead of the editor's and the Run panel's, with the runs as the measurement, until
  // back_to_editor() (the "Back to the editor's model" button).
  void diagnose_runs(const RunPair& pair);
  void back_to_editor();
  bool showing_runs() const { return pinned_.has_value(); }
  QPushButton* back_button() const { return back_; }
  // While a run trains, Measure waits (both would share the device and disturb each other).
  void set_run_active(bool active);

  // Picks the device whose label or profile name is `name` ("RTX 2060"); false when none is.
  bool select_device(const QString& name);
  // The mixed policy set against float32; nullopt: the device's own choice (the default).
  void set_mixed_policy(std::optional<Policy> policy);
  // Diagnoses now what a change scheduled (tests; the GUI waits for the event loop).
  void refresh_now();

  // The current diagnosis; nullptr while there is none (an invalid model, this CPU's roofs
  // still being measured, an error).
  const doctor::Diagnosis* diagnosis() const;
  QString verdict_text() const;
  QString status_text() const;
  FindingsModel* findings_model() const { return findings_; }
  QAbstractItemView* findings_view() const;
  DoctorCharts* charts() const { return charts_; }
  QComboBox* device_picker() const { return device_; }
  QComboBox* policy_picker() const { return policy_; }
  QPushButton* measure_button() const { return measure_; }
  // On this machine's devices each layer is timed (or read from the layer-times cache) after
  // the roofline's prediction shows, and replaces it per layer; unticked: the roofline alone.
  QCheckBox* time_layers_box() const { return time_layers_; }
  // For a GPU profile: the device of this machine whose layer timing is scaled to it (the first
  // item: none, the model alone).
  QComboBox* scale_from_picker() const { return scale_from_; }
  bool timing_layers() const;
  // "Layers: each timed on this CPU (read from PATH)", or why they are the roofline's.
  QString layers_text() const;
  // The confidence line under the verdict (doctor::zoo_confidence).
  QString confidence_text() const;
  // Each layer's figures: its title, where they come from ("timed here", "roofline model"),
  // float32's and the mixed policy's time and the roofline model's beside each (ms).
  QAbstractItemView* layers_view() const;
  QPushButton* cancel_button() const { return cancel_; }
  bool busy() const;  // measuring this CPU's roofs, or a measurement

  // Writes the report (JSON at `json_path`, the findings' CSV beside it); false with the reason
  // in `error` when there is no diagnosis or a file cannot be written.
  bool save_report(const QString& json_path, QString* error = nullptr);

 signals:
  // A finding naming layers was selected (clicked, or reached with the keys): its first layer.
  void layer_selected(int layer);
  // A finding naming layers was activated (double-click, Enter): its first layer, to show.
  void layer_activated(int layer);
  // Each layer a finding of the current diagnosis names, one line per finding; empty when
  // there is no diagnosis.
  void layer_findings_changed(const QMap<int, QStringList>& findings);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  QWidget* build_controls();
  void schedule();
  void recompute();
  void show_diagnosis(std::optional<doctor::Diagnosis> d, const QString& why_none = {});
  void update_policy_choice();
  void update_actions();
  void start_measure();
  void save_report_as();
  void set_status(const QString& text, bool error = false);
  void on_device_profiled(const QString& device, const doctor::DeviceProfile& profile,
                          bool measured_now, const QString& not_measured);
  void on_measured(const doctor::Measurement& m, const doctor::DiagnosisInput& input);
  void on_failed(const QString& message, bool cancelled);
  void on_layers_timed(const doctor::Measurement& times, const doctor::DiagnosisInput& input,
                       const QString& note);
  void show_layers();
  DoctorDevice& current_device();
  const DoctorDevice& current_device() const;
  // The device of this machine whose timing is scaled to the current profile; nullptr for none
  // (or when the current device is this machine's own).
  const DoctorDevice* scale_source() const;
  void update_scale_choice();
  std::optional<doctor::DiagnosisInput> current_input(QString* why_none);

  ModelDocument* doc_;
  std::vector<DoctorDevice> devices_;
  RunConfig run_;  // the Run panel's
  bool run_active_ = false;
  std::optional<doctor::Diagnosis> diagnosis_;
  // The last measurement and the input it was made at: shown while the input stays the same.
  std::optional<doctor::Measurement> measured_;
  std::optional<doctor::DiagnosisInput> measured_input_;
  std::optional<RunPair> pinned_;  // runs from Compare, diagnosed instead of the editor's model
  // The layers timed on this machine's device and the input they were timed at (or the last
  // measurement's, which times them too); the input whose timing failed, and why.
  std::optional<doctor::Measurement> layer_times_;
  std::optional<doctor::DiagnosisInput> layer_times_input_;
  std::optional<doctor::DiagnosisInput> timing_input_;  // of the timing under way
  QString layer_note_;
  std::optional<doctor::DiagnosisInput> timing_failed_input_;
  QString timing_error_;

  DoctorWorker* worker_ = nullptr;
  QTimer* recompute_timer_ = nullptr;  // single shot, 0 ms: one diagnosis per burst of changes
  QComboBox* device_ = nullptr;
  QComboBox* policy_ = nullptr;
  QPushButton* measure_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QPushButton* save_ = nullptr;
  QPushButton* back_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* verdict_ = nullptr;
  QLabel* figures_ = nullptr;
  QLabel* confidence_ = nullptr;
  QLabel* layers_label_ = nullptr;
  QCheckBox* time_layers_ = nullptr;
  QLabel* scale_label_ = nullptr;
  QComboBox* scale_from_ = nullptr;
  QStandardItemModel* layers_model_ = nullptr;
  QTableView* layers_table_ = nullptr;
  FindingsModel* findings_ = nullptr;
  QTableView* table_ = nullptr;
  DoctorCharts* charts_ = nullptr;
};

}  // namespace mixlab::ui
