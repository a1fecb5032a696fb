// The devices the Doctor tab diagnoses: this CPU (its roofs measured on first use), each GPU
// present (its published profile, or one estimated from its properties), and every built-in
// GPU profile (published figures: a prediction only). The first two can also be measured.
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
  // Empty for this CPU until its roofs are measured.
  std::optional<doctor::DeviceProfile> profile;

  bool measurable() const { return source != Source::profile; }
};

// `present`: engine available_devices(), the CPU first.
std::vector<DoctorDevice> doctor_devices(const std::vector<DeviceInfo>& present);

}  // namespace mixlab::ui
