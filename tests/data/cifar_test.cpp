// CIFAR-10 / CIFAR-100 binary loading: record layout, CHW -> HWC, directory layouts, errors.
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
using test::contains_all;
using test::error_message;
using test::TempDir;

constexpr int kPerBatch = 3;  // records per CIFAR-10 training batch file in these tests

void write_cifar10(const fs::path& dir, int test_records = 4) {
  fs::create_directories(dir);
  for (int b = 0; b < 5; ++b) {
    test::write_file(dir / ("data_batch_" + std::to_string(b + 1) + ".bin"),
                     test::cifar_records(kPerBatch, b * kPerBatch, false));
  }
  test::write_file(dir / "test_batch.bin", test::cifar_records(test_records, 0, false));
}

void write_cifar100(const fs::path& dir) {
  fs::create_directories(dir);
  test::write_file(dir / "train.bin", test::cifar_records(120, 0, true));
  test::write_file(dir / "test.bin", test::cifar_records(5, 0, true));
}

void expect_records(const Dataset& dataset, int count, bool cifar100) {
  ASSERT_EQ(dataset.size(), count);
  EXPECT_EQ(dataset.sample_shape, (Shape{32, 32, 3}));
  EXPECT_EQ(dataset.num_classes, cifar100 ? 100 : 10);
  ASSERT_EQ(dataset.images.size(), std::size_t(count) * 3072);
  for (int i = 0; i < count; ++i) {
    EXPECT_EQ(dataset.labels[i], test::cifar_label(i, cifar100)) << "record " << i;
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) {
        for (int c = 0; c < 3; ++c) {
          ASSERT_EQ(dataset.images[((std::size_t(i) * 32 + y) * 32 + x) * 3 + c],
                    test::cifar_pixel(i, c, y, x))
              << "record " << i << " y " << y << " x " << x << " channel " << c;
        }
      }
    }
  }
}

TEST(Cifar10, LoadsBatchesInOrderAsHwc) {
  TempDir dir;
  write_cifar10(dir.path());
  const DatasetPair pair = load_cifar10(dir.path());
  EXPECT_EQ(pair.train.name, "cifar10/train");
  EXPECT_EQ(pair.test.name, "cifar10/test");
  expect_records(pair.train, 5 * kPerBatch, false);
  expect_records(pair.test, 4, false);
}

TEST(Cifar10, KnownPixelPlacement) {
  // Record 0 of the test split: red plane first, so (y=0, x=1, green) is byte 1 + 1024 + 1.
  TempDir dir;
  write_cifar10(dir.path());
  const Bytes file = test::read_file(dir / "test_batch.bin");
  const DatasetPair pair = load_cifar10(dir.path());
  const auto hwc = [&](int y, int x, int c) { return pair.test.images[(y * 32 + x) * 3 + c]; };
  EXPECT_EQ(hwc(0, 1, 1), file[1 + 1024 + 1]);
  EXPECT_EQ(hwc(31, 31, 2), file[1 + 2048 + 1023]);
  EXPECT_EQ(hwc(2, 5, 0), file[1 + 2 * 32 + 5]);
  EXPECT_EQ(pair.test.labels[1], file[3073]);
}

TEST(Cifar10, FindsTheArchiveFolder) {
  TempDir dir;
  write_cifar10(dir / "cifar-10-batches-bin");
  const DatasetPair pair = load_dataset(parse_dataset_spec("cifar10:" + dir.path().string()));
  expect_records(pair.train, 5 * kPerBatch, false);
}

TEST(Cifar10, MissingDirectoryListsWhereItLooked) {
  TempDir dir;
  const std::string message = error_message<DatasetError>([&] { load_cifar10(dir.path()); });
  EXPECT_TRUE(contains_all(
      message, {(dir / "data_batch_1.bin").string(),
                (dir / "cifar-10-batches-bin" / "data_batch_1.bin").string(), "not found"}));
}

TEST(Cifar10, MissingBatchFile) {
  TempDir dir;
  write_cifar10(dir.path());
  fs::remove(dir / "data_batch_4.bin");
  const std::string message = error_message<DatasetError>([&] { load_cifar10(dir.path()); });
  EXPECT_TRUE(contains_all(message, {(dir / "data_batch_4.bin").string(), "not found"}));
}

