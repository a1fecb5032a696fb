#include "app/cli/runs_support.h"

#include <sqlite3.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "engine/core/error.h"

namespace mixlab::cli::runs {

namespace fs = std::filesystem;

namespace {

std::string no_run(std::int64_t id, const fs::path& path) {
  return "no run " + std::to_string(id) + " in " + path.string();
}

}  // namespace

std::int64_t parse_run_id(const std::string& text) {
  std::int64_t id = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, id);
  if (ec != std::errc() || ptr != end || id <= 0) {
    throw UsageError("a run id is a positive number, got " + quote(text));
  }
  return id;
}

std::vector<std::int64_t> parse_run_ids(std::span<const std::string> texts) {
  std::vector<std::int64_t> ids;
  for (const std::string& text : texts) ids.push_back(parse_run_id(text));
  return ids;
}

const std::vector<std::string>& positionals(const RunsArgs& args, std::size_t min,
                                            std::size_t max) {
  const auto& p = args.positionals;
  if (p.size() < min || p.size() > max) throw UsageError("usage: " + args.usage);
  return p;
}

fs::path store_path(const RunsArgs& args) {
  if (!args.db.empty()) return args.db;
  return store::default_store_path();
}

RunStore open_for_reading(const fs::path& path) {
  try {
    // Writable where it can be: a run whose process has ended is then shown `interrupted`.
    return RunStore::open(path);
  } catch (const store::StoreError& e) {
    // Read-only media or permissions: read without writing anything beside the file.
    if (e.code() != SQLITE_READONLY && e.code() != SQLITE_CANTOPEN && e.code() != SQLITE_PERM)
      throw;
    return RunStore::open(path, store::StoreOptions{.read_only = true});
  }
}

OpenRuns open_runs(const fs::path& path, std::span<const std::int64_t> ids, Access access) {
  if (!fs::exists(path)) throw RunNotFoundError(no_run(ids.front(), path));
  OpenRuns open{access == Access::read ? open_for_reading(path) : RunStore::open(path), {}};
  for (const std::int64_t id : ids) {
    auto record = open.store.find_run(id);
    if (!record) throw RunNotFoundError(no_run(id, path));
    open.records.push_back(std::move(*record));
  }
  return open;
}

std::string status_of(const RunRecord& r) {
  return r.damage.empty() ? std::string(store::to_string(r.status)) : "damaged";
}

Json damage_or_null(const RunRecord& r) {
  return r.damage.empty() ? Json() : Json(store::describe_damage(r));
}

void require_sound(const RunRecord& r, const fs::path& path) {
  if (r.damage.empty()) return;
  throw store::StoreError("run " + std::to_string(r.id) + " in " + path.string() +
                          " is damaged (" + store::describe_damage(r) +
                          "): its settings cannot be used; `runs show " + std::to_string(r.id) +
                          "` says what is left, `runs delete " + std::to_string(r.id) +
                          "` removes it");
}

Json number_or_null(double value) {
  return std::isfinite(value) ? Json(value) : Json();
}

Json time_or_null(std::int64_t ms) {
  return ms != 0 ? Json(store::format_utc(ms)) : Json();
}

void print_json(const Json& json) {
  // Names and notes are the user's text: a byte that is not UTF-8 becomes U+FFFD rather than
  // failing the whole command.
  std::cout << json.dump(2, ' ', false, Json::error_handler_t::replace) << std::endl;
}

std::string short_time(std::int64_t ms) {
  std::string text = store::format_utc(ms);
  if (text.size() < 16) return "-";
  text.resize(16);
  text[10] = ' ';
  return text;
}

std::string format_ratio(double ratio) {
  return std::isfinite(ratio) ? format_fixed(ratio, 2) + "x" : "-";
}

std::string count_of(std::int64_t n, const std::string& noun) {
  return group_digits(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string format_rate(double per_s) {
  return std::isfinite(per_s) ? group_digits(std::llround(per_s)) : "-";
}

std::string one_line(const std::string& text, std::size_t max_chars) {
  std::string line;
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const bool starts_char = (byte & 0xC0) != 0x80;
    if (starts_char && ++chars > max_chars) {
      line += "\xe2\x80\xa6";  // "…"
      break;
    }
    line += byte < 0x20 || byte == 0x7F ? ' ' : text[i];
  }
  return line;
}

std::size_t text_width(const std::string& text) {
  std::size_t width = 0;
  for (const char c : text) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return width;
}

void Table::print(std::ostream& out, const std::string& indent) const {
  std::vector<std::size_t> widths;
  for (const Column& c : columns_) widths.push_back(text_width(c.title));
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], text_width(row[i]));
  }
  const auto print_row = [&](const std::vector<std::string>& cells) {
    std::string line = indent;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const std::string pad(widths[i] - text_width(cells[i]), ' ');
      if (i > 0) line += "  ";
      line += columns_[i].numeric ? pad + cells[i] : cells[i] + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  std::vector<std::string> titles;
  for (const Column& c : columns_) titles.push_back(c.title);
  print_row(titles);
  for (const auto& row : rows_) print_row(row);
}

std::string precision_of(const RunRecord& r) {
  return std::string(to_string(r.config.precision));
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

}  // namespace mixlab::cli::runs
