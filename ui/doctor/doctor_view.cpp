#include "ui/doctor/doctor_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "engine/core/error.h"
#include "engine/doctor/doctor_text.h"
#include "engine/doctor/layer_cache.h"
#include "engine/doctor/local_profile.h"
#include "engine/doctor/measure.h"
#include "engine/spec/layer_text.h"
#include "ui/doctor/doctor_charts.h"
#include "ui/doctor/doctor_figures.h"
#include "ui/doctor/doctor_report.h"
#include "ui/doctor/doctor_worker.h"
#include "ui/doctor/findings_model.h"
#include "ui/editor/model_document.h"
#include "ui/qt_text.h"
#include "ui/settings.h"

namespace mixlab::ui {
namespace {

// The measurement Measure runs: as mixlab-cli doctor --measure does by default.
constexpr int kMeasureSteps = 30;
constexpr int kMeasureWarmup = 5;
constexpr int kTableHeight_px = 240;  // at first: the splitter moves it

}  // namespace

DoctorView::DoctorView(ModelDocument* doc, const std::vector<DeviceInfo>& devices,
                       QWidget* parent)
    : QWidget(parent), doc_(doc), devices_(doctor_devices(devices)) {
  worker_ = new DoctorWorker(this);
  recompute_timer_ = new QTimer(this);
  recompute_timer_->setSingleShot(true);
  recompute_timer_->setInterval(0);
  connect(recompute_timer_, &QTimer::timeout, this, &DoctorView::recompute);

  verdict_ = new QLabel;
  verdict_->setObjectName(QStringLiteral("doctor_verdict"));
  verdict_->setWordWrap(true);
  verdict_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = verdict_->font();
  bold.setBold(true);
  verdict_->setFont(bold);
  figures_ = new QLabel;
  figures_->setWordWrap(true);
  figures_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  findings_ = new FindingsModel(this);
  table_ = new QTableView;
  table_->setObjectName(QStringLiteral("doctor_findings"));
  table_->setModel(findings_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setWordWrap(true);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  QHeaderView* header = table_->horizontalHeader();
  header->setSectionResizeMode(QHeaderView::Interactive);
  for (const int c : {FindingsModel::Severity, FindingsModel::Finding, FindingsModel::Layers,
                      FindingsModel::PredictedGain})
    header->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  header->setSectionResizeMode(FindingsModel::Message, QHeaderView::Stretch);
  header->resizeSection(FindingsModel::Fix, 320);
  charts_ = new DoctorCharts;
  confidence_ = new QLabel;
  confidence_->setObjectName(QStringLiteral("doctor_confidence"));
  confidence_->setWordWrap(true);
  confidence_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layers_label_ = new QLabel;
  layers_label_->setObjectName(QStringLiteral("doctor_layers_source"));
  layers_label_->setWordWrap(true);
  layers_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layers_model_ = new QStandardItemModel(this);
  layers_table_ = new QTableView;
  layers_table_->setObjectName(QStringLiteral("doctor_layers"));
  layers_table_->setModel(layers_model_);
  layers_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  layers_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  layers_table_->verticalHeader()->hide();
  layers_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  auto* lower = new QTabWidget;
  lower->addTab(charts_, tr("Charts"));
  lower->addTab(layers_table_, tr("Layers"));

  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(table_);
  splitter->addWidget(lower);
  // The charts take most of the height; the table scrolls (a model has a handful of findings).
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 2);
  splitter->setSizes({kTableHeight_px, 2 * kTableHeight_px});
  splitter->setChildrenCollapsible(false);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(build_controls());
  layout->addWidget(verdict_);
  layout->addWidget(confidence_);
  layout->addWidget(figures_);
  auto* layers_row = new QHBoxLayout;
  layers_row->addWidget(time_layers_);
  scale_label_ = new QLabel(tr("Scale from:"));
  layers_row->addWidget(scale_label_);
  layers_row->addWidget(scale_from_);
  layers_row->addWidget(layers_label_, 1);
  layout->addLayout(layers_row);
  layout->addWidget(splitter, 1);

  // A finding's first layer: selected in the editor on a click, shown there on activation.
  const auto first_layer = [this](const QModelIndex& index) {
    const auto layers = index.data(static_cast<int>(FindingsModel::Role::Layers)).value<QList<int>>();
    return layers.isEmpty() ? -1 : layers.front();
  };
  const auto select = [this, first_layer](const QModelIndex& index) {
    if (const int layer = first_layer(index); layer >= 0) emit layer_selected(layer);
  };
  // The keys move the current row; a click on the current row selects its layer again.
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, select);
  connect(table_, &QAbstractItemView::clicked, this, select);
  connect(table_, &QAbstractItemView::activated, this,
          [this, first_layer](const QModelIndex& index) {
            if (const int layer = first_layer(index); layer >= 0) emit layer_activated(layer);
          });
  connect(doc_, &ModelDocument::changed, this, &DoctorView::schedule);
  connect(worker_, &DoctorWorker::device_profiled, this, &DoctorView::on_device_profiled);
  connect(worker_, &DoctorWorker::device_profile_failed, this,
          [this](const QString& device, const QString& message) {
            for (DoctorDevice& d : devices_) {
              if (QString::fromStdString(d.backend_device) == device) d.profile_error = message;
            }
            schedule();
          });
  connect(worker_, &DoctorWorker::progress, this, [this](const QString& text) { set_status(text); });
  connect(worker_, &DoctorWorker::measured, this, &DoctorView::on_measured);
  connect(worker_, &DoctorWorker::kept, this, [this](const QString& text, bool ok) {
    set_status(status_->text() + QStringLiteral(". ") + text, !ok);
  });
  connect(worker_, &DoctorWorker::measure_failed, this, &DoctorView::on_failed);
  connect(worker_, &DoctorWorker::layers_timed, this, &DoctorView::on_layers_timed);
  connect(worker_, &DoctorWorker::timing_failed, this,
          [this](const QString& message, const doctor::DiagnosisInput& input) {
            timing_input_.reset();
            timing_failed_input_ = input;
            timing_error_ = message;
            schedule();
          });

