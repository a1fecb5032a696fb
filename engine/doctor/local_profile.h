// The local CPU's profile, measured (engine/backend calibrate_cpu) at first use and kept per
// machine, thread count and oneDNN build in a cache file, so later diagnoses start at once.
#pragma once

#include <filesystem>

#include "engine/backend/backend.h"
#include "engine/doctor/device_profile.h"

namespace mixlab::doctor {

// The profile a calibration gives: its roofs, the CPU's ISA; no memory limit (the host's).
DeviceProfile cpu_profile(const CpuCalibration& calibration);

// `cache_file` (a JSON list of calibrations): the entry for this CPU, thread count and oneDNN,
// or a calibration made now and added to it. `recalibrate` measures again regardless.
// `measured_now` says which happened. A cache that cannot be read is measured over, one that
// cannot be written is left (the profile is still returned).
DeviceProfile local_cpu_profile(int threads, const std::filesystem::path& cache_file,
                                bool recalibrate = false, bool* measured_now = nullptr);

// ${XDG_CACHE_HOME:-~/.cache}/mixlab/cpu-profiles.json
std::filesystem::path default_cpu_profile_cache();

}  // namespace mixlab::doctor
