// IDX (MNIST / Fashion-MNIST) loading: valid files, plain and gzip, and every way a file can be
// wrong.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/data/loaders.h"
#include "tests/data/data_files.h"

namespace mixlab {
namespace {

namespace fs = std::filesystem;
using test::Bytes;
using test::Compression;
using test::contains_all;
using test::error_message;
using test::TempDir;

void expect_valid_split(const Dataset& dataset, std::uint32_t count, std::uint32_t rows,
                        std::uint32_t cols) {
  ASSERT_EQ(dataset.size(), count);
  EXPECT_EQ(dataset.sample_shape, (Shape{rows, cols, 1}));
  EXPECT_EQ(dataset.num_classes, 10);
  ASSERT_EQ(dataset.images.size(), std::size_t{count} * rows * cols);
  for (std::uint32_t i = 0; i < count; ++i) {
    EXPECT_EQ(dataset.labels[i], static_cast<int>(i % 10));
    for (std::uint32_t r = 0; r < rows; ++r) {
      for (std::uint32_t c = 0; c < cols; ++c) {
        ASSERT_EQ(dataset.images[(std::size_t{i} * rows + r) * cols + c], test::idx_pixel(i, r, c))
            << "image " << i << " row " << r << " col " << c;
      }
    }
  }
}

class IdxFormats : public ::testing::TestWithParam<Compression> {};

TEST_P(IdxFormats, LoadsBothSplitsWithPixelsInPlace) {
  TempDir dir;
  test::write_idx_set(dir.path(), 25, 7, GetParam(), 5, 3);  // non-square: rows vs cols
  const DatasetPair pair = load_idx_dataset(dir.path(), "mnist");
  EXPECT_EQ(pair.train.name, "mnist/train");
  EXPECT_EQ(pair.test.name, "mnist/test");
  expect_valid_split(pair.train, 25, 5, 3);
  expect_valid_split(pair.test, 7, 5, 3);
}

INSTANTIATE_TEST_SUITE_P(Data, IdxFormats, ::testing::Values(Compression::none, Compression::gzip),
                         [](const auto& info) {
                           return info.param == Compression::gzip ? "Gzip" : "Plain";
                         });

TEST(Idx, GzipDetectedByContentNotName) {
  TempDir dir;
  // Compressed data under the plain name, and plain data under the .gz name.
  test::write_file(dir / "images", test::idx_images(4, 28, 28), Compression::gzip);
  test::write_file(dir / "labels.gz", test::idx_labels(4), Compression::none);
  const Dataset dataset = load_idx_split(dir / "images", dir / "labels.gz", "x");
  expect_valid_split(dataset, 4, 28, 28);
}

TEST(Idx, MixedPlainAndGzipFilesInOneDirectory) {
  TempDir dir;
  test::write_idx_set(dir.path(), 3, 2, Compression::none);
  fs::remove(dir / "t10k-images-idx3-ubyte");
  test::write_file(dir / "t10k-images-idx3-ubyte.gz", test::idx_images(2, 28, 28),
                   Compression::gzip);
  const DatasetPair pair = load_idx_dataset(dir.path(), "fashion-mnist");
  EXPECT_EQ(pair.train.name, "fashion-mnist/train");
  expect_valid_split(pair.test, 2, 28, 28);
}

TEST(Idx, LoadsThroughLoadDataset) {
  TempDir dir;
  test::write_idx_set(dir.path(), 10, 5, Compression::gzip);
  const DatasetPair pair = load_dataset(parse_dataset_spec("mnist:" + dir.path().string()));
  expect_valid_split(pair.train, 10, 28, 28);
  expect_valid_split(pair.test, 5, 28, 28);
}

class IdxErrors : public ::testing::TestWithParam<Compression> {
 protected:
  // Writes a valid set, then replaces one file with `bytes`; returns that file's path.
  fs::path replace(const std::string& base, const Bytes& bytes) {
    const bool gz = GetParam() == Compression::gzip;
    test::write_idx_set(dir_.path(), 20, 10, GetParam());
    const fs::path path = dir_ / (base + (gz ? ".gz" : ""));
    test::write_file(path, bytes, GetParam());
    return path;
  }
  std::string load_error() {
    return error_message<DatasetError>([&] { load_idx_dataset(dir_.path(), "mnist"); });
  }
  TempDir dir_;
};

TEST_P(IdxErrors, TruncatedImages) {
  Bytes bytes = test::idx_images(20, 28, 28);
  bytes.resize(1000);
  const fs::path path = replace("train-images-idx3-ubyte", bytes);
  EXPECT_TRUE(
      contains_all(load_error(), {path.string(), "truncated: expected 15696 bytes, found 1000"}));
}

TEST_P(IdxErrors, TruncatedHeader) {
  const fs::path path = replace("t10k-labels-idx1-ubyte", Bytes{0, 0, 8});
  EXPECT_TRUE(contains_all(load_error(),
                           {path.string(), "truncated: expected a 8-byte IDX header, found 3"}));
}

TEST_P(IdxErrors, EmptyFile) {
  const fs::path path = replace("train-labels-idx1-ubyte", Bytes{});
  EXPECT_TRUE(contains_all(load_error(), {path.string(), "truncated", "found 0 bytes"}));
}

TEST_P(IdxErrors, TrailingBytes) {
  Bytes bytes = test::idx_labels(20);
  bytes.insert(bytes.end(), {1, 2, 3});
  const fs::path path = replace("train-labels-idx1-ubyte", bytes);
  EXPECT_TRUE(
      contains_all(load_error(), {path.string(), "trailing data: expected 28 bytes, found 31"}));
}

TEST_P(IdxErrors, BadImageMagic) {
  const fs::path path =
      replace("train-images-idx3-ubyte", test::idx_images(20, 28, 28, 0x00000802));
  EXPECT_TRUE(contains_all(load_error(),
                           {path.string(), "bad magic: expected 0x00000803", "found 0x00000802"}));
}

TEST_P(IdxErrors, LabelFileGivenForImages) {
  const fs::path path = replace("t10k-images-idx3-ubyte", test::idx_labels(10));
  EXPECT_TRUE(contains_all(load_error(), {path.string(), "bad magic: expected 0x00000803",
                                          "found 0x00000801 (a label file)"}));
}

TEST_P(IdxErrors, BadLabelMagic) {
  const fs::path path = replace("t10k-labels-idx1-ubyte", test::idx_labels(10, 0x08010000));
  EXPECT_TRUE(contains_all(load_error(),
                           {path.string(), "bad magic: expected 0x00000801", "found 0x08010000"}));
}

TEST_P(IdxErrors, ZeroRows) {
  const fs::path path = replace("train-images-idx3-ubyte", test::idx_images(20, 0, 28));
  EXPECT_TRUE(contains_all(load_error(), {path.string(), "bad dimensions", "found 0x28"}));
}

TEST_P(IdxErrors, HugeDimensionsFailWithoutHugeAllocation) {
  const fs::path path = replace("train-images-idx3-ubyte", test::idx_images(0, 4000, 4000));
  // 0 images of 4000x4000 passes the dimension check but is empty.
  EXPECT_TRUE(contains_all(load_error(), {path.string(), "empty"}));
  Bytes bytes = test::idx_images(1, 28, 28);
  bytes[4] = 0x7f;  // count 0x7f000001 images of 28x28: 1.6 TB claimed, 800 bytes present
  test::write_file(path, bytes, GetParam());
  // Refused by what the header promises against the memory there is, before reading (a gzip
  // bomb would deliver it).
  EXPECT_TRUE(contains_all(load_error(), {path.string(), "2130706433 images of 28x28",
                                          "GiB in memory", "are available"}));
}

TEST_P(IdxErrors, TestImagesOfAnotherSize) {
  const fs::path path = replace("t10k-images-idx3-ubyte", test::idx_images(10, 32, 32));
  EXPECT_TRUE(contains_all(load_error(),
                           {path.string(), "image size mismatch: expected 28x28", "found 32x32"}));
}

TEST_P(IdxErrors, CountMismatch) {
  const fs::path path = replace("train-labels-idx1-ubyte", test::idx_labels(19));
  EXPECT_TRUE(contains_all(load_error(),
                           {path.string(), "count mismatch: expected 20 labels", "found 19"}));
}

TEST_P(IdxErrors, LabelOutOfRange) {
  Bytes bytes = test::idx_labels(20);
  bytes[8 + 13] = 10;
  const fs::path path = replace("train-labels-idx1-ubyte", bytes);
  EXPECT_TRUE(contains_all(
      load_error(), {path.string(), "label out of range at index 13", "expected 0..9, found 10"}));
}

INSTANTIATE_TEST_SUITE_P(Data, IdxErrors, ::testing::Values(Compression::none, Compression::gzip),
                         [](const auto& info) {
                           return info.param == Compression::gzip ? "Gzip" : "Plain";
                         });

TEST(Idx, MissingFileListsTheNamesLookedFor) {
  TempDir dir;
  test::write_idx_set(dir.path(), 3, 2, Compression::gzip);
  fs::remove(dir / "t10k-labels-idx1-ubyte.gz");
  const std::string message =
      error_message<DatasetError>([&] { load_idx_dataset(dir.path(), "mnist"); });
  EXPECT_TRUE(contains_all(message, {(dir / "t10k-labels-idx1-ubyte").string(),
                                     (dir / "t10k-labels-idx1-ubyte.gz").string(), "not found"}));
}

TEST(Idx, MissingDirectory) {
  TempDir dir;
  const std::string message =
      error_message<DatasetError>([&] { load_idx_dataset(dir / "nope", "mnist"); });
  EXPECT_TRUE(
      contains_all(message, {(dir / "nope").string(), "not found", "train-images-idx3-ubyte"}));
}

TEST(Idx, CorruptGzipBody) {
  TempDir dir;
  test::write_idx_set(dir.path(), 50, 10, Compression::gzip);
  const fs::path path = dir / "train-images-idx3-ubyte.gz";
  Bytes bytes = test::read_file(path);
  ASSERT_GT(bytes.size(), 40u);
  for (std::size_t i = 12; i < bytes.size() - 8; ++i) bytes[i] = static_cast<std::uint8_t>(i * 31);
  test::write_file(path, bytes);
  const std::string message =
      error_message<DatasetError>([&] { load_idx_dataset(dir.path(), "mnist"); });
  EXPECT_TRUE(contains_all(message, {path.string()}));
  EXPECT_TRUE(message.find("corrupt gzip data") != std::string::npos ||
              message.find("truncated") != std::string::npos)
      << message;
}

TEST(Idx, CorruptGzipChecksum) {
  TempDir dir;
  test::write_idx_set(dir.path(), 50, 10, Compression::gzip);
  const fs::path path = dir / "train-labels-idx1-ubyte.gz";
  Bytes bytes = test::read_file(path);
  bytes[bytes.size() - 8] ^= 0xff;  // the CRC-32 in the gzip trailer
  test::write_file(path, bytes);
  const std::string message =
      error_message<DatasetError>([&] { load_idx_dataset(dir.path(), "mnist"); });
  EXPECT_TRUE(contains_all(message, {path.string(), "corrupt gzip data"}));
}

TEST(Idx, TruncatedGzipStream) {
  TempDir dir;
  test::write_idx_set(dir.path(), 50, 10, Compression::gzip);
  const fs::path path = dir / "train-images-idx3-ubyte.gz";
  Bytes bytes = test::read_file(path);
  bytes.resize(bytes.size() / 2);
  test::write_file(path, bytes);
  const std::string message =
      error_message<DatasetError>([&] { load_idx_dataset(dir.path(), "mnist"); });
  EXPECT_TRUE(contains_all(
      message, {path.string(), "truncated: expected 39216 bytes", "the gzip stream ends early"}));
}

TEST(Idx, GzipStreamWithoutTrailer) {
  // Every byte of the data decompresses, but the stream ends before its checksum.
  TempDir dir;
  test::write_idx_set(dir.path(), 50, 10, Compression::gzip);
  const fs::path path = dir / "t10k-labels-idx1-ubyte.gz";
  Bytes bytes = test::read_file(path);
  bytes.resize(bytes.size() - 4);
  test::write_file(path, bytes);
  const std::string message =
      error_message<DatasetError>([&] { load_idx_dataset(dir.path(), "mnist"); });
  EXPECT_TRUE(contains_all(message, {path.string(), "corrupt gzip data"}));
}

TEST(Idx, DirectoryInPlaceOfAFile) {
  TempDir dir;
  test::write_idx_set(dir.path(), 3, 2, Compression::none);
  fs::remove(dir / "train-images-idx3-ubyte");
  fs::create_directory(dir / "train-images-idx3-ubyte");
  const std::string message =
      error_message<DatasetError>([&] { load_idx_dataset(dir.path(), "mnist"); });
  EXPECT_TRUE(contains_all(message, {(dir / "train-images-idx3-ubyte").string(), "not a regular"}));
}

}  // namespace
}  // namespace mixlab