  select_device(settings::kDoctorDevice.get());
  update_policy_choice();
  connect(device_, &QComboBox::currentIndexChanged, this, [this] {
    settings::kDoctorDevice.set(current_device().label);
    update_policy_choice();
    update_scale_choice();
    schedule();
  });
  update_scale_choice();
  connect(policy_, &QComboBox::currentIndexChanged, this, &DoctorView::schedule);
  schedule();
}

DoctorView::~DoctorView() = default;

QWidget* DoctorView::build_controls() {
  device_ = new QComboBox;
  device_->setObjectName(QStringLiteral("doctor_device"));
  device_->setToolTip(tr("The device to diagnose: this machine's (measurable) or a GPU profile "
                         "from published figures (a prediction)"));
  for (const DoctorDevice& d : devices_) device_->addItem(d.label);
  policy_ = new QComboBox;
  policy_->setObjectName(QStringLiteral("doctor_policy"));
  policy_->setToolTip(tr("The mixed policy set against float32"));
  policy_->addItem(QString(), -1);  // the device's choice: update_policy_choice() names it
  for (const Policy p : {Policy::mixed_float16, Policy::mixed_bfloat16, Policy::mixed_float8})
    policy_->addItem(qt_text(to_string(p)), static_cast<int>(p));

  measure_ = new QPushButton(tr("Measure"));
  measure_->setObjectName(QStringLiteral("doctor_measure"));
  connect(measure_, &QPushButton::clicked, this, &DoctorView::start_measure);
  cancel_ = new QPushButton(tr("Cancel"));
  cancel_->setToolTip(tr("Stop the measurement (within a step)"));
  connect(cancel_, &QPushButton::clicked, worker_, &DoctorWorker::cancel);
  save_ = new QPushButton(tr("Save report…"));
  save_->setToolTip(tr("The diagnosis as JSON (as mixlab-cli doctor --json writes it), its "
                       "findings and layers as CSV and an HTML report beside it"));
  connect(save_, &QPushButton::clicked, this, &DoctorView::save_report_as);
  back_ = new QPushButton(tr("Back to the editor's model"));
  back_->setToolTip(tr("Diagnose the model in the editor at the Run panel's batch size again"));
  back_->hide();
  connect(back_, &QPushButton::clicked, this, &DoctorView::back_to_editor);
  time_layers_ = new QCheckBox(tr("Time layers"));
  time_layers_->setObjectName(QStringLiteral("doctor_time_layers"));
  time_layers_->setChecked(true);
  time_layers_->setToolTip(
      tr("On this machine's devices, time each layer in both policies (%1 training steps each, "
         "kept for next time) and use those times instead of the roofline model's")
          .arg(doctor::kLayerBenchSteps));
  connect(time_layers_, &QCheckBox::toggled, this, &DoctorView::schedule);
  scale_from_ = new QComboBox;
  scale_from_->setObjectName(QStringLiteral("doctor_scale_from"));
  scale_from_->setToolTip(
      tr("For a GPU profile: time the layers on a device of this machine and scale them to the "
         "profile where the kernels are of the same kind (mixlab-cli doctor --from)"));
  scale_from_->addItem(tr("nothing (the model)"), -1);
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].measurable()) scale_from_->addItem(devices_[i].label, static_cast<int>(i));
  }
  connect(scale_from_, &QComboBox::currentIndexChanged, this, &DoctorView::schedule);
  status_ = new QLabel;
  status_->setObjectName(QStringLiteral("doctor_status"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* area = new QWidget;
  auto* row = new QHBoxLayout(area);
  row->setContentsMargins(0, 0, 0, 0);
  // No mnemonics: Alt+M, Alt+S... belong to the tabs and menus.
  row->addWidget(new QLabel(tr("Device:")));
  row->addWidget(device_);
  row->addWidget(new QLabel(tr("Mixed policy:")));
  row->addWidget(policy_);
  row->addWidget(measure_);
  row->addWidget(cancel_);
  row->addWidget(save_);
  row->addWidget(back_);
  row->addWidget(status_, 1);
  return area;
}

void DoctorView::set_run(const RunConfig& run) {
  run_ = run;
  schedule();
}

void DoctorView::diagnose_runs(const RunPair& pair) {
  pinned_ = pair;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].measurable() && devices_[i].backend_device == pair.device) {
      device_->setCurrentIndex(static_cast<int>(i));
      break;
    }
  }
  set_mixed_policy(pair.mixed);
  back_->show();
  set_status(tr("Runs %1 and %2 from Compare: their model at batch %3, measured as they ran")
                 .arg(pair.float32_run)
                 .arg(pair.mixed_run)
                 .arg(pair.run.batch_size));
  schedule();
}

