// Writing a file the user named without ever destroying what was there by mistake: the run
// database, a device, a FIFO, a folder. Exports (CSV, doctor reports) go through here.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

namespace mixlab::store {

// Writes `file` with `write` through a temporary file created exclusively (O_EXCL, a random
// name) in the target's folder, renamed over the target once complete, so that a failed export
// never leaves half a file under the name asked for. `file` may be missing, a regular file (its
// permissions are kept), or a symbolic link to one of those (the link's target is written, the
// link kept). Throws Error naming `file`, leaving everything as it was, for anything else (a
// folder, a device, a FIFO, a socket) and for a file that is an SQLite database this process has
// open, or its -wal/-shm/-journal (compared by device and inode, not by name). An exception from
// `write` removes the temporary file and propagates.
void write_file_atomically(const std::filesystem::path& file,
                           const std::function<void(std::ostream&)>& write);

// A new, empty file created with O_CREAT | O_EXCL beside `target` (same folder), named
// ".<target name>.<random>"; mode 0666 less the umask. Throws Error naming `target`.
struct TempFile {
  int fd = -1;
  std::filesystem::path path;
};
TempFile create_temp_beside(const std::filesystem::path& target);

// True when both paths exist and are the same file (device and inode).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace mixlab::store
