#include "app/cli/version_info.h"

#include <sqlite3.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include "engine/backend/backend.h"

namespace mixlab::cli {

std::string version_report(const std::string& program) {
  std::string out = program + " " MIXLAB_VERSION " (" MIXLAB_BUILD_TYPE " build, GCC " __VERSION__
                              ")\nbackends:\n";
  for (const BackendStatus& b : backend_statuses()) {
    std::string name = b.name;
    name.resize(6, ' ');
    out += "  " + name + (b.available ? "available: " : "unavailable: ") + b.detail + "\n";
  }
  out += "libraries: SQLite " + std::string(sqlite3_libversion()) + ", zlib " + zlibVersion() +
         ", nlohmann_json " + std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
         std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
         std::to_string(NLOHMANN_JSON_VERSION_PATCH) + "\n";
  return out;
}

}  // namespace mixlab::cli