void DoctorView::back_to_editor() {
  if (!pinned_) return;
  pinned_.reset();
  back_->hide();
  set_status({});
  schedule();
}

void DoctorView::set_run_active(bool active) {
  run_active_ = active;
  if (active && worker_->timing()) {  // the run and the timing would share the device
    worker_->cancel();
    timing_input_.reset();
  }
  update_actions();
  schedule();
}

bool DoctorView::select_device(const QString& name) {
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const DoctorDevice& d = devices_[i];
    const bool named = d.label.compare(name, Qt::CaseInsensitive) == 0 ||
                       (d.profile && QString::fromStdString(d.profile->name)
                                             .compare(name, Qt::CaseInsensitive) == 0);
    if (named) {
      device_->setCurrentIndex(static_cast<int>(i));
      return true;
    }
  }
  return false;
}

void DoctorView::set_mixed_policy(std::optional<Policy> policy) {
  policy_->setCurrentIndex(policy ? policy_->findData(static_cast<int>(*policy)) : 0);
}

DoctorDevice& DoctorView::current_device() {
  return devices_[static_cast<std::size_t>(std::max(0, device_->currentIndex()))];
}

const DoctorDevice& DoctorView::current_device() const {
  return devices_[static_cast<std::size_t>(std::max(0, device_->currentIndex()))];
}

const DoctorDevice* DoctorView::scale_source() const {
  if (current_device().measurable()) return nullptr;
  const int index = scale_from_->currentData().toInt();
  return index < 0 ? nullptr : &devices_[static_cast<std::size_t>(index)];
}

