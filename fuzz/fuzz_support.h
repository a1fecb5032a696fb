// Helpers the fuzz targets share: a scratch folder on a tmpfs and a way to report a finding.
// A finding aborts, so that libFuzzer saves the input as a crash (crash-<sha1>).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <typeinfo>

namespace mixlab::fuzz {

// Prints what broke the contract and aborts (libFuzzer: "deadly signal", the input is kept).
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "\n==FUZZ FINDING== %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// An exception that the code under test must not let escape.
[[noreturn]] inline void unexpected_exception(const char* call, const std::exception& e) {
  finding(std::string(call) + " let an exception of type " + typeid(e).name() +
          " escape: " + e.what());
}

// A folder of this process's own, on /dev/shm when there is one (each iteration writes files),
// removed when the process ends normally (-max_total_time, -runs).
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name) {
    std::error_code ec;
    std::filesystem::path base = "/dev/shm";
    if (!std::filesystem::is_directory(base, ec) || access(base.c_str(), W_OK) != 0)
      base = std::filesystem::temp_directory_path();
    path_ = base / ("mixlab-fuzz-" + name + "-" + std::to_string(getpid()));
    std::filesystem::remove_all(path_, ec);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& path, const std::uint8_t* data,
                       std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) finding("cannot write the scratch file " + path.string());
}

inline std::uint32_t read_be32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 |
         std::uint32_t{p[3]};
}

}  // namespace mixlab::fuzz
