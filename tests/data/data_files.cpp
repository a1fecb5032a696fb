#include "tests/data/data_files.h"

#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace mixlab::test {

namespace fs = std::filesystem;

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string test = info != nullptr ? info->name() : "none";
  path_ = fs::temp_directory_path() / ("mixlab-data-" + std::to_string(::getpid()) + "-" +
                                       std::to_string(counter++) + "-" + test);
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void write_file(const fs::path& path, const Bytes& bytes, Compression compression) {
  if (compression == Compression::gzip) {
    gzFile gz = gzopen(path.c_str(), "wb");
    if (gz == nullptr) throw std::runtime_error("gzopen failed: " + path.string());
    const int written =
        bytes.empty() ? 0 : gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
    const int closed = gzclose(gz);
    if (written != static_cast<int>(bytes.size()) || closed != Z_OK) {
      throw std::runtime_error("gzwrite failed: " + path.string());
    }
    return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("write failed: " + path.string());
}

Bytes read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

namespace {

void put32(Bytes& bytes, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    bytes.push_back(static_cast<std::uint8_t>(value >> shift));
  }
}

}  // namespace

std::uint8_t idx_pixel(std::int64_t i, std::int64_t r, std::int64_t c) {
  return static_cast<std::uint8_t>((i * 7 + r * 3 + c * 5) % 256);
}

Bytes idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols, std::uint32_t magic) {
  Bytes bytes;
  put32(bytes, magic);
  put32(bytes, count);
  put32(bytes, rows);
  put32(bytes, cols);
  for (std::uint32_t i = 0; i < count; ++i) {
    for (std::uint32_t r = 0; r < rows; ++r) {
      for (std::uint32_t c = 0; c < cols; ++c) bytes.push_back(idx_pixel(i, r, c));
    }
  }
  return bytes;
}

Bytes idx_labels(std::uint32_t count, std::uint32_t magic) {
  Bytes bytes;
  put32(bytes, magic);
  put32(bytes, count);
  for (std::uint32_t i = 0; i < count; ++i) bytes.push_back(static_cast<std::uint8_t>(i % 10));
  return bytes;
}

void write_idx_set(const fs::path& dir, std::uint32_t count_train, std::uint32_t count_test,
                   Compression compression, std::uint32_t rows, std::uint32_t cols) {
  const std::string suffix = compression == Compression::gzip ? ".gz" : "";
  write_file(dir / ("train-images-idx3-ubyte" + suffix), idx_images(count_train, rows, cols),
             compression);
  write_file(dir / ("train-labels-idx1-ubyte" + suffix), idx_labels(count_train), compression);
  write_file(dir / ("t10k-images-idx3-ubyte" + suffix), idx_images(count_test, rows, cols),
             compression);
  write_file(dir / ("t10k-labels-idx1-ubyte" + suffix), idx_labels(count_test), compression);
}

std::uint8_t cifar_pixel(std::int64_t record, int c, int y, int x) {
  return static_cast<std::uint8_t>((record * 13 + c * 85 + y * 7 + x * 3) % 256);
}

int cifar_label(std::int64_t record, bool cifar100) {
  return static_cast<int>(record % (cifar100 ? 100 : 10));
}

Bytes cifar_records(int count, std::int64_t first, bool cifar100) {
  Bytes bytes;
  for (std::int64_t record = first; record < first + count; ++record) {
    if (cifar100) bytes.push_back(static_cast<std::uint8_t>(record % 20));
    bytes.push_back(static_cast<std::uint8_t>(cifar_label(record, cifar100)));
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) bytes.push_back(cifar_pixel(record, c, y, x));
      }
    }
  }
  return bytes;
}

::testing::AssertionResult contains_all(const std::string& text,
                                        const std::vector<std::string>& parts) {
  for (const std::string& part : parts) {
    if (text.find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace mixlab::test