void DoctorView::update_scale_choice() {
  // Only a profile is scaled to; this machine's devices are timed themselves.
  const bool profile = !current_device().measurable();
  scale_label_->setVisible(profile);
  scale_from_->setVisible(profile);
}

void DoctorView::update_policy_choice() {
  const Policy own = comparison_mixed_policy(current_device().info);
  policy_->setItemText(0, tr("%1 (the device's choice)").arg(qt_text(to_string(own))));
}

void DoctorView::schedule() {
  recompute_timer_->start();
}

void DoctorView::refresh_now() {
  recompute_timer_->stop();
  recompute();
}

std::optional<doctor::DiagnosisInput> DoctorView::current_input(QString* why_none) {
  const ModelDocument::Validation& v = doc_->validation();
  if (!pinned_ && !v.ok) {
    *why_none = tr("The model cannot be diagnosed until it is valid: %1").arg(v.message);
    return std::nullopt;
  }
  const DoctorDevice& dev = current_device();
  if (!dev.profile) {
    const QString which = dev.source == DoctorDevice::Source::this_cpu ? tr("this CPU's")
                                                                      : tr("this GPU's");
    *why_none = dev.profile_error.isEmpty()
                    ? tr("Measuring %1 roofs… (a few seconds, once: they are kept)").arg(which)
                    : tr("The roofs of %1 could not be measured: %2")
                          .arg(dev.label, dev.profile_error);
    // "Measuring this CPU's roofs…": the sentence starts with its capital.
    (*why_none)[0] = why_none->at(0).toUpper();
    return std::nullopt;
  }
  doctor::DiagnosisInput input;
  input.spec = pinned_ ? pinned_->spec : doc_->spec();
  input.device = *dev.profile;
  input.run = pinned_ ? pinned_->run : run_;
  const int chosen = policy_->currentData().toInt();
  input.mixed = chosen < 0 ? comparison_mixed_policy(dev.info) : static_cast<Policy>(chosen);
  return input;
}

void DoctorView::recompute() {
  QString why_none;
  const std::optional<doctor::DiagnosisInput> input = current_input(&why_none);
  if (!input) {
    const DoctorDevice& dev = current_device();
    if (worker_->timing()) {  // its input is gone
      worker_->cancel();
      timing_input_.reset();
    }
    // This machine's devices' roofs are measured when the tab first shows them, not at
    // start-up.
    if (!dev.profile && dev.profile_error.isEmpty() && isVisible() && !worker_->busy())
      worker_->profile_device(dev);
    show_diagnosis(std::nullopt, why_none);
    return;
  }
  // Runs from Compare are the measurement of their own input.
  const std::optional<doctor::Measurement> measurement =
      pinned_ ? std::optional(pinned_->measured) : measured_;
  const bool measured =
      pinned_ || (measured_ && measured_input_ && same_input(*measured_input_, *input));
  // The layers timed on this machine's device, where they are for this input; else timed now
  // (while the tab shows, and no run shares the device), the roofline's prediction shown
  // meanwhile. For a profile, with Scale from set, the model timed on that device of this
  // machine and scaled to the profile (doctor::ScaleFrom).
  const DoctorDevice& dev = current_device();
  const DoctorDevice* from = scale_source();
  std::optional<doctor::DiagnosisInput> timing_in;
  if (time_layers_->isChecked() && !pinned_) {
    if (dev.measurable()) {
      timing_in = *input;
    } else if (from != nullptr && from->profile) {
      timing_in = *input;
      timing_in->device = *from->profile;
    } else if (from != nullptr && from->profile_error.isEmpty() && isVisible() &&
               !worker_->busy()) {
      worker_->profile_device(*from);  // its roofs first: then this runs again
    }
  }
  const DoctorDevice* timing_device = dev.measurable() ? &dev : from;
  const bool timed = timing_in && layer_times_ && layer_times_input_ &&
                     same_input(*layer_times_input_, *timing_in);
  if (worker_->timing() &&
      !(timing_in && timing_input_ && same_input(*timing_input_, *timing_in))) {
    worker_->cancel();  // another input's timing is of no use now
    timing_input_.reset();
  }
  const bool failed =
      timing_in && timing_failed_input_ && same_input(*timing_failed_input_, *timing_in);
  if (timing_in && !timed && !failed && !run_active_ && isVisible() && !worker_->busy() &&
      worker_->time_layers(*timing_in, timing_device->backend_device)) {
    timing_input_ = *timing_in;
  }
  const bool scaled = timed && !dev.measurable();
  // Nothing changed (the tab shown again, a change of the policy the editor shows): the
  // findings keep their selection.
  if (diagnosis_ && same_input(diagnosis_->input, *input) &&
      diagnosis_->measured.has_value() == measured &&
      diagnosis_->layer_times.has_value() == (timed && !scaled) &&
      diagnosis_->mixed.scaled_source.empty() == !scaled) {
    layers_label_->setText(layers_text());
    update_actions();
    return;
  }
  try {
    doctor::Diagnosis d = doctor::diagnose(
        *input, measured ? measurement : std::nullopt,
        timed && !scaled ? layer_times_ : std::nullopt,
        scaled ? std::optional(doctor::ScaleFrom{timing_in->device, *layer_times_}) : std::nullopt);
    d.confidence = doctor::zoo_confidence(input->device, timed, doctor::default_zoo_file());
    show_diagnosis(std::move(d));
  } catch (const std::exception& e) {
    show_diagnosis(std::nullopt, tr("Cannot diagnose: %1").arg(QString::fromUtf8(e.what())));
  }
}

