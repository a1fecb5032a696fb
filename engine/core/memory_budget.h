// How much memory this process may still take before the kernel kills it: the host's
// MemAvailable, and in a container or a systemd slice the cgroup's memory limit less what the
// group already uses (cgroup v2 memory.max, or v1 memory.limit_in_bytes, on this group and every
// group above it), and under an address-space limit (ulimit -v, RLIMIT_AS) that limit less what
// the process has mapped. The memory pre-checks (the CPU arena, the dataset loaders) refuse by this
// figure with a named error rather than being OOM-killed with exit 137 and no word.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace mixlab {

struct MemoryBudget {
  std::uint64_t bytes = 0;
  std::string source;  // what bounds it, for messages; empty when unknown (then refuse nothing)
  bool known() const { return !source.empty(); }
  // True when `need` bytes are known not to fit.
  bool refuses(std::uint64_t need) const { return known() && need > bytes; }
};

// Reads /proc/meminfo, /proc/self/{cgroup,limits,status} and the cgroup files under `cgroup_root`;
// the roots are parameters for tests (a made-up tree), defaulting to the real ones.
MemoryBudget memory_budget(const std::filesystem::path& proc_root = "/proc",
                           const std::filesystem::path& cgroup_root = "/sys/fs/cgroup");

// "123.4 MiB", "12.0 GiB"
std::string format_memory(std::uint64_t bytes);

}  // namespace mixlab
