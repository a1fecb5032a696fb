// mixlab-cli's commands; each returns the process's exit code and throws UsageError,
// SpecError, ConfigError, DatasetError, RunNotFoundError or store::OutputTargetError (an output
// file that is a run database) for bad input (exit code 2, mapped in run_cli). A run store that
// cannot be opened, read or written throws StoreError (exit code 1).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace mixlab::cli {

// A run id that the run store does not hold: bad input, not a broken store.
class RunNotFoundError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

int run_inspect(const std::vector<std::string>& args);
int run_train(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);
int run_doctor(const std::vector<std::string>& args);
int run_devices(const std::vector<std::string>& args);
int run_self_test(const std::vector<std::string>& args);

// The whole command line after the program name ("train --steps 10"): help, --version, or a
// command, with bad input, failed runs and store errors mapped to exit codes and messages on
// stderr. Never throws.
int run_cli(std::vector<std::string> args);
int run_runs(const std::vector<std::string>& args);
int run_sweep(const std::vector<std::string>& args);
int run_export(const std::vector<std::string>& args);
int run_predict(const std::vector<std::string>& args);

}  // namespace mixlab::cli
