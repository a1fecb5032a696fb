// The doctor's GPU profiles shipped inside the program (resources/doctor/gpu-profiles.json,
// embedded at build time), so that predictions need no file on disk.
#pragma once

#include <string_view>

namespace mixlab {

// The file's bytes.
std::string_view builtin_gpu_profiles_json();

}  // namespace mixlab
