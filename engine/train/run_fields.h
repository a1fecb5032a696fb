// A run's settings (RunConfig), each described once: name, type, default (RunConfig's own),
// mixlab-cli flag, --json path, run-store column, CSV column, label for people, and typed access.
// The run store, the CSV exports, mixlab-cli's options and --json, the run panel's remembered
// settings and the comparison's "settings that differ" iterate this table instead of listing
// fields. A new RunConfig field is a new row in run_fields.cpp, plus a migration adding its
// column to the run store (app/store/schema.cpp); tests iterate the table and fail until every
// place has it.
//
// Order matters: setting some fields resets later ones to the defaults they imply (the precision
// resets the loss scaling to Keras's for it, the optimizer its hyperparameters to Keras's), so
// every reader applies fields in table order and the later fields' own values win.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/core/error.h"
#include "engine/train/run_types.h"

namespace mixlab {

enum class FieldType : std::uint8_t { text, integer, real, boolean };

// A field's value as its type holds it: text as std::string, integer as std::int64_t, real as
// double, boolean as bool.
using FieldValue = std::variant<std::string, std::int64_t, double, bool>;

// The values an integer or real field accepts.
struct FieldRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_inclusive = true;
  bool max_inclusive = true;
};

struct RunField {
  std::string_view name;  // RunConfig's member, snake_case ("batch_size"); settings key "run/NAME"
  FieldType type = FieldType::text;
  std::string_view label;  // for people, lower case: "batch size"
  std::string_view help;   // mixlab-cli --help: what the option sets, which values it takes
  // Without "--": "batch-size". A boolean's flag turns it from its default ("no-eval").
  std::string_view cli_flag;
  std::string_view json_path;     // in --json's "config", '/' nesting: "optimizer/learning_rate"
  std::string_view store_column;  // the run store's `runs` table
  std::string_view csv_column;    // the summary CSV's header
  std::string_view example;       // a valid value other than the default, as text (tests)
  std::string_view depends_on;    // the earlier field whose setting resets this one: "optimizer"
  bool per_step_csv = false;      // repeated on each row of the long steps CSV, naming the run
  // A GPU option (TF32, CUDA graphs, the dataset on the device): a run on the CPU runs and is
  // recorded with it at its default (applicable_config).
  bool gpu_only = false;
  std::optional<OptimizerKind> optimizer;  // the one optimizer it configures (SGD's momentum)
  FieldRange range;                        // integer and real fields
  FieldValue (*get)(const RunConfig& config) = nullptr;
  // Takes a value of the field's type, already checked against `range`; throws ConfigError
  // saying what is wrong with a text value.
  void (*set)(RunConfig& config, const FieldValue& value) = nullptr;
  // For people, when the generic form (numbers, "on" / "off", the text) would not say it.
  std::string (*display)(const RunConfig& config) = nullptr;
};

// A value a field does not accept. what(): "run setting 'batch_size': must be between 1 and
// 1048576, got 0"; problem() alone is the part after the colon.
class FieldError : public ConfigError {
 public:
  FieldError(const RunField& field, std::string value, std::string problem);
  std::string_view field() const { return field_; }
  const std::string& value() const { return value_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string_view field_;
  std::string value_;
  std::string problem_;
};

// Every field, in the order readers apply them.
std::span<const RunField> run_fields();
// The field of that name; throws ConfigError for a name the table does not hold.
const RunField& run_field(std::string_view name);

// Sets the field from a value of its type, checking the type and the range. Throws FieldError.
void set_field(const RunField& field, RunConfig& config, const FieldValue& value);
// The same without the range check, for a value as it was recorded: the run store keeps runs
// whose settings the trainer then refused (a negative learning rate), and must read them back.
void restore_field(const RunField& field, RunConfig& config, const FieldValue& value);

// The text form, for settings files and command lines: integers and reals as the shortest text
// that reads back exactly ("0.001"), booleans "true" / "false", text fields their engine form
// ("mixed_float16", "dynamic:1024", "synthetic:8x8x1:4:64").
std::string field_text(const RunField& field, const RunConfig& config);
std::string field_value_text(const FieldValue& value);
// Parses the text form (booleans also "1" / "0"). Throws FieldError.
FieldValue parse_field_text(const RunField& field, std::string_view text);
void set_field_text(const RunField& field, RunConfig& config, std::string_view text);
// RunConfig{}'s value of the field, as text.
std::string field_default_text(const RunField& field);
// For people: "on" / "off", "all cores", numbers and text as field_text writes them.
std::string field_display(const RunField& field, const RunConfig& config);

// The settings a run on `device` runs with, and so is recorded with, wherever it started
// (mixlab-cli train and each sweep member, the GUI's runs, the doctor's measurements): on the
// CPU every gpu_only field at its default. `reset`, when given, receives the fields that were
// set and are reset (mixlab-cli names them).
RunConfig applicable_config(RunConfig config, const DeviceInfo& device,
                            std::vector<const RunField*>* reset = nullptr);

}  // namespace mixlab
