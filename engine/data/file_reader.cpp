#include "engine/data/file_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"

namespace mixlab {

namespace {

// zlib's gzread takes an unsigned int and returns an int: read at most this much per call.
constexpr std::size_t kMaxChunkBytes = std::size_t{1} << 26;  // 64 MiB
// Input buffer for zlib; the default 8 KiB makes decompression of large files syscall-bound.
constexpr unsigned kGzBufferBytes = 1u << 20;

// strerror is not thread-safe; loads run on worker threads.
std::string errno_text(int err) {
  return std::error_code(err, std::generic_category()).message();
}

}  // namespace

struct FileReader::Gz {
  gzFile file = nullptr;
  bool stream_truncated = false;  // the gzip stream ended before its end marker
};

void throw_dataset_error(const std::filesystem::path& path, const std::string& what) {
  throw DatasetError(path.string() + ": " + what);
}

void check_fits_in_memory(const std::filesystem::path& path, std::uint64_t bytes,
                          const std::string& promise) {
  const MemoryBudget budget = memory_budget();
  if (!budget.refuses(bytes)) return;
  throw_dataset_error(path, promise + " needs " + format_memory(bytes) + " in memory; " +
                                format_memory(budget.bytes) + " are available (" + budget.source +
                                ")");
}

FileReader::FileReader(const std::filesystem::path& path)
    : path_(path), gz_(std::make_unique<Gz>()) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw_dataset_error(path, "file not found");
  if (!std::filesystem::is_regular_file(status)) throw_dataset_error(path, "not a regular file");
  errno = 0;  // gzopen leaves it unset when it runs out of memory
#ifdef _WIN32
  gz_->file = gzopen_w(path.c_str(), "rb");
#else
  gz_->file = gzopen(path.c_str(), "rb");
#endif
  if (gz_->file == nullptr) {
    const int err = errno;
    throw_dataset_error(
        path, "cannot open: " + (err != 0 ? errno_text(err) : std::string("out of memory")));
  }
  gzbuffer(gz_->file, kGzBufferBytes);
}

FileReader::~FileReader() {
  if (gz_->file != nullptr) gzclose(gz_->file);
}

std::size_t FileReader::read(void* dst, std::size_t bytes) {
  auto* out = static_cast<unsigned char*>(dst);
  std::size_t done = 0;
  while (done < bytes) {
    const auto want = static_cast<unsigned>(std::min(bytes - done, kMaxChunkBytes));
    const int got = gzread(gz_->file, out + done, want);
    if (got < 0) {
      int errnum = Z_OK;
      const char* message = gzerror(gz_->file, &errnum);
      if (errnum == Z_ERRNO)
        throw_dataset_error(path_, std::string("read error: ") + errno_text(errno));
      throw_dataset_error(path_, std::string("corrupt gzip data: ") + message);
    }
    done += static_cast<std::size_t>(got);
    if (static_cast<unsigned>(got) < want) {  // end of data: find out whether it ended cleanly
      int errnum = Z_OK;
      gzerror(gz_->file, &errnum);
      if (errnum == Z_BUF_ERROR) gz_->stream_truncated = true;
      break;
    }
  }
  return done;
}

std::size_t FileReader::append(std::vector<std::uint8_t>& out, std::size_t bytes) {
  const std::size_t start = out.size();
  std::size_t done = 0;
  while (done < bytes) {
    const std::size_t chunk = std::min(bytes - done, kMaxChunkBytes);
    out.resize(start + done + chunk);
    const std::size_t got = read(out.data() + start + done, chunk);
    done += got;
    if (got < chunk) break;
  }
  out.resize(start + done);
  return done;
}

std::uint64_t FileReader::skip_rest() {
  std::vector<unsigned char> scratch(std::size_t{1} << 16);
  std::uint64_t rest = 0;
  for (;;) {
    const std::size_t got = read(scratch.data(), scratch.size());
    rest += got;
    if (got < scratch.size()) break;
  }
  if (gz_->stream_truncated) {
    throw_dataset_error(path_, "corrupt gzip data: the compressed stream ends early");
  }
  return rest;
}

bool FileReader::stream_truncated() const {
  return gz_->stream_truncated;
}

}  // namespace mixlab
