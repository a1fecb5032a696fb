// What the `mixlab-cli runs` subcommands share (runs_command.cpp, runs_show.cpp): their
// arguments, opening the store with the runs named, and text and JSON formatting.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/store/run_store.h"

namespace mixlab::cli::runs {

using store::RunRecord;
using store::RunStore;
using Json = nlohmann::ordered_json;

// What a subcommand was given; CLI11 fills in the options each one has.
struct RunsArgs {
  std::vector<std::string> positionals;
  std::string db;  // empty: --db not given
  bool json = false;
  bool steps = false;
  bool summary = false;
  bool layers = false;
  bool fp8 = false;
  bool remove = false;
  std::string output;  // empty: stdout
  std::string sweep;   // export --sweep ID
  std::string usage;   // "mixlab-cli runs show ID [--json]"
};

std::int64_t parse_run_id(const std::string& text);
std::vector<std::int64_t> parse_run_ids(std::span<const std::string> texts);
// The positionals after the subcommand, at least `min` (and at most `max`) of them.
const std::vector<std::string>& positionals(const RunsArgs& args, std::size_t min,
                                            std::size_t max);
std::filesystem::path store_path(const RunsArgs& args);

// A store and the records of the runs a command names, in the order named.
struct OpenRuns {
  RunStore store;
  std::vector<RunRecord> records;
};
// What a command does with the store: `read` commands (list, show, export, compare) also work
// on a database they cannot write (read-only media), opening it read-only.
enum class Access { read, write };
// Opens the store for a reading command: writable where it can be (runs whose process ended
// are then marked interrupted), else read-only.
RunStore open_for_reading(const std::filesystem::path& path);
// Opens the store at `path`, checking that it holds every one of `ids` before the command
// touches any. It never creates a database: without the file there is no such run.
OpenRuns open_runs(const std::filesystem::path& path, std::span<const std::int64_t> ids,
                   Access access);

// A run whose row could not be read whole (store::RunRecord::damage): the status tables show
// ("damaged"), "damaged" in --json (what could not be read, or null), and a refusal for the
// commands that need its settings (compare, export --run), which would otherwise use defaults in
// place of the values that could not be read: StoreError naming the run and the damage.
std::string status_of(const RunRecord& r);
Json damage_or_null(const RunRecord& r);
void require_sound(const RunRecord& r, const std::filesystem::path& path);

Json number_or_null(double value);
Json time_or_null(std::int64_t ms);
void print_json(const Json& json);
// "2026-11-30 02:45" (UTC) for tables.
std::string short_time(std::int64_t ms);
// A ratio such as "1.85x", "-" when either time was not measured.
std::string format_ratio(double ratio);
// "1 epoch", "2 epochs"
std::string count_of(std::int64_t n, const std::string& noun);
std::string format_rate(double per_s);
// User text on one table line: control characters (a name's newline) become spaces, and long
// text is cut to `max_chars` characters (UTF-8 sequences kept whole).
std::string one_line(const std::string& text, std::size_t max_chars);
// Display width in characters, counting each UTF-8 sequence once.
std::size_t text_width(const std::string& text);
std::string precision_of(const RunRecord& r);
std::string join(const std::vector<std::string>& items, const char* separator);

// A text table whose columns are as wide as their widest cell; numbers right-aligned.
class Table {
 public:
  struct Column {
    std::string title;
    bool numeric = false;
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out, const std::string& indent = "") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// `runs show`.
int show_run(const RunsArgs& args);

}  // namespace mixlab::cli::runs