TEST(Cifar10, TruncatedRecord) {
  TempDir dir;
  write_cifar10(dir.path());
  Bytes bytes = test::cifar_records(kPerBatch, 6, false);
  bytes.resize(bytes.size() - 100);
  test::write_file(dir / "data_batch_3.bin", bytes);
  const std::string message = error_message<DatasetError>([&] { load_cifar10(dir.path()); });
  EXPECT_TRUE(contains_all(message, {(dir / "data_batch_3.bin").string(), "truncated or corrupt",
                                     "multiple of 3073-byte records, found 9119 bytes"}));
}

TEST(Cifar10, TrailingBytes) {
  TempDir dir;
  write_cifar10(dir.path());
  Bytes bytes = test::cifar_records(4, 0, false);
  bytes.push_back(0);
  test::write_file(dir / "test_batch.bin", bytes);
  const std::string message = error_message<DatasetError>([&] { load_cifar10(dir.path()); });
  EXPECT_TRUE(contains_all(message, {(dir / "test_batch.bin").string(), "found 12293 bytes"}));
}

TEST(Cifar10, EmptyFile) {
  TempDir dir;
  write_cifar10(dir.path());
  test::write_file(dir / "test_batch.bin", Bytes{});
  const std::string message = error_message<DatasetError>([&] { load_cifar10(dir.path()); });
  EXPECT_TRUE(contains_all(message, {(dir / "test_batch.bin").string(), "empty"}));
}

TEST(Cifar10, LabelOutOfRange) {
  TempDir dir;
  write_cifar10(dir.path());
  Bytes bytes = test::cifar_records(kPerBatch, 0, false);
  bytes[2 * 3073] = 10;
  test::write_file(dir / "data_batch_1.bin", bytes);
  const std::string message = error_message<DatasetError>([&] { load_cifar10(dir.path()); });
  EXPECT_TRUE(contains_all(message, {(dir / "data_batch_1.bin").string(),
                                     "label out of range in record 2", "expected 0..9, found 10"}));
}

TEST(Cifar10, LargeFileReadInChunks) {
  // More records than one read of the loader (2048), with a partial last chunk.
  TempDir dir;
  write_cifar10(dir.path(), 2500);
  const DatasetPair pair = load_cifar10(dir.path());
  expect_records(pair.test, 2500, false);
}

TEST(Cifar100, UsesFineLabels) {
  TempDir dir;
  write_cifar100(dir / "cifar-100-binary");
  const DatasetPair pair = load_dataset(parse_dataset_spec("cifar100:" + dir.path().string()));
  EXPECT_EQ(pair.train.name, "cifar100/train");
  expect_records(pair.train, 120, true);
  expect_records(pair.test, 5, true);
}

TEST(Cifar100, RecordSizeIncludesBothLabels) {
  TempDir dir;
  write_cifar100(dir.path());
  Bytes bytes = test::cifar_records(5, 0, true);
  bytes.resize(5 * 3073);  // CIFAR-10-sized records: not a multiple of 3074
  test::write_file(dir / "test.bin", bytes);
  const std::string message = error_message<DatasetError>([&] { load_cifar100(dir.path()); });
  EXPECT_TRUE(contains_all(message, {(dir / "test.bin").string(), "3074-byte records"}));
}

TEST(Cifar100, FineLabelOutOfRange) {
  TempDir dir;
  write_cifar100(dir.path());
  Bytes bytes = test::cifar_records(5, 0, true);
  bytes[3 * 3074 + 1] = 100;
  test::write_file(dir / "test.bin", bytes);
  const std::string message = error_message<DatasetError>([&] { load_cifar100(dir.path()); });
  EXPECT_TRUE(contains_all(message, {(dir / "test.bin").string(), "label out of range in record 3",
                                     "expected 0..99, found 100"}));
}

TEST(Cifar100, CoarseLabelOutOfRange) {
  TempDir dir;
  write_cifar100(dir.path());
  Bytes bytes = test::cifar_records(5, 0, true);
  bytes[0] = 20;
  test::write_file(dir / "test.bin", bytes);
  const std::string message = error_message<DatasetError>([&] { load_cifar100(dir.path()); });
  EXPECT_TRUE(contains_all(message, {(dir / "test.bin").string(), "coarse label out of range"}));
}

TEST(Cifar100, MissingTestFile) {
  TempDir dir;
  write_cifar100(dir.path());
  fs::remove(dir / "test.bin");
  const std::string message = error_message<DatasetError>([&] { load_cifar100(dir.path()); });
  EXPECT_TRUE(contains_all(message, {(dir / "test.bin").string(), "not found"}));
}

}  // namespace
}  // namespace mixlab
