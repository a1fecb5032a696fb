// CIFAR-10 and CIFAR-100, binary versions: fixed-size records of label byte(s) followed by the
// 32x32 red, green and blue planes. Converted to HWC on load.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/data/file_reader.h"
#include "engine/data/loaders.h"

namespace mixlab {

namespace {

namespace fs = std::filesystem;

constexpr int kSide = 32;
constexpr int kChannels = 3;
constexpr std::size_t kPlane = kSide * kSide;        // 1024
constexpr std::size_t kPixels = kPlane * kChannels;  // 3072
constexpr std::size_t kRecordsPerChunk = 2048;       // about 6 MiB a read

struct CifarFormat {
  const char* kind;         // "cifar10"
  const char* subdir;       // the folder the archive unpacks to
  std::size_t label_bytes;  // label bytes before the pixels
  int classes;              // of the label used (the last label byte)
  int coarse_classes;       // CIFAR-100's first label byte; 0 when there is none
};

constexpr CifarFormat kCifar10{"cifar10", "cifar-10-batches-bin", 1, 10, 0};
constexpr CifarFormat kCifar100{"cifar100", "cifar-100-binary", 2, 100, 20};

// Appends the records of one file to dataset (images HWC, labels).
void read_cifar_file(const fs::path& path, const CifarFormat& format, Dataset& dataset,
                     std::uint64_t max_records) {
  FileReader in(path);
  const std::size_t record = format.label_bytes + kPixels;
  std::vector<std::uint8_t> chunk(record * kRecordsPerChunk);
  std::uint64_t total = 0;
  for (;;) {
    const std::size_t got = in.read(chunk.data(), chunk.size());
    const std::size_t records = got / record;
    const std::size_t first = dataset.labels.size();
    if (first + records > max_records) {
      check_fits_in_memory(path,
                           (first + records) * (kPixels + sizeof(dataset.labels[0])),
                           "more than " + std::to_string(first) + " records (decompressed)");
    }
    dataset.images.resize((first + records) * kPixels);
    dataset.labels.resize(first + records);
    for (std::size_t r = 0; r < records; ++r) {
      const std::uint8_t* src = chunk.data() + r * record;
      const std::uint64_t index = total / record + r;
      if (format.coarse_classes > 0 && src[0] >= format.coarse_classes) {
        throw_dataset_error(path, "coarse label out of range in record " + std::to_string(index) +
                                      ": expected 0.." + std::to_string(format.coarse_classes - 1) +
                                      ", found " + std::to_string(src[0]));
      }
      const int label = src[format.label_bytes - 1];
      if (label >= format.classes) {
        throw_dataset_error(path, "label out of range in record " + std::to_string(index) +
                                      ": expected 0.." + std::to_string(format.classes - 1) +
                                      ", found " + std::to_string(label));
      }
      dataset.labels[first + r] = label;
      const std::uint8_t* red = src + format.label_bytes;
      const std::uint8_t* green = red + kPlane;
      const std::uint8_t* blue = green + kPlane;
      std::uint8_t* dst = dataset.images.data() + (first + r) * kPixels;
      for (std::size_t p = 0; p < kPlane; ++p) {
        dst[3 * p + 0] = red[p];
        dst[3 * p + 1] = green[p];
        dst[3 * p + 2] = blue[p];
      }
    }
    total += got;
    if (got < chunk.size()) {
      if (got % record != 0) {
        throw_dataset_error(
            path, "truncated or corrupt: expected a multiple of " + std::to_string(record) +
                      "-byte records, found " + std::to_string(total) + " bytes" +
                      (in.stream_truncated() ? " (the gzip stream ends early)" : ""));
      }
      break;
    }
  }
  if (total == 0) {
    throw_dataset_error(
        path, "empty: expected " + std::to_string(record) + "-byte records, found 0 bytes");
  }
  in.skip_rest();  // reports a gzip stream that ends early
}

// DIR if it holds `probe`, else DIR/<subdir> if that does; otherwise a DatasetError listing both.
fs::path find_cifar_dir(const fs::path& dir, const CifarFormat& format, const char* probe) {
  std::error_code ec;
  if (fs::exists(dir / probe, ec)) return dir;
  if (fs::exists(dir / format.subdir / probe, ec)) return dir / format.subdir;
  throw DatasetError((dir / probe).string() + ": " + format.kind + " file not found (looked for " +
                     (dir / probe).string() + " and " + (dir / format.subdir / probe).string() +
                     ")");
}

Dataset load_split(const fs::path& dir, const CifarFormat& format,
                   const std::vector<std::string>& files, const char* split) {
  Dataset dataset;
  dataset.name = std::string(format.kind) + "/" + split;
  dataset.sample_shape = {kSide, kSide, kChannels};
  dataset.num_classes = format.classes;
  // One reservation for the whole split (exact for uncompressed files).
  std::uint64_t bytes = 0;
  for (const std::string& file : files) {
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(dir / file, ec);
    if (!ec) bytes += size;
  }
  const std::uint64_t records = bytes / (format.label_bytes + kPixels);
  const std::uint64_t record_memory = kPixels + sizeof(dataset.labels[0]);
  check_fits_in_memory(dir / files.front(), records * record_memory,
                       std::to_string(records) + " records in " + std::to_string(files.size()) +
                           " file(s) of " + std::to_string(bytes >> 20) + " MiB in all");
  dataset.images.reserve(records * kPixels);
  dataset.labels.reserve(records);
  // Compressed files may hold more than their size says: bounded as they grow.
  const MemoryBudget budget = memory_budget();
  const std::uint64_t max_records =
      budget.known() ? budget.bytes / record_memory : std::numeric_limits<std::uint64_t>::max();
  for (const std::string& file : files) read_cifar_file(dir / file, format, dataset, max_records);
  return dataset;
}

}  // namespace

DatasetPair load_cifar10(const fs::path& dir) {
  const fs::path root = find_cifar_dir(dir, kCifar10, "data_batch_1.bin");
  std::vector<std::string> train_files;
  for (int i = 1; i <= 5; ++i) train_files.push_back("data_batch_" + std::to_string(i) + ".bin");
  return {load_split(root, kCifar10, train_files, "train"),
          load_split(root, kCifar10, {"test_batch.bin"}, "test")};
}

DatasetPair load_cifar100(const fs::path& dir) {
  const fs::path root = find_cifar_dir(dir, kCifar100, "train.bin");
  return {load_split(root, kCifar100, {"train.bin"}, "train"),
          load_split(root, kCifar100, {"test.bin"}, "test")};
}

}  // namespace mixlab
