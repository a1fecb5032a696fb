// Helpers for the data tests: a temporary directory and writers for small IDX and CIFAR files
// (plain or gzip) with pixel values that tell where each pixel came from.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace mixlab::test {

using Bytes = std::vector<std::uint8_t>;

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

enum class Compression : std::uint8_t { none, gzip };

void write_file(const std::filesystem::path& path, const Bytes& bytes,
                Compression compression = Compression::none);
Bytes read_file(const std::filesystem::path& path);

// The pixel value an IDX test file holds for image i, row r, column c.
std::uint8_t idx_pixel(std::int64_t i, std::int64_t r, std::int64_t c);
// An IDX image file: magic 0x00000803, count, rows, cols, then idx_pixel values.
Bytes idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                 std::uint32_t magic = 0x00000803);
// An IDX label file: magic 0x00000801, count, then label i = i % 10.
Bytes idx_labels(std::uint32_t count, std::uint32_t magic = 0x00000801);
// Writes the four MNIST files (count_train / count_test images of rows x cols) into dir.
void write_idx_set(const std::filesystem::path& dir, std::uint32_t count_train,
                   std::uint32_t count_test, Compression compression, std::uint32_t rows = 28,
                   std::uint32_t cols = 28);

// The value a CIFAR test file holds for record `record` (counted over the file's split),
// channel c (0 red, 1 green, 2 blue), row y, column x.
std::uint8_t cifar_pixel(std::int64_t record, int c, int y, int x);
// `count` CIFAR records starting at record number `first`: label bytes (CIFAR-100: coarse
// label % 20, then the fine label) followed by the red, green and blue planes.
Bytes cifar_records(int count, std::int64_t first, bool cifar100);
// The label written for a record: record % 10 (CIFAR-10) or record % 100 (CIFAR-100, fine).
int cifar_label(std::int64_t record, bool cifar100);

// The message of the E that f throws; a test failure (and "") when it throws nothing.
template <typename E, typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

// Checks that `text` contains every one of `parts`.
::testing::AssertionResult contains_all(const std::string& text,
                                        const std::vector<std::string>& parts);

}  // namespace mixlab::test
