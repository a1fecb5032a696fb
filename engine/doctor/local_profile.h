// The profiles of this machine's devices, measured at first use and kept in a cache file, so
// later diagnoses start at once: the CPU's (engine/backend calibrate_cpu) per CPU, thread count
// and oneDNN build; a present GPU's (calibrate_gpu, through the CUDA backend) per GPU model,
// memory size and library versions.
#pragma once

#include <filesystem>
#include <string>

#include "engine/backend/backend.h"
#include "engine/doctor/device_profile.h"

namespace mixlab::doctor {

// The profile a calibration gives: its roofs, the CPU's ISA; no memory limit (the host's).
DeviceProfile cpu_profile(const CpuCalibration& calibration);

// Where a profile's `sources` say why its device's calibration cache was not used (a FIFO or a
// directory in its place, a file over its cap, not JSON, this device's entry with figures out of
// figure_bounds.h) and the roofs were measured again; absent when the cache was fine.
inline constexpr const char* kCacheNoteSource = "calibration_cache";

// `cache_file` (a JSON list of calibrations, calibration_cache.h): the entry for this CPU,
// thread count and oneDNN, or a calibration made now and added to it. `recalibrate` measures
// again regardless. `measured_now` says which happened. A cache that cannot be used is measured
// over (sources[kCacheNoteSource] says why), one that cannot be written is left (the profile is
// still returned); one that is not a regular file is neither read nor written.
DeviceProfile local_cpu_profile(int threads, const std::filesystem::path& cache_file,
                                bool recalibrate = false, bool* measured_now = nullptr);

// ${XDG_CACHE_HOME:-~/.cache}/mixlab/cpu-profiles.json
std::filesystem::path default_cpu_profile_cache();

// A present GPU's profile from its calibration: the measured matmul rates, copy bandwidth, host
// link and call overhead over the published profile of its name (or the estimate from its
// properties), which still gives FP8 and float16 accumulation; `sources` says which is which.
DeviceProfile gpu_profile(const GpuCalibration& calibration);

// The same for GPU `gpu` (0-based), described as `info`: the cache's entry for this GPU model,
// memory size and library versions, or a calibration made now (calibrate_gpu, about a second)
// and added to it. A GPU that cannot be calibrated (the CUDA backend unavailable) gets its
// published profile, with `not_measured` set to why; ProfileError when it has none either.
DeviceProfile local_gpu_profile(int gpu, const DeviceInfo& info,
                                const std::filesystem::path& cache_file, bool recalibrate = false,
                                bool* measured_now = nullptr, std::string* not_measured = nullptr);

// ${XDG_CACHE_HOME:-~/.cache}/mixlab/gpu-profiles.json
std::filesystem::path default_gpu_profile_cache();

}  // namespace mixlab::doctor
