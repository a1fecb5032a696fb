#include "app/cli/args.h"

#include <algorithm>
#include <charconv>
#include <iostream>

#include "app/store/safe_file.h"
#include "engine/backend/backend.h"

namespace mixlab::cli {

CommandLine::CommandLine(const std::string& name, const std::string& description)
    : app_(description, name) {
  // Strays are reported below in mixlab-cli's words, naming the first one. Subcommands inherit
  // this when they are added.
  app_.allow_extras();
  app_.get_formatter()->column_width(32);
}

namespace {

// CLI11 reports a failing check as "--name: <what it returns>".
CLI::Validator non_empty(std::string what) {
  return CLI::Validator(
      [what](const std::string& text) { return text.empty() ? "an empty " + what : std::string(); },
      "", "non-empty");
}

}  // namespace

CLI::Option* CommandLine::add_option(CLI::App& to, const std::string& name, std::string& value,
                                     const std::string& help) {
  return to.add_option(name, value, help)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(non_empty("value"));
}

CLI::Option* CommandLine::add_path_option(CLI::App& to, const std::string& name,
                                          std::string& value, const std::string& help) {
  return to.add_option(name, value, help)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(non_empty("path"))
      ->type_name("PATH");
}

CLI::Option* CommandLine::add_database_option(CLI::App& to, std::string& value,
                                              const std::string& help) {
  return add_path_option(to, "--db", value, help)->each([](const std::string& path) {
    store::protect_database(path);
  });
}

CLI::Option* CommandLine::add_list_option(CLI::App& to, const std::string& name,
                                          std::vector<std::string>& values,
                                          const std::string& help) {
  return to.add_option(name, values, help)->check(non_empty("value"));
}

bool CommandLine::parse(const std::vector<std::string>& argv,
                        std::vector<std::string>* positionals) {
  const auto dashes = std::find(argv.begin(), argv.end(), "--");
  // As CLI11 takes them (reversed), without the "--" and what follows.
  std::vector<std::string> reversed(std::make_reverse_iterator(dashes), argv.rend());
  try {
    app_.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << app_.help();
    return false;
  } catch (const CLI::ArgumentMismatch& e) {
    // CLI11 says "--steps: 1 required N missing" for an option given without its value.
    const std::string what = e.what();
    const auto colon = what.find(": ");
    if (colon != std::string::npos && what.find(" required ") != std::string::npos &&
        what.ends_with(" missing")) {
      throw UsageError("option " + quote(what.substr(0, colon)) + " needs a value");
    }
    throw UsageError(what);
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  if (dashes != argv.end() && dashes + 1 != argv.end()) {
    if (positionals == nullptr) throw UsageError("unexpected argument " + quote(*(dashes + 1)));
    positionals->insert(positionals->end(), dashes + 1, argv.end());
  }
  for (const std::string& extra : app_.remaining(true)) {
    if (extra.size() > 1 && extra[0] == '-') {
      throw UsageError("unknown option " + quote(extra.substr(0, extra.find('='))));
    }
    throw UsageError("unexpected argument " + quote(extra));
  }
  return true;
}

std::int64_t integer_option(std::string_view flag, const std::string& text, std::int64_t min,
                            std::int64_t max) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) {
    throw UsageError("option '" + std::string(flag) + "' needs an integer, got " + quote(text));
  }
  if (v < min || v > max) {
    throw UsageError("option '" + std::string(flag) + "' must be between " + std::to_string(min) +
                     " and " + std::to_string(max) + ", got " + text);
  }
  return v;
}

void check_device_option(std::string_view flag, const std::string& device) {
  try {
    check_device_name(device);
  } catch (const ConfigError& e) {
    throw UsageError("option '" + std::string(flag) + "': " + e.what());
  }
}

void check_field_option(std::string_view flag, std::string_view field_name,
                        const std::string& text) {
  RunConfig scratch;
  try {
    set_field_text(run_field(field_name), scratch, text);
  } catch (const FieldError& e) {
    throw UsageError("option '" + std::string(flag) + "': " + e.problem());
  }
}

RunFieldOptions::RunFieldOptions(CommandLine& command) {
  for (const RunField& field : run_fields()) add(command, field);
}

RunFieldOptions::RunFieldOptions(CommandLine& command,
                                 std::initializer_list<std::string_view> names) {
  for (const RunField& field : run_fields()) {
    if (std::find(names.begin(), names.end(), field.name) != names.end()) add(command, field);
  }
}

void RunFieldOptions::add(CommandLine& command, const RunField& field) {
  Entry& entry = entries_.emplace_back();
  entry.field = &field;
  const std::string name = "--" + std::string(field.cli_flag);
  const std::string help(field.help);
  if (field.type == FieldType::boolean) {
    entry.option = command.app().add_flag(name, entry.flag, help);
  } else {
    entry.option = command.add_option(command.app(), name, entry.text, help);
    entry.option->type_name(field.type == FieldType::integer ? "N"
                            : field.type == FieldType::real  ? "X"
                                                             : "TEXT");
    // A default an earlier option resets (Adam's or SGD's learning rate) is not one value.
    if (field.depends_on.empty()) entry.option->default_str(field_default_text(field));
  }
  entry.option->group("Run settings");
}

bool RunFieldOptions::given(std::string_view field_name) const {
  for (const Entry& entry : entries_) {
    if (entry.field->name == field_name) return entry.option->count() > 0;
  }
  return false;
}

void RunFieldOptions::apply(RunConfig& config) const {
  for (const Entry& entry : entries_) {
    if (entry.option->count() == 0) continue;
    const RunField& field = *entry.field;
    const std::string flag = "--" + std::string(field.cli_flag);
    if (field.optimizer && config.optimizer.kind != *field.optimizer) {
      throw UsageError(flag + " applies to --optimizer " +
                       std::string(to_string(*field.optimizer)));
    }
    try {
      if (field.type == FieldType::boolean) {
        // The flag turns the field from its default: --tf32 on, --no-eval off.
        set_field(field, config, !std::get<bool>(field.get(RunConfig{})));
      } else {
        set_field_text(field, config, entry.text);
      }
    } catch (const FieldError& e) {
      throw UsageError("option '" + flag + "': " + e.problem());
    }
  }
}

}  // namespace mixlab::cli
