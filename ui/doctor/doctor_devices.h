// The devices the Doctor tab diagnoses: this CPU and each GPU present (their roofs measured on
// first use and cached: doctor::local_cpu_profile, local_gpu_profile), and every built-in GPU
// profile (published figures: a prediction only). The first two can also be measured.
#pragma once

#include <QString>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/device_info.h"
#include "engine/doctor/device_profile.h"

namespace mixlab::ui {

struct DoctorDevice {
  enum class Source { this_cpu, present_gpu, profile };
  Source source = Source::profile;
  QString label;               // "This CPU (measured)", "RTX 2060 (prediction)"
  std::string backend_device;  // "cpu", "cuda:0"; empty for a profile
  int threads = 0;             // this CPU's, for its profile
  DeviceInfo info;             // what the engine's policy rules judge it by
  // Empty for this machine's devices until their roofs are measured.
  std::optional<doctor::DeviceProfile> profile;
  QString profile_error;  // why its roofs could not be measured

  bool measurable() const { return source != Source::profile; }
};

// `present`: engine available_devices(), the CPU first.
std::vector<DoctorDevice> doctor_devices(const std::vector<DeviceInfo>& present);

}  // namespace mixlab::ui
