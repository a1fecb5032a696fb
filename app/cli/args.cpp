#include "app/cli/args.h"

#include <charconv>
#include <cmath>

namespace mixlab::cli {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& options,
           const std::set<std::string>& flags) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() < 3 || a.rfind("--", 0) != 0) {
      if (a.size() > 1 && a[0] == '-' && a != "-") throw UsageError("unknown option '" + a + "'");
      positionals_.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    std::optional<std::string> value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (flags.count(name)) {
      if (value) throw UsageError("option '--" + name + "' takes no value");
      flags_.insert(name);
    } else if (options.count(name)) {
      if (!value) {
        if (i + 1 >= argv.size()) throw UsageError("option '--" + name + "' needs a value");
        value = argv[++i];
      }
      values_[name] = *value;
    } else {
      throw UsageError("unknown option '--" + name + "'");
    }
  }
}

bool Args::has(const std::string& name) const {
  return flags_.count(name) || values_.count(name);
}

std::optional<std::string> Args::get(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

std::optional<std::int64_t> Args::get_int(const std::string& name, std::int64_t min,
                                          std::int64_t max) const {
  const auto text = get(name);
  if (!text) return std::nullopt;
  std::int64_t v = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, v);
  if (ec != std::errc() || ptr != end) {
    throw UsageError("option '--" + name + "' needs an integer, got '" + *text + "'");
  }
  if (v < min || v > max) {
    throw UsageError("option '--" + name + "' must be between " + std::to_string(min) + " and " +
                     std::to_string(max) + ", got " + *text);
  }
  return v;
}

std::optional<double> Args::get_double(const std::string& name) const {
  const auto text = get(name);
  if (!text) return std::nullopt;
  double v = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v)) {
    throw UsageError("option '--" + name + "' needs a number, got '" + *text + "'");
  }
  return v;
}

}  // namespace mixlab::cli
