// Reads a dataset file that may be gzip-compressed (detected by content, as zlib's gzread does)
// in large chunks, turning every problem into a DatasetError that names the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace mixlab {

class FileReader {
 public:
  // Throws DatasetError if the file is missing or cannot be opened.
  explicit FileReader(const std::filesystem::path& path);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Reads up to `bytes` bytes into dst; fewer only at the end of the data. Throws DatasetError
  // for a read error or corrupt gzip data (including a gzip stream that ends early).
  std::size_t read(void* dst, std::size_t bytes);
  // Appends exactly `bytes` bytes to out, growing it as data arrives (a corrupt header that
  // claims terabytes fails as truncated, not as an allocation). Returns the bytes appended;
  // fewer than asked only at the end of the data.
  std::size_t append(std::vector<std::uint8_t>& out, std::size_t bytes);
  // Reads to the end and returns how many bytes were left (0 at the end of the data).
  std::uint64_t skip_rest();

  // True once a read found the gzip stream cut off before its end (a truncated .gz file).
  bool stream_truncated() const;
  const std::filesystem::path& path() const { return path_; }

 private:
  struct Gz;
  std::filesystem::path path_;
  std::unique_ptr<Gz> gz_;
};

// "<path>: <what>" as a DatasetError.
[[noreturn]] void throw_dataset_error(const std::filesystem::path& path, const std::string& what);

// Refuses, before anything is allocated, a file whose header (or size) promises more data than
// this process may hold (engine/core/memory_budget.h: MemAvailable, the cgroup's limit or the
// address-space limit): a DatasetError "<path>: <promise> needs 8.9 GiB in memory; 1.2 GiB are
// available (...)". A generated set passes its name ("synthetic:28x28x1:10:1000") as `path`.
void check_fits_in_memory(const std::filesystem::path& path, std::uint64_t bytes,
                          const std::string& promise);

}  // namespace mixlab
