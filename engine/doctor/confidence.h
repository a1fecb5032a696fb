// How far the doctor's predictions can be trusted on a device class: the held-out error of the
// last zoo run (scripts/doctor-zoo.py run, issue 28), shown as a line under the verdict.
// A zoo run on this machine writes its summary to ${XDG_CACHE_HOME:-~/.cache}/mixlab/
// doctor-zoo.json, one entry per device and mode (layers timed, or the roofline alone); without
// one, the figures MixLab's own zoo run measured (the README's table) stand, named as such; a
// device class no zoo has run on (every GPU so far) gets a line that says its error is unknown.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/doctor/device_profile.h"

namespace mixlab::doctor {

struct Confidence {
  bool known = false;
  std::string kind;    // "cpu" or "cuda"
  std::string device;  // the device the zoo ran on
  std::string mode;    // "timed" (each layer timed there) or "roofline"
  int models = 0;
  double median_error = 0.0;  // absolute, of the step predictions (both policies)
  double p90_error = 0.0;
  int direction_right = 0;  // models whose "mixed faster / slower / the same" was right
  std::string date;         // "2026-12-05"
  std::string origin;  // "this machine's zoo run (PATH)", "MixLab's zoo run (README)"
  std::string line;    // for people: "Confidence: ..."
};

// ${XDG_CACHE_HOME:-~/.cache}/mixlab/doctor-zoo.json
std::filesystem::path default_zoo_file();

// The confidence of a diagnosis of `device`, with its layers timed there or from the roofline
// alone: `zoo_file`'s entry for this device and mode, else the last written of the same kind and
// mode (its device named), else MixLab's own. An unreadable or malformed file is passed over (the bounded reader).
Confidence zoo_confidence(const DeviceProfile& device, bool layers_timed,
                          const std::filesystem::path& zoo_file);

nlohmann::ordered_json to_json(const Confidence& c);

}  // namespace mixlab::doctor
