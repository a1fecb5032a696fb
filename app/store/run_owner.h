// The process that records a run, to tell a run still running from one whose process ended
// (RunStore::mark_interrupted_runs): host, boot, pid and the process's start time.
#pragma once

#include <cstdint>
#include <string>

namespace mixlab::store {

struct Owner {
  std::string host;
  std::string boot_id;
  std::int64_t pid = 0;
  std::int64_t start_ticks = 0;  // the process's start time, in clock ticks since boot
};

// This process, read once.
Owner this_process();
// False only when the owner has certainly ended: same host, and a different boot or no such
// process (or another process reusing its pid). A run recorded on another host is left alone.
bool owner_alive(const Owner& owner);

}  // namespace mixlab::store