void DoctorView::show_diagnosis(std::optional<doctor::Diagnosis> d, const QString& why_none) {
  diagnosis_ = std::move(d);
  verdict_->setText(diagnosis_ ? QString::fromStdString(diagnosis_->verdict) : why_none);
  figures_->setText(diagnosis_ ? step_figures_text(*diagnosis_) : QString());
  findings_->set_findings(diagnosis_ ? diagnosis_->findings : std::vector<doctor::Finding>{});
  charts_->show_diagnosis(diagnosis_ ? &*diagnosis_ : nullptr);
  confidence_->setText(diagnosis_ && diagnosis_->confidence
                           ? QString::fromStdString(diagnosis_->confidence->line)
                           : QString());
  layers_label_->setText(layers_text());
  show_layers();
  emit layer_findings_changed(findings_->findings_by_layer());
  update_actions();
}

QAbstractItemView* DoctorView::layers_view() const {
  return layers_table_;
}

bool DoctorView::timing_layers() const {
  return worker_->timing();
}

QString DoctorView::confidence_text() const {
  return confidence_->text();
}

QString DoctorView::layers_text() const {
  if (!diagnosis_) return {};
  const DoctorDevice& dev = current_device();
  const QString model = tr("Layers: the roofline model's predictions");
  if (pinned_) return model + tr(" (runs from Compare)");
  if (!time_layers_->isChecked()) return model + tr(" (Time layers is off)");
  if (!diagnosis_->mixed.scaled_source.empty())
    return tr("Layers: %1; each layer's figures in the Layers table")
        .arg(QString::fromStdString(diagnosis_->mixed.scaled_source));
  const DoctorDevice* from = scale_source();
  if (!dev.measurable() && from == nullptr)
    return model + tr(" (a profile of published figures is predicted; Scale from times the "
                      "layers on a device of this machine and scales them to it)");
  const QString timing_on = dev.measurable() ? dev.label : from->label;
  if (diagnosis_->layer_times)
    return tr("Layers: each timed on %1, %2; the roofline model's beside them in the Layers "
              "table")
        .arg(dev.label, layer_note_);
  if (worker_->timing())
    return model + tr(" until each layer is timed on %1 (%2 steps a policy)…")
                       .arg(timing_on)
                       .arg(doctor::kLayerBenchSteps);
  if (timing_failed_input_ && timing_failed_input_->spec == diagnosis_->input.spec)
    return model + tr(" (the layers could not be timed on %1: %2)").arg(timing_on, timing_error_);
  if (run_active_) return model + tr(" until the run ends (timing would share the device)");
  return model;
}

