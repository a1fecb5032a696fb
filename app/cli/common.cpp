#include "app/cli/common.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <variant>

#include "engine/core/error.h"
#include "engine/train/run_fields.h"
#include "resources/builtin_models.h"

namespace mixlab::cli {

ImportedModel load_model_input(const std::string& argument) {
  const std::filesystem::path path(argument);
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    ImportedModel model = load_model_source(path);
    for (const std::string& warning : model.warnings) {
      std::fprintf(stderr, "mixlab-cli: warning: %s: %s\n", printable(argument).c_str(),
                   printable(warning).c_str());
    }
    return model;
  }
  if (const auto json = builtin_model_json(argument)) {
    ImportedModel model;
    model.spec = parse_model_json(*json, "built-in model " + quote(argument));
    model.format = "MixLab JSON";
    return model;
  }
  std::string names;
  for (auto name : builtin_model_names()) names += (names.empty() ? "" : ", ") + std::string(name);
  throw SpecError("no model file " + quote(argument) +
                  " and no built-in model of that name (built-in: " + names + ")");
}

ModelSpec load_model_argument(const std::string& argument) {
  return load_model_input(argument).spec;
}

void apply_model_settings(const ImportedModel& model, RunConfig& config) {
  if (model.policy)
    set_field(run_field("precision"), config, std::string(to_string(*model.policy)));
  config.initial_weights = model.weights;
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
  const double b = static_cast<double>(bytes);
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  if (b >= kGiB) return format_fixed(b / kGiB, 2) + " GiB";
  if (b >= kMiB) return format_fixed(b / kMiB, 1) + " MiB";
  if (b >= kKiB) return format_fixed(b / kKiB, 1) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string format_fixed(double value, int decimals) {
  if (std::isnan(value)) return "-";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // std::to_chars, unlike printf, writes '.' whatever the C locale says.
  char buf[400];
  const auto result =
      std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, decimals);
  return std::string(buf, result.ptr);
}

nlohmann::ordered_json run_config_json(const RunConfig& config) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const RunField& field : run_fields()) {
    std::string path = "/";  // appended: GCC 12 warns falsely (-Wrestrict) on "/" + std::string
    path += field.json_path;
    const nlohmann::ordered_json::json_pointer at(path);
    std::visit([&](const auto& value) { out[at] = value; }, field.get(config));
  }
  return out;
}

}  // namespace mixlab::cli
