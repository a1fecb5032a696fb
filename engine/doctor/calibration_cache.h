// The doctor's calibration caches (~/.cache/mixlab/cpu-profiles.json, gpu-profiles.json): JSON
// lists of the calibrations this machine's devices gave, read and written by local_profile.cpp.
// A cache is MixLab's own file but not trusted: it is read through the bounded reader
// (engine/core/text_file.h: a FIFO, a directory or a huge file is ignored, not read), and an
// entry's figures are held to the bounds a profile file's are (figure_bounds.h).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend/backend.h"
#include "engine/doctor/device_profile.h"  // ProfileError

namespace mixlab::doctor {

// One entry of a cache, well-formed enough to match a device by.
template <class Calibration>
struct CacheEntry {
  Calibration calibration;
  // Why its figures cannot be used ("field 'stream_bytes_per_s' is 1e-291 GB/s; ..."), or
  // empty when they can.
  std::string problem;
};

// The entries of a cache's text that are of this format (others are left out: another version's
// or another device kind's). Throws ProfileError naming `origin` when the text is not a JSON list.
template <class Calibration>
std::vector<CacheEntry<Calibration>> parse_calibration_cache(std::string_view text,
                                                             std::string_view origin);

nlohmann::json to_json(const CpuCalibration& c);
nlohmann::json to_json(const GpuCalibration& c);

// A cache file as found on disk.
template <class Calibration>
struct CacheFile {
  std::vector<CacheEntry<Calibration>> entries;
  // Why the file was ignored ("<path>: cannot read calibration cache: not a regular file (a
  // FIFO)", "<path>: not valid JSON ..."); empty when it was read or does not exist yet.
  std::string problem;
  // A cache that is missing or a regular file is (re)written; anything else is left alone.
  bool writable = true;
};
template <class Calibration>
CacheFile<Calibration> read_calibration_cache(const std::filesystem::path& path);

// Replaces the cache with `entries` (written beside it, then renamed over it, so that a reader
// never sees half a file). Returns false when it cannot be written (the profile still holds).
bool write_calibration_cache(const std::filesystem::path& path,
                             const std::vector<nlohmann::json>& entries);

}  // namespace mixlab::doctor
