// Finds and loads the CUDA backend's library, libmixlab-cuda.so, with dlopen() (see
// engine/backend/cuda/plugin_api.h). Compiled into every engine, with or without the CUDA
// toolkit: mixlab and mixlab-cli link no CUDA library, so a machine without one only loses the
// GPU backend, and the loader says why.
//
// Where it looks, in order: $MIXLAB_CUDA_BACKEND (a full path; when set, only there), then
// <folder of the program>/../lib/mixlab/, <folder of the program>/, and for a program inside the
// build tree, the build tree's lib/mixlab/ (so that tests and programs run from the build find
// the library built with them; an installed program never looks there).
#pragma once

#include <string>
#include <vector>

#include "engine/backend/cuda/plugin_api.h"

namespace mixlab::cuda {

// The environment variable naming the plugin to load (a full path).
inline constexpr const char* kPluginPathVariable = "MIXLAB_CUDA_BACKEND";

struct PluginLoad {
  const PluginApi* api = nullptr;  // null when it could not be loaded
  std::string path;                // the file loaded or tried; empty when none was found
  std::string error;               // why api is null, in words; empty when it loaded
};

// The plugin of this process: looked for and loaded on the first call (thread-safe), then the
// same answer every time. The library stays loaded until the process ends.
const PluginLoad& plugin();

// Loads the plugin at `path` and checks it (ABI version, build id), without caching: the
// loader's checks, for tests. A library that passes stays loaded; one that fails is unloaded.
PluginLoad load_plugin_file(const std::string& path);

// The places plugin() looks, in order ($MIXLAB_CUDA_BACKEND alone when it is set). Empty when
// the program's own path cannot be read (/proc not mounted, as in a bare chroot).
std::vector<std::string> plugin_search_paths();

// plugin()'s error when no plugin was found at `searched` (plugin_search_paths()'s answer).
std::string not_found_error(const std::vector<std::string>& searched);

// The build id this engine expects from the plugin.
const char* engine_build_id();

}  // namespace mixlab::cuda
