#include "engine/backend/cuda_loader.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace mixlab::cuda {

namespace fs = std::filesystem;

namespace {

std::string describe(const std::string& path) {
  return "the CUDA backend (" + path + ")";
}

std::string last_dl_error() {
  const char* e = dlerror();
  return e != nullptr ? std::string(e) : std::string("unknown dlopen error");
}

PluginLoad find_and_load() {
  const std::vector<std::string> paths = plugin_search_paths();
  if (const char* env = std::getenv(kPluginPathVariable); env != nullptr && *env != '\0') {
    return load_plugin_file(env);
  }
  for (const std::string& path : paths) {
    std::error_code ec;
    if (fs::exists(path, ec)) return load_plugin_file(path);
  }
  PluginLoad none;
  none.error = not_found_error(paths);
  return none;
}

}  // namespace

const char* engine_build_id() {
  return MIXLAB_CUDA_PLUGIN_BUILD_ID;
}

std::string not_found_error(const std::vector<std::string>& searched) {
#if defined(MIXLAB_HAVE_CUDA)
  const std::string set_it = std::string("set ") + kPluginPathVariable + " to its full path";
  if (searched.empty()) {
    // Without the program's own path there is nowhere to look (it read "looked for ;").
    return std::string("the CUDA backend was not looked for: ") + kPluginFileName +
           " lies beside the program, whose path /proc/self/exe does not give here (is /proc "
           "mounted?); " + set_it;
  }
  std::string where;
  for (const std::string& path : searched) where += (where.empty() ? "" : ", ") + path;
  return std::string("the CUDA backend is not installed: ") + kPluginFileName +
         " was not found (looked for " + where + "; " + set_it + ")";
#else
  (void)searched;
  return "not in this build: it was built without the CUDA toolkit";
#endif
}

std::vector<std::string> plugin_search_paths() {
  if (const char* env = std::getenv(kPluginPathVariable); env != nullptr && *env != '\0') {
    return {env};
  }
  std::vector<std::string> paths;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return paths;
  const fs::path dir = exe.parent_path();
  paths.push_back((dir / ".." / "lib" / "mixlab" / kPluginFileName).lexically_normal().string());
  paths.push_back((dir / kPluginFileName).string());
  // The build tree's library, for programs and tests run from the build tree only: an installed
  // program never loads a plugin from wherever it happened to be built.
  const fs::path build_dir = fs::path(MIXLAB_PLUGIN_BUILD_DIR);  // <build>/lib/mixlab
  const std::string build_root = build_dir.parent_path().parent_path().string() + "/";
  const std::string in_build = (build_dir / kPluginFileName).string();
  if (exe.string().rfind(build_root, 0) == 0 &&
      std::find(paths.begin(), paths.end(), in_build) == paths.end()) {
    paths.push_back(in_build);
  }
  return paths;
}

PluginLoad load_plugin_file(const std::string& path) {
  PluginLoad load;
  load.path = path;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    load.error = describe(path) + " cannot be loaded: the file does not exist";
    return load;
  }
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    // The usual cause: a CUDA library it links (libcublasLt, libcudnn, ...) is not installed.
    load.error = describe(path) + " cannot be loaded: " + last_dl_error();
    return load;
  }
  const auto reject = [&](std::string why) {
    load.error = std::move(why);
    dlclose(handle);
    return load;
  };
  dlerror();
  void* symbol = dlsym(handle, kPluginSymbol);
  if (symbol == nullptr) {
    return reject(path + " is not a MixLab CUDA backend: it has no " + kPluginSymbol +
                  "() entry (" + last_dl_error() + ")");
  }
  const auto entry = reinterpret_cast<MixlabCudaPluginFn>(symbol);
  const PluginApi* api = entry();
  if (api == nullptr) return reject(describe(path) + " returned no plugin table");
  // abi_version is the table's first field in every version: read it before anything else.
  if (api->abi_version != kPluginAbiVersion) {
    return reject(describe(path) + " was built for another MixLab version (plugin ABI version " +
                  std::to_string(api->abi_version) + ", this MixLab needs " +
                  std::to_string(kPluginAbiVersion) +
                  "); install the mixlab and the CUDA backend of one release");
  }
  const char* build_id = api->build_id != nullptr ? api->build_id : "";
  if (std::strcmp(build_id, engine_build_id()) != 0) {
    return reject(describe(path) + " was built for another MixLab version (it is '" + build_id +
                  "', this MixLab is '" + engine_build_id() +
                  "'); install the mixlab and the CUDA backend of one build");
  }
  if (api->create_backend == nullptr || api->library_versions == nullptr ||
      api->calibrate == nullptr) {
    return reject(describe(path) + " has an incomplete plugin table");
  }
  load.api = api;  // the handle stays open: the backend's code must outlive every executor
  return load;
}

const PluginLoad& plugin() {
  static const PluginLoad loaded = find_and_load();  // thread-safe initialisation (C++11)
  return loaded;
}

}  // namespace mixlab::cuda
