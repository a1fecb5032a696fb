// A small command-line parser: --name value, --name=value, --flag, positionals. Unknown options,
// missing values and malformed numbers are UsageErrors that name the option.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace mixlab::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // `options` take a value, `flags` do not (both without the leading "--").
  Args(const std::vector<std::string>& argv, const std::set<std::string>& options,
       const std::set<std::string>& flags);

  bool has(const std::string& name) const;
  std::optional<std::string> get(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  std::optional<std::int64_t> get_int(const std::string& name, std::int64_t min,
                                      std::int64_t max) const;
  std::optional<double> get_double(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positionals_;
};

}  // namespace mixlab::cli
