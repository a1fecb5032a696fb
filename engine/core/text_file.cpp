#include "engine/core/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <system_error>

namespace mixlab {

namespace {

// strerror is not thread-safe; files are read on worker threads too.
std::string errno_text(int err) {
  return std::error_code(err, std::generic_category()).message();
}

// What a file that is not a regular one is, for the error.
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "it is a directory";
  if (S_ISFIFO(mode)) return "not a regular file (a FIFO)";
  if (S_ISCHR(mode)) return "not a regular file (a character device)";
  if (S_ISBLK(mode)) return "not a regular file (a block device)";
  if (S_ISSOCK(mode)) return "not a regular file (a socket)";
  return "not a regular file";
}

// "16 MiB", "16.5 MiB", "64 KiB", "100 bytes"
std::string size_text(std::uintmax_t bytes) {
  constexpr std::uintmax_t kKiB = 1024, kMiB = kKiB * 1024;
  if (bytes >= kMiB && bytes % kMiB != 0) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / kMiB);
    return text;
  }
  if (bytes >= kMiB) return std::to_string(bytes / kMiB) + " MiB";
  if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + " KiB";
  return std::to_string(bytes) + " bytes";
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

TextFileRead try_read_text_file(const std::filesystem::path& path, const TextFileKind& kind) {
  TextFileRead out;
  const std::string name = path.string();
  const std::string what(kind.what);
  // O_NONBLOCK: opening a FIFO with no writer returns at once (fstat then refuses it), as does
  // a device that would wait for a carrier.
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    out.missing = err == ENOENT;
    out.problem = name + ": cannot open " + what + ": " + errno_text(err);
    return out;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    out.problem = name + ": cannot read " + what + ": " + errno_text(errno);
    return out;
  }
  if (!S_ISREG(st.st_mode)) {
    out.problem = name + ": cannot read " + what + ": " + kind_of(st.st_mode);
    return out;
  }
  const auto size = static_cast<std::uintmax_t>(st.st_size);
  const auto too_large = [&](const std::string& found) {
    out.text.clear();
    out.problem = name + ": the " + what + " is " + found + "; a " + what + " is at most " +
                  size_text(kind.max_bytes) + std::string(kind.size_why);
  };
  if (size > kind.max_bytes) {
    too_large(size_text(size));
    return out;
  }
  // Regular files never block; reads go on to the end even if the file grows, up to the cap.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  out.text.reserve(static_cast<std::size_t>(size) + 1);
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      out.text.clear();
      out.problem = name + ": cannot read " + what + ": " + errno_text(err);
      return out;
    }
    if (got == 0) break;
    out.text.append(buffer, static_cast<std::size_t>(got));
    if (out.text.size() > kind.max_bytes) {
      too_large("over " + size_text(kind.max_bytes) + " (it grew while being read)");
      return out;
    }
  }
  return out;
}

}  // namespace mixlab
