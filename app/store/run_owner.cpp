#include "app/store/run_owner.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "app/store/run_record.h"

namespace mixlab::store {

namespace {

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Field 22 of /proc/PID/stat; 0 when the process does not exist.
std::int64_t process_start_ticks(std::int64_t pid) {
  const std::string stat = read_first_line(("/proc/" + std::to_string(pid) + "/stat").c_str());
  const auto paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return std::strtoll(field.c_str(), nullptr, 10);
  }
  return 0;
}

}  // namespace

Owner this_process() {
  static const Owner owner = [] {
    Owner o;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    o.host = host;
    o.boot_id = read_first_line("/proc/sys/kernel/random/boot_id");
    o.pid = getpid();
    o.start_ticks = process_start_ticks(o.pid);
    return o;
  }();
  return owner;
}

std::string owner_gone(const Owner& owner, std::int64_t now_ms) {
  const Owner self = this_process();
  if (owner.host != self.host) {
    constexpr std::int64_t limit_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(kHeartbeatLimit).count();
    if (owner.heartbeat_at_ms == 0 || now_ms - owner.heartbeat_at_ms <= limit_ms) return {};
    return "no heartbeat from host " + owner.host + " since " + format_utc(owner.heartbeat_at_ms) +
           " (its process is taken to have ended after " + std::to_string(kHeartbeatLimit.count()) +
           " minutes without one)";
  }
  const bool same_process = owner.boot_id == self.boot_id && [&] {
    const std::int64_t ticks = process_start_ticks(owner.pid);
    return ticks != 0 && ticks == owner.start_ticks;
  }();
  if (same_process) return {};
  return "the process recording it (pid " + std::to_string(owner.pid) + " on " + owner.host +
         ") ended before the run did";
}

bool owner_alive(const Owner& owner) {
  return owner_gone(owner, now_utc_ms()).empty();
}

}  // namespace mixlab::store