void DoctorView::show_layers() {
  layers_model_->clear();
  if (!diagnosis_) return;
  const doctor::Diagnosis& d = *diagnosis_;
  const QString mixed = qt_text(to_string(d.input.mixed));
  layers_model_->setHorizontalHeaderLabels(
      {tr("Layer"), tr("Figures"), tr("float32 ms"), tr("float32 roofline ms"),
       tr("%1 ms").arg(mixed), tr("%1 roofline ms").arg(mixed), tr("mixed / float32")});
  const auto ms = [](double seconds) {
    auto* item = new QStandardItem(QString::number(seconds * 1e3, 'f', 3));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
  };
  for (int i = 0; i < static_cast<int>(d.input.spec.layers.size()); ++i) {
    const double f32 = d.float32.layer_seconds(i, false) + d.float32.layer_seconds(i, true);
    const double mix = d.mixed.layer_seconds(i, false) + d.mixed.layer_seconds(i, true);
    const bool timed = d.float32.layer_measured(i) || d.mixed.layer_measured(i);
    const bool scaled = d.float32.layer_scaled(i) || d.mixed.layer_scaled(i);
    QList<QStandardItem*> row{
        new QStandardItem(QString::fromStdString(layer_title(d.input.spec, i))),
        new QStandardItem(timed    ? tr("timed here")
                          : scaled ? tr("scaled")
                                   : tr("roofline model")),
        ms(f32),
        ms(d.float32.layer_model_seconds(i)),
        ms(mix),
        ms(d.mixed.layer_model_seconds(i)),
        new QStandardItem(f32 > 0 && mix > 0 ? QStringLiteral("%1x").arg(f32 / mix, 0, 'f', 2)
                                             : QStringLiteral("-"))};
    if (timed) {
      row[1]->setToolTip(
          tr("Timed on this device; the roofline columns are what the model "
             "predicts for the hardware"));
    } else if (const auto why = d.mixed.modelled_why.find(i); why != d.mixed.modelled_why.end()) {
      row[1]->setToolTip(tr("Not scaled: %1").arg(QString::fromStdString(why->second)));
    } else if (scaled) {
      row[1]->setToolTip(tr("Timed on a device of this machine and scaled to this one"));
    }
    layers_model_->appendRow(row);
  }
}

void DoctorView::on_layers_timed(const doctor::Measurement& times,
                                 const doctor::DiagnosisInput& input, const QString& note) {
  timing_input_.reset();
  layer_times_ = times;
  layer_times_input_ = input;
  layer_note_ = note;
  refresh_now();
}

void DoctorView::update_actions() {
  const DoctorDevice& dev = current_device();
  const bool measuring = worker_->measuring();
  QString why_not;
  if (!dev.measurable())
    why_not = tr("%1 is a profile of published figures: it can be predicted, not measured. "
                 "Measure runs on this machine's devices.")
                  .arg(dev.profile ? QString::fromStdString(dev.profile->name) : dev.label);
  else if (run_active_)
    why_not = tr("A run is in progress: measure when it has ended (both would share the device)");
  else if (worker_->busy() && !worker_->timing())  // a timing gives way to a measurement
    why_not = measuring ? tr("Measuring now") : tr("This CPU's roofs are being measured");
  else if (!diagnosis_)
    why_not = tr("Nothing to measure: %1").arg(verdict_->text());
  measure_->setEnabled(why_not.isEmpty());
  measure_->setToolTip(why_not.isEmpty()
                           ? tr("Run float32 and the mixed policy on %1 (%2 steps each, %3 "
                                "warm-up) and set the measurement beside the prediction")
                                 .arg(dev.label)
                                 .arg(kMeasureSteps)
                                 .arg(kMeasureWarmup)
                           : why_not);
  cancel_->setEnabled(measuring);
  save_->setEnabled(diagnosis_.has_value());
}

bool DoctorView::busy() const {
  return worker_->busy();
}

void DoctorView::start_measure() {
  if (!diagnosis_ || !current_device().measurable()) return;
  if (worker_->timing()) {  // the measurement times the layers too
    worker_->cancel();
    timing_input_.reset();
  }
  doctor::MeasureOptions options;
  options.steps = kMeasureSteps;
  options.warmup = kMeasureWarmup;
  if (worker_->measure(diagnosis_->input, current_device().backend_device, options))
    set_status(tr("Measuring…"));
  update_actions();
}

