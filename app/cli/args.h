// mixlab-cli's command lines, parsed by CLI11 (Debian libcli11-dev). Each command describes its
// options on a CommandLine and parses; the run settings' options (train, bench, inspect) come
// from the run-settings table (engine/train/run_fields.h). Unknown options, missing values,
// empty values, stray arguments and bad values are UsageErrors that name the option (exit code
// 2), raised before the command does any work; --help prints the command's help.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/train/run_fields.h"

namespace mixlab::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One command's parser: `name` as the user types it ("mixlab-cli train").
class CommandLine {
 public:
  CommandLine(const std::string& name, const std::string& description);
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  CLI::App& app() { return app_; }
  // Options that take a value keep the last one given, as flags may be repeated. An empty value
  // is a usage error naming the option (never "not given", "the default").
  CLI::Option* add_option(CLI::App& to, const std::string& name, std::string& value,
                          const std::string& help);
  // A path option: the same, "an empty path".
  CLI::Option* add_path_option(CLI::App& to, const std::string& name, std::string& value,
                               const std::string& help);
  // --db PATH, the run database: a path option whose value is also protected from every output
  // of the command (store::protect_database), whether or not the command opens it.
  CLI::Option* add_database_option(CLI::App& to, std::string& value, const std::string& help);
  // A repeatable option: every value kept, none of them empty.
  CLI::Option* add_list_option(CLI::App& to, const std::string& name,
                               std::vector<std::string>& values, const std::string& help);
  // Parses the words after the command's name. False when --help was asked for (the help is
  // then on stdout). Throws UsageError. Words after a "--" are arguments, never options
  // (`runs rename 3 -- -x`): they are appended to `positionals` (a command without arguments
  // refuses them).
  bool parse(const std::vector<std::string>& argv, std::vector<std::string>* positionals = nullptr);
  // The help of the command, or of the subcommand given.
  std::string help() const { return app_.help(); }

 private:
  CLI::App app_;
};

// An integer option's text as a number in [min, max]; UsageError naming the option otherwise.
std::int64_t integer_option(std::string_view flag, const std::string& text, std::int64_t min,
                            std::int64_t max);
// A device option's value checked (cpu, cuda, cuda:N, auto) without making a backend, so that a
// typo fails before any work; UsageError naming the option otherwise.
void check_device_option(std::string_view flag, const std::string& device);
// A run setting's text checked as the table's field `field_name` takes it (its type and range);
// UsageError naming `flag` otherwise. For options that pass a setting on (sweep resume
// --threads) rather than set it here.
void check_field_option(std::string_view flag, std::string_view field_name,
                        const std::string& text);

// The run settings of the table as options of a command, in table order: every field, or the
// ones named. Each shows its help, and its default unless an earlier option resets it (the
// learning rate follows --optimizer).
class RunFieldOptions {
 public:
  explicit RunFieldOptions(CommandLine& command);
  RunFieldOptions(CommandLine& command, std::initializer_list<std::string_view> names);
  RunFieldOptions(const RunFieldOptions&) = delete;
  RunFieldOptions& operator=(const RunFieldOptions&) = delete;

  bool given(std::string_view field_name) const;
  // Applies the options given to `config` in table order (a boolean's flag turns it from its
  // default). Throws UsageError naming the option and the value, or an option of the other
  // optimizer ("--momentum applies to --optimizer sgd").
  void apply(RunConfig& config) const;

 private:
  struct Entry {
    const RunField* field = nullptr;
    CLI::Option* option = nullptr;
    std::string text;   // a value option's
    bool flag = false;  // a boolean's
  };
  void add(CommandLine& command, const RunField& field);

  std::deque<Entry> entries_;  // CLI11 writes into them: their addresses must not change
};

}  // namespace mixlab::cli
