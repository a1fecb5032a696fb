#include "app/store/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <streambuf>
#include <vector>

#include "app/store/run_store.h"
#include "engine/core/error.h"

namespace mixlab::store {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

// An output buffer over a file descriptor it does not own; a failed write() sets failed().
class FdBuffer : public std::streambuf {
 public:
  explicit FdBuffer(int fd) : fd_(fd) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  bool failed() const { return error_ != 0; }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!flush_buffer()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return flush_buffer() ? 0 : -1; }

 private:
  bool flush_buffer() {
    const char* data = pbase();
    std::size_t left = static_cast<std::size_t>(pptr() - pbase());
    while (left > 0 && error_ == 0) {
      const ssize_t n = ::write(fd_, data, left);
      if (n < 0) {
        if (errno != EINTR) error_ = errno;
        continue;
      }
      data += n;
      left -= static_cast<std::size_t>(n);
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0;
  }

  int fd_;
  int error_ = 0;
  std::array<char, 1 << 16> buffer_{};
};

// The file a write to `file` lands in: `file` itself, or where its symbolic link(s) point.
fs::path write_target(const fs::path& file) {
  fs::path target = file;
  for (int hops = 0; hops < 40; ++hops) {  // the kernel's own bound on a chain of links
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(target, ec))) return target;
    const fs::path next = fs::read_symlink(target, ec);
    if (ec) {
      throw Error("cannot write " + file.string() + ": cannot follow its link: " + ec.message());
    }
    // A relative link is relative to the folder the link is in; it may point at nothing yet.
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  throw Error("cannot write " + file.string() + ": too many levels of symbolic links");
}

// The run databases this process has opened or been given (protect_database), absolute.
std::mutex protected_mutex;
std::vector<fs::path>& protected_databases() {
  static std::vector<fs::path> paths;
  return paths;
}

// The databases no output may be written over: those protected and the default one.
std::vector<fs::path> databases_to_spare() {
  std::vector<fs::path> databases;
  {
    const std::lock_guard lock(protected_mutex);
    databases = protected_databases();
  }
  databases.push_back(default_store_path());
  return databases;
}

}  // namespace

bool same_file(const fs::path& a, const fs::path& b) {
  struct stat sa {};
  struct stat sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void protect_database(const fs::path& database) {
  if (database.empty()) return;
  std::error_code ec;
  fs::path absolute = fs::absolute(database, ec);  // a later chdir must not change what it names
  if (ec) absolute = database;
  const std::lock_guard lock(protected_mutex);
  std::vector<fs::path>& paths = protected_databases();
  if (std::find(paths.begin(), paths.end(), absolute) == paths.end()) paths.push_back(absolute);
}

void check_output_target(const fs::path& file) {
  const fs::path target = write_target(file);
  struct stat existing {};
  const bool exists = ::stat(target.c_str(), &existing) == 0;
  std::error_code ec;
  fs::path resolved;  // a target not there yet: its folder with links and ".." resolved, its name
  if (!exists) {
    resolved = fs::canonical(target.has_parent_path() ? target.parent_path() : fs::path("."), ec);
    if (ec) return;  // no such folder: nothing can be written there
    resolved /= target.filename();
  }
  for (const fs::path& database : databases_to_spare()) {
    // SQLite keeps the side files beside the database's real file, links resolved.
    const fs::path real = fs::weakly_canonical(fs::absolute(database, ec), ec);
    if (ec) continue;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      const fs::path side = real.string() + suffix;
      if (exists ? !same_file(target, side) : resolved != side) continue;
      throw OutputTargetError(
          "refusing to write " + file.string() + ": it is " +
          (*suffix == '\0' ? "the run database " + database.string()
                           : side.string() + ", a file of the run database " + database.string()) +
          " - choose another output file");
    }
  }
}

TempFile create_temp_beside(const fs::path& target) {
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::random_device entropy;
  std::mt19937_64 rng((static_cast<std::uint64_t>(entropy()) << 32) ^ entropy() ^
                      static_cast<std::uint64_t>(::getpid()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    char suffix[17];
    std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(rng()));
    std::string name(1, '.');
    name += target.filename().string();
    name += '.';
    name += suffix;
    fs::path path = folder / name;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return {fd, std::move(path)};
    if (errno != EEXIST) {
      throw Error("cannot write " + target.string() + ": cannot create a file in " +
                  folder.string() + ": " + errno_text(errno));
    }
  }
  throw Error("cannot write " + target.string() + ": no free temporary name in " + folder.string());
}

void write_file_atomically(const fs::path& file, const std::function<void(std::ostream&)>& write) {
  if (file.empty()) throw Error("cannot write a file with an empty name");
  check_output_target(file);
  const fs::path target = write_target(file);
  struct stat existing {};
  const bool exists = ::stat(target.c_str(), &existing) == 0;
  if (exists) {
    if (!S_ISREG(existing.st_mode)) {
      const char* kind = S_ISDIR(existing.st_mode)    ? "a folder"
                         : S_ISFIFO(existing.st_mode) ? "a FIFO"
                         : S_ISCHR(existing.st_mode) || S_ISBLK(existing.st_mode) ? "a device"
                         : S_ISSOCK(existing.st_mode)                              ? "a socket"
                                                                                   : "not a regular file";
      throw Error("refusing to write " + file.string() + ": it is " + kind +
                  ", not a regular file");
    }
  }
  TempFile tmp = create_temp_beside(target);
  const auto fail = [&](const std::string& why) {
    ::close(tmp.fd);
    ::unlink(tmp.path.c_str());
    throw Error("cannot write " + file.string() + ": " + why);
  };
  if (exists) ::fchmod(tmp.fd, existing.st_mode & 07777);
  FdBuffer buffer(tmp.fd);
  std::ostream out(&buffer);
  try {
    write(out);
  } catch (...) {
    ::close(tmp.fd);
    ::unlink(tmp.path.c_str());
    throw;
  }
  out.flush();
  if (buffer.failed()) {
    fail(buffer.error() == ENOSPC ? "the disk is full" : errno_text(buffer.error()));
  }
  if (!out) fail("the output stream failed");
  if (::fsync(tmp.fd) != 0 && errno != EINVAL) fail(errno_text(errno));
  if (::close(tmp.fd) != 0) {
    tmp.fd = -1;
    ::unlink(tmp.path.c_str());
    throw Error("cannot write " + file.string() + ": " + errno_text(errno));
  }
  if (::rename(tmp.path.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.path.c_str());
    throw Error("cannot write " + file.string() + ": " + errno_text(err));
  }
}

}  // namespace mixlab::store
