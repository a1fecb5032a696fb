// MNIST / Fashion-MNIST in the IDX format: big-endian 32-bit header words (magic, counts,
// dimensions), then unsigned bytes. Files may be gzip-compressed; every size is checked exactly.
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/data/file_reader.h"
#include "engine/data/loaders.h"

namespace mixlab {

namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned bytes, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned bytes, 1 dimension
constexpr std::uint32_t kMaxSide = 4096;            // rows and columns
constexpr int kClasses = 10;

std::string hex32(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

template <std::size_t N>
std::array<std::uint32_t, N> read_header(FileReader& in) {
  std::array<std::uint8_t, 4 * N> bytes{};
  const std::size_t got = in.read(bytes.data(), bytes.size());
  if (got < bytes.size()) {
    throw_dataset_error(in.path(), "truncated: expected a " + std::to_string(bytes.size()) +
                                       "-byte IDX header, found " + std::to_string(got) + " bytes");
  }
  std::array<std::uint32_t, N> words{};
  for (std::size_t i = 0; i < N; ++i) {
    const std::uint8_t* p = bytes.data() + 4 * i;
    words[i] = std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 |
               std::uint32_t{p[3]};
  }
  return words;
}

void check_magic(const FileReader& in, std::uint32_t found, std::uint32_t expected,
                 const char* kind) {
  if (found == expected) return;
  std::string what =
      "bad magic: expected " + hex32(expected) + " (IDX " + kind + "), found " + hex32(found);
  if (found == kImagesMagic) what += " (an image file)";
  if (found == kLabelsMagic) what += " (a label file)";
  throw_dataset_error(in.path(), what);
}

// Reads `payload` bytes after a header of `header_bytes`, then checks that nothing follows.
void read_payload(FileReader& in, std::vector<std::uint8_t>& out, std::uint64_t header_bytes,
                  std::uint64_t payload) {
  const std::uint64_t expected = header_bytes + payload;
  const std::size_t got = in.append(out, payload);
  if (got < payload) {
    throw_dataset_error(in.path(),
                        "truncated: expected " + std::to_string(expected) + " bytes, found " +
                            std::to_string(header_bytes + got) +
                            (in.stream_truncated() ? " (the gzip stream ends early)" : ""));
  }
  const std::uint64_t rest = in.skip_rest();
  if (rest != 0) {
    throw_dataset_error(in.path(), "trailing data: expected " + std::to_string(expected) +
                                       " bytes, found " + std::to_string(expected + rest));
  }
}

struct IdxImages {
  std::uint32_t count = 0;
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;
  std::vector<std::uint8_t> pixels;  // (count, rows, cols)
};

IdxImages read_images(const fs::path& path) {
  FileReader in(path);
  const auto [magic, count, rows, cols] = read_header<4>(in);
  check_magic(in, magic, kImagesMagic, "images: unsigned bytes, 3 dimensions");
  if (rows < 1 || rows > kMaxSide || cols < 1 || cols > kMaxSide) {
    throw_dataset_error(path, "bad dimensions: expected rows and columns in 1.." +
                                  std::to_string(kMaxSide) + ", found " + std::to_string(rows) +
                                  "x" + std::to_string(cols));
  }
  if (count == 0) throw_dataset_error(path, "empty: the header gives 0 images");
  IdxImages images{count, rows, cols, {}};
  const std::uint64_t payload = std::uint64_t{count} * rows * cols;
  check_fits_in_memory(path, payload,
                       "the header's " + std::to_string(count) + " images of " +
                           std::to_string(rows) + "x" + std::to_string(cols));
  read_payload(in, images.pixels, 16, payload);
  return images;
}

std::vector<std::int32_t> read_labels(const fs::path& path) {
  FileReader in(path);
  const auto [magic, count] = read_header<2>(in);
  check_magic(in, magic, kLabelsMagic, "labels: unsigned bytes, 1 dimension");
  std::vector<std::uint8_t> bytes;
  check_fits_in_memory(path, std::uint64_t{count} * (1 + sizeof(std::int32_t)),
                       "the header's " + std::to_string(count) + " labels");
  read_payload(in, bytes, 8, count);
  std::vector<std::int32_t> labels(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] >= kClasses) {
      throw_dataset_error(path, "label out of range at index " + std::to_string(i) +
                                    ": expected 0.." + std::to_string(kClasses - 1) + ", found " +
                                    std::to_string(bytes[i]));
    }
    labels[i] = bytes[i];
  }
  return labels;
}

// dir/base or dir/base.gz, whichever exists (the plain file first).
fs::path find_idx_file(const fs::path& dir, const std::string& base) {
  const fs::path plain = dir / base;
  const fs::path gz = dir / (base + ".gz");
  std::error_code ec;
  if (fs::exists(plain, ec)) return plain;
  if (fs::exists(gz, ec)) return gz;
  throw_dataset_error(plain,
                      "not found (looked for " + plain.string() + " and " + gz.string() + ")");
}

}  // namespace

Dataset load_idx_split(const fs::path& images_path, const fs::path& labels_path, std::string name) {
  IdxImages images = read_images(images_path);
  std::vector<std::int32_t> labels = read_labels(labels_path);
  if (labels.size() != images.count) {
    throw_dataset_error(labels_path, "count mismatch: expected " + std::to_string(images.count) +
                                         " labels (the images in " + images_path.string() +
                                         "), found " + std::to_string(labels.size()));
  }
  Dataset dataset;
  dataset.name = std::move(name);
  dataset.sample_shape = {images.rows, images.cols, 1};
  dataset.num_classes = kClasses;
  dataset.images = std::move(images.pixels);
  dataset.labels = std::move(labels);
  return dataset;
}

DatasetPair load_idx_dataset(const fs::path& dir, std::string_view kind) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw DatasetError(dir.string() + ": " + std::string(kind) +
                       " directory not found (expected train-images-idx3-ubyte, "
                       "train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
                       "t10k-labels-idx1-ubyte, each plain or .gz)");
  }
  const fs::path train_images = find_idx_file(dir, "train-images-idx3-ubyte");
  const fs::path train_labels = find_idx_file(dir, "train-labels-idx1-ubyte");
  const fs::path test_images = find_idx_file(dir, "t10k-images-idx3-ubyte");
  const fs::path test_labels = find_idx_file(dir, "t10k-labels-idx1-ubyte");
  DatasetPair pair;
  pair.train = load_idx_split(train_images, train_labels, std::string(kind) + "/train");
  pair.test = load_idx_split(test_images, test_labels, std::string(kind) + "/test");
  if (pair.test.sample_shape != pair.train.sample_shape) {
    const auto side = [](const Shape& s) {
      return std::to_string(s[0]) + "x" + std::to_string(s[1]);
    };
    throw_dataset_error(
        test_images, "image size mismatch: expected " + side(pair.train.sample_shape) + " (as in " +
                         train_images.string() + "), found " + side(pair.test.sample_shape));
  }
  return pair;
}

}  // namespace mixlab
