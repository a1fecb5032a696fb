// The process that records a run, to tell a run still running from one whose process ended
// (RunStore::mark_interrupted_runs): host, boot, pid, the process's start time and its last
// heartbeat.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace mixlab::store {

// A process recording runs writes the time into their rows' heartbeat_at_ms every
// kHeartbeatInterval (StoreWriter, on its own thread: a long step or an evaluation does not
// delay it). A run recorded on another host whose heartbeat is older than kHeartbeatLimit is
// taken as ended: the limit leaves room for a busy shared folder and clocks minutes apart.
inline constexpr std::chrono::seconds kHeartbeatInterval{30};
inline constexpr std::chrono::minutes kHeartbeatLimit{10};

struct Owner {
  std::string host;
  std::string boot_id;
  std::int64_t pid = 0;
  std::int64_t start_ticks = 0;      // the process's start time, in clock ticks since boot
  std::int64_t heartbeat_at_ms = 0;  // its last heartbeat, UTC ms; 0: none known (older store)
};

// This process, read once (without a heartbeat).
Owner this_process();
// Why the owner has certainly ended, in words ("the process recording it (pid 12 on node-3)
// ended before the run did"), or empty while it may still be alive. On this host: a different
// boot, or no such process (or another process reusing its pid). On another host the process
// cannot be checked, only its heartbeat: none since more than kHeartbeatLimit before `now_ms`
// ends it; an owner with no heartbeat known is left alone.
std::string owner_gone(const Owner& owner, std::int64_t now_ms);
bool owner_alive(const Owner& owner);  // owner_gone(owner, now) is empty

}  // namespace mixlab::store
