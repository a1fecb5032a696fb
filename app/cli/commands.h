// mixlab-cli's commands; each returns the process's exit code and throws UsageError,
// SpecError, ConfigError or DatasetError for bad input (exit code 2, mapped in main).
#pragma once

#include <string>
#include <vector>

namespace mixlab::cli {

int run_inspect(const std::vector<std::string>& args);
int run_train(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);
int run_devices(const std::vector<std::string>& args);

}  // namespace mixlab::cli
