// Pieces the mixlab-cli commands share.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/interop/keras_model.h"
#include "engine/spec/model_spec.h"
#include "engine/train/run_types.h"

namespace mixlab::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitRunFailed = 1,  // the run failed or diverged
  kExitBadInput = 2,   // bad arguments, model file or dataset
  kExitStopped = 130,  // interrupted (Ctrl+C)
};

// A model argument: a path to a model file (MixLab's JSON, Keras JSON or a .keras archive), or
// the name of a built-in model ("fashion-mlp"). What a Keras import did not model is printed to
// stderr as warnings.
ImportedModel load_model_input(const std::string& argument);
// Its spec alone.
ModelSpec load_model_argument(const std::string& argument);
// Sets what an imported model brings to a run (its dtype policy, its weights); the command
// line's settings are applied after it and win.
void apply_model_settings(const ImportedModel& model, RunConfig& config);

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
