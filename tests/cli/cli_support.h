// What the mixlab-cli tests share: running the program as a user would (exit code, stdout,
// stderr), temporary files, and a run store of the tests' own for every child process.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include "tests/test_paths.h"

namespace mixlab_cli_test {

namespace fs = std::filesystem;

inline fs::path make_temp_dir(const std::string& prefix) {
  std::string dir = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (mkdtemp(dir.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + dir);
  return dir;
}

// Every mixlab-cli these tests start (train records its runs) writes to a database of its own,
// never the user's: MIXLAB_DB is set for the whole process, and children inherit it.
class IsolatedRunStore : public ::testing::Environment {
 public:
  void SetUp() override {
    dir_ = make_temp_dir("mixlab-cli-db");
    setenv("MIXLAB_DB", (dir_ / "runs.sqlite").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

 private:
  fs::path dir_;
};

inline ::testing::Environment* const kIsolatedRunStore =
    ::testing::AddGlobalTestEnvironment(new IsolatedRunStore);

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs mixlab-cli with the arguments (a shell word list) and collects stdout, stderr, exit code.
// `env` is put before the command ("MIXLAB_DB=/tmp/x.sqlite").
inline Result run_cli(const std::string& args, const std::string& env = "") {
  const fs::path dir = fs::temp_directory_path() / ("mixlab-cli-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "out").string(), err = (dir / "err").string();
  const std::string cmd =
      env + " " + mixlab::test::cli_path() + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream o(out), e(err);
  r.out.assign(std::istreambuf_iterator<char>(o), {});
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  return r;
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path p =
      fs::temp_directory_path() / ("mixlab-cli-test-" + std::to_string(getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace mixlab_cli_test
