// Writing a file the user named without ever destroying what was there by mistake: a run
// database, a device, a FIFO, a folder. Every file MixLab writes for the user (CSV, scripts,
// doctor reports, images) goes through here: write_file_atomically, or check_output_target
// first where a library (QSaveFile) does the writing.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

#include "engine/core/error.h"

namespace mixlab::store {

// Writes `file` with `write` through a temporary file created exclusively (O_EXCL, a random
// name) in the target's folder, renamed over the target once complete, so that a failed export
// never leaves half a file under the name asked for. `file` may be missing, a regular file (its
// permissions are kept), or a symbolic link to one of those (the link's target is written, the
// link kept). Throws OutputTargetError for a run database (check_output_target), and Error
// naming `file` for anything else it refuses (a folder, a device, a FIFO, a socket) or fails to
// write; either way everything is left as it was. An exception from `write` removes the
// temporary file and propagates.
void write_file_atomically(const std::filesystem::path& file,
                           const std::function<void(std::ostream&)>& write);

// An output file that would write over a run database: bad input (mixlab-cli exits 2), not a
// failure to write.
class OutputTargetError : public Error {
 public:
  using Error::Error;
};

// Marks `database` as a run database of this process (every file a Connection opens, and each
// --db given to mixlab-cli): for the rest of the process no output is written over it or over
// its -wal, -shm or -journal file, even once it is closed.
void protect_database(const std::filesystem::path& database);

// The one check of an output file against the run databases: throws OutputTargetError naming
// `file` and the database when writing `file` would write over a protected database, the
// default one (default_store_path), or one of their -wal, -shm or -journal files. Links are
// followed first; an existing target is compared by device and inode (a hard link is the same
// file), one not there yet by its resolved folder and name against the database's resolved
// side-file names.
void check_output_target(const std::filesystem::path& file);

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
