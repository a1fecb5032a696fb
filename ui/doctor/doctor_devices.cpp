#include "ui/doctor/doctor_devices.h"

#include <QObject>

namespace mixlab::ui {

std::vector<DoctorDevice> doctor_devices(const std::vector<DeviceInfo>& present) {
  std::vector<DoctorDevice> devices;
  DoctorDevice cpu;
  cpu.source = DoctorDevice::Source::this_cpu;
  cpu.label = QObject::tr("This CPU (measured)");
  cpu.backend_device = "cpu";
  int gpu = 0;
  for (const DeviceInfo& info : present) {
    if (!info.is_gpu()) {
      cpu.threads = info.threads;
      cpu.info = info;
      continue;
    }
    DoctorDevice d;
    d.source = DoctorDevice::Source::present_gpu;
    d.backend_device = "cuda:" + std::to_string(gpu++);
    d.label = QObject::tr("%1 (%2, this machine)")
                  .arg(QString::fromStdString(info.name), QString::fromStdString(d.backend_device));
    d.info = info;
    devices.push_back(std::move(d));
  }
  devices.insert(devices.begin(), std::move(cpu));
  for (const doctor::DeviceProfile& p : doctor::builtin_gpu_profiles()) {
    DoctorDevice d;
    d.source = DoctorDevice::Source::profile;
    d.label = QObject::tr("%1 (prediction)").arg(QString::fromStdString(p.name));
    d.profile = p;
    d.info = p.device_info();
    devices.push_back(std::move(d));
  }
  return devices;
}

}  // namespace mixlab::ui
