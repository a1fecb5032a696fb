// Pieces the mixlab-cli commands share.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/spec/model_spec.h"
#include "engine/train/run_types.h"

namespace mixlab::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitRunFailed = 1,  // the run failed or diverged
  kExitBadInput = 2,   // bad arguments, model file or dataset
  kExitStopped = 130,  // interrupted (Ctrl+C)
};

// A model argument: a path to a model file, or the name of a built-in model ("fashion-mlp").
ModelSpec load_model_argument(const std::string& argument);

// "1,234,567"
std::string group_digits(std::int64_t value);
// "12.3 MiB"
std::string format_bytes(std::int64_t bytes);
// A fixed-point number with a decimal point whatever the locale, or "-" for NaN.
std::string format_fixed(double value, int decimals);

// A run's settings as --json writes them ("config" in train and runs show): every field of the
// run-settings table (engine/train/run_fields.h) at its JSON path, as a JSON number, boolean or
// string.
nlohmann::ordered_json run_config_json(const RunConfig& config);

}  // namespace mixlab::cli
