// Paths of the build and the sources, found at run time from the test program's own place in
// the build folder (the first folder above it with a CMakeCache.txt) rather than compiled in: a
// test object then does not depend on the folder it was built in, so ccache shares it between
// checkouts, CI's runs and the fresh root (issue 26).
#pragma once

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace mixlab::test {

// The build folder this test program belongs to.
inline const std::filesystem::path& build_dir() {
  static const std::filesystem::path dir = [] {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) throw std::runtime_error("cannot read /proc/self/exe: " + ec.message());
    for (p = p.parent_path(); p.has_relative_path(); p = p.parent_path()) {
      if (std::filesystem::exists(p / "CMakeCache.txt")) return p;
    }
    throw std::runtime_error("no CMakeCache.txt above the test program: is it in a build folder?");
  }();
  return dir;
}

// The source tree the build was configured from (CMakeCache.txt's MixLab_SOURCE_DIR).
inline const std::string& source_dir() {
  static const std::string dir = [] {
    std::ifstream cache(build_dir() / "CMakeCache.txt");
    const std::string key = "MixLab_SOURCE_DIR:STATIC=";
    for (std::string line; std::getline(cache, line);) {
      if (line.rfind(key, 0) == 0) return line.substr(key.size());
    }
    throw std::runtime_error("no MixLab_SOURCE_DIR in " +
                             (build_dir() / "CMakeCache.txt").string());
  }();
  return dir;
}

// A file the build made, by its path below the build folder ("app/mixlab-cli").
inline std::string built(const std::string& relative) {
  return (build_dir() / relative).string();
}

inline const char* cli_path() {
  static const std::string path = built("app/mixlab-cli");
  return path.c_str();
}

// tests/backend's test double of libmixlab-cuda.so.
inline const char* fake_plugin() {
  static const std::string path = built("tests/backend/libtest_fake_cuda_plugin.so");
  return path.c_str();
}

}  // namespace mixlab::test
