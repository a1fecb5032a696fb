#include "engine/core/memory_budget.h"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

namespace mixlab {

namespace fs = std::filesystem;

namespace {

// A file's first word as a number; nullopt when missing or not a number ("max").
std::optional<std::uint64_t> read_number(const fs::path& file) {
  std::ifstream in(file);
  std::string word;
  if (!(in >> word)) return std::nullopt;
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || ptr != word.data() + word.size()) return std::nullopt;
  return value;
}

// "key value" lines (memory.stat, /proc/meminfo without the unit): the value of `key`.
std::optional<std::uint64_t> read_key(const fs::path& file, const std::string& key) {
  std::ifstream in(file);
  std::string k;
  std::uint64_t value = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    if (words >> k >> value && k == key) return value;
  }
  return std::nullopt;
}

struct Limit {
  std::uint64_t headroom;
  std::string source;
};

// The limit's headroom: limit - (usage - inactive file cache, which the kernel reclaims first).
Limit headroom(std::uint64_t limit, std::uint64_t usage, std::uint64_t reclaimable,
               const std::string& source) {
  const std::uint64_t used = usage > reclaimable ? usage - reclaimable : 0;
  return {limit > used ? limit - used : 0,
          source + " " + format_memory(limit) + ", " + format_memory(used) + " in use"};
}

// The tightest limit over the group `relative` and its ancestors, below `root`.
std::optional<Limit> tightest(const fs::path& root, std::string relative,
                              const char* limit_file, const char* usage_file,
                              const char* inactive_key, const char* source) {
  std::optional<Limit> best;
  for (;;) {
    const fs::path dir = root / relative.substr(relative.starts_with('/') ? 1 : 0);
    const auto limit = read_number(dir / limit_file);
    // cgroup v1 writes "no limit" as a page-rounded 2^63 - 1.
    if (limit && *limit < (std::uint64_t{1} << 62)) {
      const std::uint64_t usage = read_number(dir / usage_file).value_or(0);
      const std::uint64_t inactive = read_key(dir / "memory.stat", inactive_key).value_or(0);
      const Limit l = headroom(*limit, usage, inactive, source);
      if (!best || l.headroom < best->headroom) best = l;
    }
    if (relative.empty() || relative == "/") break;
    const auto slash = relative.find_last_of('/');
    relative = slash == std::string::npos ? "" : relative.substr(0, slash);
  }
  return best;
}

// The soft address-space limit (ulimit -v, prlimit --as: RLIMIT_AS) less what the process has
// mapped (VmSize): past it, allocations fail however much memory the machine has.
std::optional<Limit> address_space(const fs::path& proc_root) {
  std::ifstream limits(proc_root / "self" / "limits");
  std::string line;
  while (std::getline(limits, line)) {
    // "Max address space         unlimited            unlimited            bytes"
    if (!line.starts_with("Max address space")) continue;
    std::istringstream words(line.substr(17));
    std::string soft;
    std::uint64_t limit = 0;
    if (!(words >> soft)) return std::nullopt;
    const auto [ptr, ec] = std::from_chars(soft.data(), soft.data() + soft.size(), limit);
    if (ec != std::errc() || ptr != soft.data() + soft.size()) return std::nullopt;  // unlimited
    const std::uint64_t mapped =
        read_key(proc_root / "self" / "status", "VmSize:").value_or(0) * 1024;
    return Limit{limit > mapped ? limit - mapped : 0,
                 "the process's address-space limit (ulimit -v) " + format_memory(limit) + ", " +
                     format_memory(mapped) + " mapped"};
  }
  return std::nullopt;
}

}  // namespace

std::string format_memory(std::uint64_t bytes) {
  char text[32];
  const double mib = static_cast<double>(bytes) / (1 << 20);
  if (mib >= 10 * 1024.0) {
    std::snprintf(text, sizeof text, "%.1f GiB", mib / 1024);
  } else {
    std::snprintf(text, sizeof text, "%.1f MiB", mib);
  }
  return text;
}

MemoryBudget memory_budget(const fs::path& proc_root, const fs::path& cgroup_root) {
  MemoryBudget budget;
  if (const auto kib = read_key(proc_root / "meminfo", "MemAvailable:")) {
    budget.bytes = *kib * 1024;
    budget.source = "the machine's available memory (MemAvailable " + format_memory(budget.bytes) + ")";
  }
  std::ifstream groups(proc_root / "self" / "cgroup");
  std::string line;
  while (std::getline(groups, line)) {
    // "0::/user.slice/..." (v2) or "4:memory:/docker/..." (v1)
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    std::optional<Limit> limit;
    if (line.starts_with("0::")) {
      limit = tightest(cgroup_root, path, "memory.max", "memory.current", "inactive_file",
                       "the cgroup's memory.max");
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      limit = tightest(cgroup_root / "memory", path, "memory.limit_in_bytes",
                       "memory.usage_in_bytes", "total_inactive_file",
                       "the cgroup's memory.limit_in_bytes");
    }
    if (limit && (!budget.known() || limit->headroom < budget.bytes)) {
      budget.bytes = limit->headroom;
      budget.source = limit->source;
    }
  }
  if (const auto limit = address_space(proc_root);
      limit && (!budget.known() || limit->headroom < budget.bytes)) {
    budget.bytes = limit->headroom;
    budget.source = limit->source;
  }
  return budget;
}

}  // namespace mixlab