void DoctorView::on_device_profiled(const QString& device, const doctor::DeviceProfile& profile,
                                    bool measured_now, const QString& not_measured) {
  for (DoctorDevice& d : devices_) {
    if (QString::fromStdString(d.backend_device) != device) continue;
    d.profile = profile;
    if (!not_measured.isEmpty()) {
      set_status(tr("The roofs of %1 could not be measured (%2): predicting from its published "
                    "profile")
                     .arg(d.label, not_measured),
                 true);
    }
    if (!measured_now) continue;
    const bool cpu = d.source == DoctorDevice::Source::this_cpu;
    set_status(tr("Measured the roofs of %1 (kept in %2)")
                   .arg(d.label, QString::fromStdString((cpu ? doctor::default_cpu_profile_cache()
                                                             : doctor::default_gpu_profile_cache())
                                                            .string())));
  }
  schedule();
}

void DoctorView::set_store_path(const std::filesystem::path& db) {
  worker_->set_store_path(db);
}

void DoctorView::on_measured(const doctor::Measurement& m, const doctor::DiagnosisInput& input) {
  measured_ = m;
  measured_input_ = input;
  // Its runs timed every layer too, over more steps than the timing.
  layer_times_ = m;
  layer_times_input_ = input;
  layer_note_ = tr("from the measurement's %1 steps a policy").arg(m.float32.steps);
  set_status(tr("Measured: %1 float32 (median step %2 ms against %3 ms)")
                 .arg(qt_text(doctor::speedup_words(m.speedup())))
                 .arg(m.mixed.step_ms, 0, 'f', 2)
                 .arg(m.float32.step_ms, 0, 'f', 2));
  refresh_now();
}

void DoctorView::on_failed(const QString& message, bool cancelled) {
  if (cancelled)
    set_status(tr("Measurement cancelled"));
  else
    set_status(tr("The measurement failed: %1").arg(message), true);
  update_actions();
}

void DoctorView::set_status(const QString& text, bool error) {
  status_->setText(text);
  QPalette palette = status_->palette();
  palette.setColor(QPalette::WindowText, error ? QColor(160, 0, 0)
                                               : this->palette().color(QPalette::WindowText));
  status_->setPalette(palette);
}

QString DoctorView::status_text() const {
  return status_->text();
}

QString DoctorView::verdict_text() const {
  return verdict_->text();
}

const doctor::Diagnosis* DoctorView::diagnosis() const {
  return diagnosis_ ? &*diagnosis_ : nullptr;
}

QAbstractItemView* DoctorView::findings_view() const {
  return table_;
}

bool DoctorView::save_report(const QString& json_path, QString* error) {
  try {
    if (!diagnosis_) throw Error("there is no diagnosis to save: " + verdict_->text().toStdString());
    save_doctor_report(*diagnosis_, json_path.toStdString());
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
}

void DoctorView::save_report_as() {
  if (!diagnosis_) return;
  const QString name = QStringLiteral("doctor-%1-%2.json")
                           .arg(QString::fromStdString(diagnosis_->input.spec.name),
                                QString::fromStdString(diagnosis_->input.device.name))
                           .replace(QLatin1Char(' '), QLatin1Char('-'));
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save the doctor's report"), QDir(settings::kLastDirectory.get()).filePath(name),
      tr("JSON (*.json)"));
  if (path.isEmpty()) return;
  settings::kLastDirectory.set(QFileInfo(path).absolutePath());
  QString error;
  if (save_report(path, &error)) {
    set_status(tr("Saved %1, with the findings and layers as CSV and an HTML report beside it "
                  "(%2)")
                   .arg(QDir::toNativeSeparators(path),
                        QDir::toNativeSeparators(QString::fromStdString(
                            html_report_path(path.toStdString()).string()))));
  } else {
    set_status(error, true);
  }
}

void DoctorView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  schedule();  // this CPU's roofs are measured on the first look
}

}  // namespace mixlab::ui

// The moc output compiled here rather than in the target's shared mocs_compilation.cpp, which
// would tie this file to every other moc'd header of mixlab_ui.
#include "moc_doctor_view.cpp"
