#include "app/cli/common.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "engine/core/error.h"
#include "resources/builtin_models.h"

namespace mixlab::cli {

ModelSpec load_model_argument(const std::string& argument) {
  const std::filesystem::path path(argument);
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return load_model_file(path);
  if (const auto json = builtin_model_json(argument)) {
    return parse_model_json(*json, "built-in model '" + argument + "'");
  }
  std::string names;
  for (auto name : builtin_model_names()) names += (names.empty() ? "" : ", ") + std::string(name);
  throw SpecError("no model file '" + argument +
                  "' and no built-in model of that name (built-in: " + names + ")");
}

std::string group_digits(std::int64_t value) {
  const std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out = value < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_bytes(std::int64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  } else if (b >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  } else if (b >= 1024.0) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

std::string format_fixed(double value, int decimals) {
  if (std::isnan(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

}  // namespace mixlab::cli
