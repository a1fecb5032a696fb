// The run panel's device and GPU options: the options apply on a GPU only, are remembered, and a
// GPU device starts only when the CUDA backend can train (here its library is missing, so Start
// says why). The GPU listed is made up; the panel asks the engine whether the backend works.
#include <QCheckBox>
#include <QComboBox>
#include <QSettings>
#include <QSpinBox>
#include <QTest>
#include <tuple>

#include "engine/train/run_fields.h"
#include "ui/run/run_panel.h"
#include "tests/test_paths.h"
#include "ui/settings.h"

namespace mixlab::ui {

namespace {

std::vector<DeviceInfo> cpu_and_gpu() {
  DeviceInfo cpu;
  cpu.kind = "cpu";
  cpu.name = "Test CPU";
  cpu.threads = 2;
  DeviceInfo gpu;
  gpu.kind = "cuda";
  gpu.name = "Test GPU";
  gpu.compute_capability = "8.6";
  gpu.tensor_cores = true;
  return {cpu, gpu};
}

// The engine's form of a field's text ("dynamic:32768" is "dynamic").
std::string canonical(const RunField& field, const QString& text) {
  RunConfig config;
  set_field_text(field, config, text.toStdString());
  return field_text(field, config);
}

// A panel on the made-up GPU (where the GPU options count), for a model of 8x8x1 inputs and four
// classes: the shape the table's synthetic dataset example has.
void prepare(RunPanel& panel) {
  panel.findChild<QComboBox*>(QStringLiteral("device"))->setCurrentIndex(1);
  panel.set_model_shape({8, 8, 1}, 4);
}

}  // namespace

class RunPanelTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    // Read once per process by the engine, before anything asks about the CUDA backend
    // (ui.run_panel_fake_gpu sets the fake one).
    if (qEnvironmentVariable("MIXLAB_CUDA_BACKEND") !=
        QString::fromUtf8(mixlab::test::fake_plugin()))
      qputenv("MIXLAB_CUDA_BACKEND", "/nonexistent/libmixlab-cuda.so");
    QSettings().clear();
  }

  void gpu_options_apply_on_a_gpu_and_start_says_why_it_cannot_run() {
    if (qEnvironmentVariable("MIXLAB_CUDA_BACKEND") ==
        QString::fromUtf8(mixlab::test::fake_plugin()))
      QSKIP("needs the CUDA backend missing (ui.run_panel)");
    RunPanel panel(cpu_and_gpu());
    panel.set_dataset(QStringLiteral("synthetic"));
    auto* device = panel.findChild<QComboBox*>(QStringLiteral("device"));
    QVERIFY(device != nullptr);
    const QList<QCheckBox*> options = {
        panel.findChild<QCheckBox*>(QStringLiteral("tf32")),
        panel.findChild<QCheckBox*>(QStringLiteral("cuda_graphs")),
        panel.findChild<QCheckBox*>(QStringLiteral("data_on_device")),
        panel.findChild<QCheckBox*>(QStringLiteral("layer_timing"))};
    for (QCheckBox* box : options) QVERIFY(box != nullptr);

    device->setCurrentIndex(0);
    QCOMPARE(panel.device(), std::string("cpu"));
    for (QCheckBox* box : options.mid(0, 3)) QVERIFY(!box->isEnabled());
    QVERIFY(options[3]->isEnabled());  // the CPU times its layers too
    QVERIFY(panel.start_action()->isEnabled());
    options[0]->setChecked(true);
    options[3]->setChecked(true);
    // As the box holds it: the run controller records a CPU run without it (applicable_config).
    QVERIFY(panel.config().tf32);
    QVERIFY(panel.config().layer_timing);

    device->setCurrentIndex(1);
    QCOMPARE(panel.device(), std::string("cuda:0"));
    for (QCheckBox* box : options) QVERIFY(box->isEnabled());
    const RunConfig config = panel.config();
    QVERIFY(config.tf32);
    QVERIFY(!config.cuda_graphs);
    QVERIFY(!config.data_on_device);
    QVERIFY(config.layer_timing);
    QVERIFY(!panel.start_action()->isEnabled());
    QVERIFY(!panel.compare_action()->isEnabled());
    const QString tip = panel.start_action()->toolTip();
    QVERIFY2(tip.startsWith(QStringLiteral("Cannot start: the CUDA backend "
                                           "(/nonexistent/libmixlab-cuda.so) cannot be loaded")),
             qPrintable(tip));

    device->setCurrentIndex(0);
    QVERIFY(panel.start_action()->isEnabled());
  }

  void fp8_scaling_is_set_under_mixed_float8_and_reaches_the_run() {
    DeviceInfo cpu;
    cpu.kind = "cpu";
    cpu.name = "Test CPU";
    RunPanel panel({cpu});
    panel.set_dataset(QStringLiteral("synthetic"));
    auto* history = panel.findChild<QSpinBox*>(QStringLiteral("fp8_history"));
    auto* amax = panel.findChild<QComboBox*>(QStringLiteral("fp8_amax"));
    auto* margin = panel.findChild<QSpinBox*>(QStringLiteral("fp8_margin"));
    auto* format = panel.findChild<QComboBox*>(QStringLiteral("fp8_format"));
    QVERIFY(history && amax && margin && format);
    panel.set_precision(Policy::mixed_bfloat16);
    for (QWidget* w : std::initializer_list<QWidget*>{history, amax, margin, format})
      QVERIFY(!w->isEnabled());
    QCOMPARE(history->value(), 1024);  // Keras's default
    panel.set_precision(Policy::mixed_float8);
    for (QWidget* w : std::initializer_list<QWidget*>{history, amax, margin, format})
      QVERIFY(w->isEnabled());
    history->setValue(16);
    amax->setCurrentText(QStringLiteral("most_recent"));
    margin->setValue(2);
    format->setCurrentText(QStringLiteral("e4m3"));
    const RunConfig config = panel.config();
    QCOMPARE(config.precision, Policy::mixed_float8);
    QCOMPARE(config.fp8.history, 16);
    QCOMPARE(config.fp8.amax, Fp8AmaxAlgo::most_recent);
    QCOMPARE(config.fp8.margin, 2);
    QCOMPARE(config.fp8.formats, Fp8Formats::e4m3);
    QVERIFY(panel.start_action()->isEnabled());  // emulated on the CPU
    QVERIFY(panel.policy_warning().contains(QStringLiteral("FP8 is emulated")));
    // "Compare all policies": every policy the device runs; the CPU runs all four, an H200 all
    // four too, an A100 (no FP8 tensor cores) not mixed_float8.
    QCOMPARE(panel.comparison_policies().size(), std::size(kAllPolicies));
    RunPanel both({cpu, gpu_device_info("NVIDIA H200", 9, 0, std::int64_t{1} << 30),
                   gpu_device_info("NVIDIA A100-SXM4-80GB", 8, 0, std::int64_t{1} << 30)});
    both.findChild<QComboBox*>(QStringLiteral("device"))->setCurrentIndex(1);
    QCOMPARE(both.comparison_policies().size(), std::size(kAllPolicies));
    both.findChild<QComboBox*>(QStringLiteral("device"))->setCurrentIndex(2);
    QCOMPARE(both.comparison_policies(),
             (std::vector<Policy>{Policy::float32, Policy::mixed_float16, Policy::mixed_bfloat16}));
  }

  void the_policy_flag_and_the_comparison_follow_the_engine_rule() {
    // The panel says what policy_support() says, for CPUs of every isa level and GPUs old and
    // new; an unsupported policy blocks Start with the same reason; "float32 vs mixed" runs
    // comparison_mixed_policy() (on an AVX2 CPU: bf16, emulated, not refused).
    std::vector<DeviceInfo> devices;
    for (const CpuIsa isa : {CpuIsa::avx2, CpuIsa::avx512_core, CpuIsa::avx512_core_amx}) {
      DeviceInfo cpu;
      cpu.kind = "cpu";
      cpu.name = "Test CPU";
      cpu.threads = 2;
      cpu.isa = isa;
      devices = {cpu};
      RunPanel panel(devices);
      panel.set_dataset(QStringLiteral("synthetic"));
      for (const Policy p : kAllPolicies) {
        panel.set_precision(p);
        const PolicySupport support = policy_support(cpu, p);
        QCOMPARE(panel.policy_warning(), QString::fromStdString(support.reason));
        QVERIFY(panel.start_action()->isEnabled());  // the CPU runs every policy
      }
      panel.set_precision(Policy::float32);
      QCOMPARE(panel.mixed_policy(), comparison_mixed_policy(cpu));
      QCOMPARE(panel.mixed_policy(), Policy::mixed_bfloat16);
    }
    DeviceInfo cpu;
    cpu.kind = "cpu";
    cpu.name = "Test CPU";
    for (const auto& [name, major, minor] :
         {std::tuple{"NVIDIA GeForce RTX 2060", 7, 5}, std::tuple{"NVIDIA H200", 9, 0}}) {
      const DeviceInfo gpu = gpu_device_info(name, major, minor, 1 << 30);
      RunPanel panel({cpu, gpu});
      panel.set_dataset(QStringLiteral("synthetic"));
      panel.findChild<QComboBox*>(QStringLiteral("device"))->setCurrentIndex(1);
      panel.set_precision(Policy::float32);
      QCOMPARE(panel.mixed_policy(), comparison_mixed_policy(gpu));
      panel.set_precision(Policy::mixed_bfloat16);
      const PolicySupport bf16 = policy_support(gpu, Policy::mixed_bfloat16);
      QCOMPARE(panel.policy_warning(), QString::fromStdString(bf16.reason));
      if (bf16.level == Support::unsupported) {
        QVERIFY(!panel.start_action()->isEnabled());
        QVERIFY2(panel.start_action()->toolTip().contains(QStringLiteral("compute capability 8.0")),
                 qPrintable(panel.start_action()->toolTip()));
      }
    }
    QCOMPARE(comparison_mixed_policy(gpu_device_info("NVIDIA GeForce RTX 2060", 7, 5, 0)),
             Policy::mixed_float16);
  }

  void start_asks_about_the_gpu_chosen_not_the_first() {
    // Two GPUs; the CUDA backend is a test double with one GPU (cuda:0), so cuda:1 cannot run
    // and Start must say so for cuda:1 (it used to ask about cuda:0 whatever was chosen).
    if (qEnvironmentVariable("MIXLAB_CUDA_BACKEND") !=
        QString::fromUtf8(mixlab::test::fake_plugin()))
      QSKIP("runs as ui.run_panel_fake_gpu, with the fake CUDA backend");
    DeviceInfo cpu;
    cpu.kind = "cpu";
    cpu.name = "Test CPU";
    RunPanel panel({cpu, gpu_device_info("GPU zero", 8, 0, 1 << 30),
                    gpu_device_info("GPU one", 8, 0, 1 << 30)});
    panel.set_dataset(QStringLiteral("synthetic"));
    auto* device = panel.findChild<QComboBox*>(QStringLiteral("device"));
    device->setCurrentIndex(1);
    QVERIFY2(panel.start_action()->isEnabled(), qPrintable(panel.start_action()->toolTip()));
    device->setCurrentIndex(2);
    QVERIFY(!panel.start_action()->isEnabled());
    // The test double's own words for its missing second GPU.
    QVERIFY2(panel.start_action()->toolTip().contains(QStringLiteral("no GPU 1")),
             qPrintable(panel.start_action()->toolTip()));
    device->setCurrentIndex(1);
    QVERIFY(panel.start_action()->isEnabled());
  }

  // A dataset the panel cannot take (mixlab --dataset foo:bar) is an error in words, leaves no
  // dataset chosen (never a silent Fashion-MNIST) and blocks Start with the reason until the
  // user picks one; the remembered dataset is not replaced.
  void a_bad_dataset_is_refused_in_words_and_left_unchosen() {
    QSettings().clear();
    RunPanel panel(cpu_and_gpu());
    panel.set_model_shape({8, 8, 1}, 4);
    QVERIFY(panel.set_dataset(QStringLiteral("synthetic")).isEmpty());
    const QVariant remembered = QSettings().value(settings::run_setting_key(run_field("dataset")));
    const QString error = panel.set_dataset(QStringLiteral("foo:bar"));
    QVERIFY2(error.contains(QStringLiteral("foo:bar")), qPrintable(error));
    QVERIFY(!panel.start_action()->isEnabled());
    QVERIFY2(panel.start_action()->toolTip().contains(QStringLiteral("foo:bar")),
             qPrintable(panel.start_action()->toolTip()));
    QVERIFY_THROWS_EXCEPTION(ConfigError, panel.config());
    QCOMPARE(QSettings().value(settings::run_setting_key(run_field("dataset"))),
             remembered);
    // Choosing one clears the error.
    QVERIFY(panel.set_dataset(QStringLiteral("synthetic")).isEmpty());
    QVERIFY2(panel.start_action()->isEnabled(), qPrintable(panel.start_action()->toolTip()));
  }

  // Token datasets (issue 29) follow the model: a text file's SEQ_LEN is its steps, and the
  // synthetic tokens take its steps, its Embedding's vocabulary and its labels (one per step for
  // a language model, per sample for a classifier); a model without token ids is told why.
  void token_datasets_follow_the_model() {
    QSettings().clear();
    RunPanel panel(cpu_and_gpu());
    panel.set_model_shape({16}, 200, 200, 16);  // a language model of 200 token ids
    QVERIFY(panel.set_dataset(QStringLiteral("tokens")).isEmpty());
    QCOMPARE(panel.config().dataset.to_string(), std::string("tokens:synthetic:16:200"));
    QVERIFY(panel.set_dataset(QStringLiteral("text:/data/book.txt:64")).isEmpty());
    QCOMPARE(panel.config().dataset.to_string(), std::string("text:/data/book.txt:16"));
    panel.set_model_shape({16}, 4, 300, 1);  // a classifier of 300 ids: bytes at most
    QVERIFY(panel.set_dataset(QStringLiteral("tokens:synthetic:16:256:4:500")).isEmpty());
    QCOMPARE(panel.config().dataset.to_string(), std::string("tokens:synthetic:16:256:4:500"));
    panel.set_model_shape({8, 8, 1}, 4);
    try {
      (void)panel.config();
      QFAIL("a token dataset for an image model");
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find("Embedding reads its [steps] input") != std::string::npos,
               e.what());
    }
  }

  // Every field of the run-settings table, set on the panel, reaches the run it starts, is saved
  // under its key and is shown again by the next panel, whether the panel has a widget for it
  // or not.
  void every_run_setting_reaches_the_run_and_is_remembered() {
    for (const RunField& field : run_fields()) {
      const QString example =
          QString::fromUtf8(field.example.data(), qsizetype(field.example.size()));
      QSettings().clear();
      {
        RunPanel panel(cpu_and_gpu());
        prepare(panel);
        QVERIFY2(panel.set_field_text(field, example), field.name.data());
        QCOMPARE(field_text(field, panel.config()), std::string(field.example));
      }
      const QVariant saved = QSettings().value(settings::run_setting_key(field));
      QVERIFY2(saved.isValid(), field.name.data());
      QCOMPARE(canonical(field, saved.toString()), std::string(field.example));
      RunPanel panel(cpu_and_gpu());
      prepare(panel);
      QCOMPARE(canonical(field, panel.field_text(field)), std::string(field.example));
      QCOMPARE(field_text(field, panel.config()), std::string(field.example));
    }
  }

  // The keys and values earlier versions wrote, one typed key per setting, are read.
  void settings_of_earlier_versions_are_read() {
    QSettings().clear();
    {
      QSettings old;
      old.setValue(QStringLiteral("run/batch_size"), 64);
      old.setValue(QStringLiteral("run/optimizer"), QStringLiteral("sgd"));
      old.setValue(QStringLiteral("run/loss_scale"), QStringLiteral("auto"));
      old.setValue(QStringLiteral("run/precision"), QStringLiteral("mixed_float16"));
      old.setValue(QStringLiteral("run/steps"), 500);
      old.setValue(QStringLiteral("run/limit_by_steps"), false);
      old.setValue(QStringLiteral("run/epochs"), 2);
      old.setValue(QStringLiteral("run/tf32"), true);
      old.setValue(QStringLiteral("run/dataset"), QStringLiteral("synthetic"));
      old.setValue(QStringLiteral("run/device"), QStringLiteral("cuda:0"));
    }
    RunPanel panel(cpu_and_gpu());
    const RunConfig config = panel.config();
    QCOMPARE(config.batch_size, 64);
    QCOMPARE(config.optimizer.kind, OptimizerKind::sgd);
    QCOMPARE(config.optimizer.learning_rate, 0.01);  // SGD's, as none was remembered
    QCOMPARE(config.precision, Policy::mixed_float16);
    QCOMPARE(config.loss_scale.to_string(), std::string("dynamic"));  // auto, under float16
    QCOMPARE(config.epochs, 2);
    QCOMPARE(config.steps, std::int64_t{0});
    QCOMPARE(panel.field_text(run_field("steps")), QStringLiteral("500"));
    QVERIFY(config.tf32);
    QCOMPARE(config.dataset.kind, DatasetSpec::Kind::synthetic);
    QCOMPARE(panel.field_text(run_field("loss_scale")), QStringLiteral("auto"));

    QSettings().clear();
    RunPanel fresh(cpu_and_gpu());
    QCOMPARE(fresh.field_text(run_field("loss_scale")), QStringLiteral("auto"));
    QCOMPARE(fresh.field_text(run_field("batch_size")), QStringLiteral("32"));
  }

  void gpu_options_and_the_device_are_remembered() {
    {
      RunPanel panel(cpu_and_gpu());
      panel.findChild<QComboBox*>(QStringLiteral("device"))->setCurrentIndex(1);
      panel.findChild<QCheckBox*>(QStringLiteral("tf32"))->setChecked(false);
      panel.findChild<QCheckBox*>(QStringLiteral("cuda_graphs"))->setChecked(true);
      panel.findChild<QCheckBox*>(QStringLiteral("data_on_device"))->setChecked(true);
      panel.findChild<QCheckBox*>(QStringLiteral("layer_timing"))->setChecked(false);
    }
    RunPanel panel(cpu_and_gpu());
    QCOMPARE(panel.device(), std::string("cuda:0"));
    QVERIFY(!panel.findChild<QCheckBox*>(QStringLiteral("tf32"))->isChecked());
    QVERIFY(panel.findChild<QCheckBox*>(QStringLiteral("cuda_graphs"))->isChecked());
    QVERIFY(panel.findChild<QCheckBox*>(QStringLiteral("data_on_device"))->isChecked());
    QVERIFY(!panel.findChild<QCheckBox*>(QStringLiteral("layer_timing"))->isChecked());
  }
};

}  // namespace mixlab::ui

QTEST_MAIN(mixlab::ui::RunPanelTest)
#include "run_panel_test.moc"
