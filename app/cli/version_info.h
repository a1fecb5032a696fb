// What `--version` prints for mixlab-cli and mixlab: the version, build type and compiler, each
// backend with whether it can train here and why not, and the libraries in use.
#pragma once

#include <string>

namespace mixlab::cli {

// "mixlab-cli 0.1.0 (Release, GCC 12.2.0)\nbackends:\n  cpu   available: ...\n..."
std::string version_report(const std::string& program);

}  // namespace mixlab::cli
