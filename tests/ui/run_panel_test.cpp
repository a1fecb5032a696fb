// The run panel's device and GPU options: the options apply on a GPU only, are remembered, and a
// GPU device starts only when the CUDA backend can train (here its library is missing, so Start
// says why). The GPU listed is made up; the panel asks the engine whether the backend works.
#include <QCheckBox>
#include <QComboBox>
#include <QSettings>
#include <QTest>

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
  gpu.native_bf16 = true;
  gpu.native_fp16 = true;
  return {cpu, gpu};
}

}  // namespace

class RunPanelTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    // Read once per process by the engine, before anything asks about the CUDA backend.
    qputenv("MIXLAB_CUDA_BACKEND", "/nonexistent/libmixlab-cuda.so");
    QSettings().clear();
  }

  void gpu_options_apply_on_a_gpu_and_start_says_why_it_cannot_run() {
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
