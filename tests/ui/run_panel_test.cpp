// The run panel's device and GPU options: the options apply on a GPU only, are remembered, and a
// GPU device starts only when the CUDA backend can train (here its library is missing, so Start
// says why). The GPU listed is made up; the panel asks the engine whether the backend works.
#include <QCheckBox>
#include <QComboBox>
#include <QSettings>
#include <QTest>
#include <tuple>

#include "ui/run/run_panel.h"

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

}  // namespace

class RunPanelTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    // Read once per process by the engine, before anything asks about the CUDA backend
    // (ui.run_panel_fake_gpu sets the fake one).
    if (qEnvironmentVariable("MIXLAB_CUDA_BACKEND") != QStringLiteral(FAKE_PLUGIN))
      qputenv("MIXLAB_CUDA_BACKEND", "/nonexistent/libmixlab-cuda.so");
    QSettings().clear();
  }

  void gpu_options_apply_on_a_gpu_and_start_says_why_it_cannot_run() {
    if (qEnvironmentVariable("MIXLAB_CUDA_BACKEND") == QStringLiteral(FAKE_PLUGIN))
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
    for (QCheckBox* box : options) QVERIFY(!box->isEnabled());
    QVERIFY(panel.start_action()->isEnabled());
    options[0]->setChecked(true);
    options[3]->setChecked(true);
    QVERIFY(!panel.config().tf32);  // kept for a GPU run, not applied on the CPU
    QVERIFY(!panel.config().layer_timing);

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
      for (const Policy p : {Policy::float32, Policy::mixed_float16, Policy::mixed_bfloat16}) {
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
    if (qEnvironmentVariable("MIXLAB_CUDA_BACKEND") != QStringLiteral(FAKE_PLUGIN))
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
