// Fuzzes the doctor's calibration caches (~/.cache/mixlab/cpu-profiles.json and
// gpu-profiles.json, read at every diagnosis): parse_calibration_cache for CPU and GPU entries,
// then, for every entry whose figures pass (no `problem`), the profile the doctor makes of it and
// the cost model's prediction of a small model's step. Bad input must end in a ProfileError (or
// entries left out); any other exception, a crash, a leak, or a usable entry that predicts a step
// time that is not finite and positive (1e-300 roofs once gave an infinite one) is a finding.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>

#include "engine/doctor/calibration_cache.h"
#include "engine/doctor/local_profile.h"
#include "fuzz/fuzz_support.h"
#include "fuzz/profile_check.h"

using mixlab::fuzz::unexpected_exception;
namespace doctor = mixlab::doctor;

namespace {

template <class Calibration>
void check(std::string_view text, const char* kind) {
  std::vector<doctor::CacheEntry<Calibration>> entries;
  try {
    entries = doctor::parse_calibration_cache<Calibration>(text, "fuzz.json");
  } catch (const doctor::ProfileError&) {
    return;
  } catch (const std::exception& e) {
    unexpected_exception(kind, e);
  }
  for (const doctor::CacheEntry<Calibration>& e : entries) {
    if (!e.problem.empty()) continue;  // measured again, not used
    doctor::DeviceProfile profile;
    try {
      if constexpr (std::is_same_v<Calibration, mixlab::CpuCalibration>) {
        profile = doctor::cpu_profile(e.calibration);
      } else {
        profile = doctor::gpu_profile(e.calibration);
      }
    } catch (const std::exception& ex) {
      unexpected_exception("the profile of a usable cache entry", ex);
    }
    mixlab::fuzz::check_profile_predicts(profile, "a usable cache entry");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check<mixlab::CpuCalibration>(text, "parse_calibration_cache<CpuCalibration>");
  check<mixlab::GpuCalibration>(text, "parse_calibration_cache<GpuCalibration>");
  return 0;
}
