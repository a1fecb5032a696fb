// Fuzzes GPU profile files (`mixlab-cli doctor --profiles FILE`): parse_gpu_profiles, then, for
// every profile it accepts, the cost model's prediction of a small model's step under float32
// and each mixed policy. Bad input must end in a ProfileError; any other exception, a crash, a
// leak, or an accepted profile that predicts a step time that is not finite and positive (a
// bandwidth of 1e-308 once gave "inf ms") is a finding.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/error.h"
#include "engine/doctor/device_profile.h"
#include "fuzz/fuzz_support.h"
#include "fuzz/profile_check.h"

using mixlab::fuzz::unexpected_exception;
namespace doctor = mixlab::doctor;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<doctor::DeviceProfile> profiles;
  try {
    profiles = doctor::parse_gpu_profiles(text, "fuzz.json");
  } catch (const doctor::ProfileError&) {
    return 0;
  } catch (const std::exception& e) {
    unexpected_exception("parse_gpu_profiles", e);
  }
  for (const doctor::DeviceProfile& p : profiles) {
    mixlab::fuzz::check_profile_predicts(p, "a parsed profile");
    try {
      (void)doctor::find_profile(profiles, p.name);
    } catch (const std::exception& e) {
      unexpected_exception("find_profile of a parsed profile's name", e);
    }
  }
  return 0;
}
