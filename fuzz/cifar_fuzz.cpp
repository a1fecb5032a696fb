// Fuzzes the CIFAR-10 / CIFAR-100 readers (binary versions, plain or gzip, detected by content)
// through load_dataset("cifar10:DIR" / "cifar100:DIR"). The input is
//   [1 byte: bit 0 clear CIFAR-10, set CIFAR-100][the rest: the batch file]
// and every batch file of DIR (data_batch_1..5.bin and test_batch.bin, or train.bin and
// test.bin) links to that one file. Bad files must end in a DatasetError; any other exception, a
// crash, a leak, or a dataset that breaks its own invariants is a finding.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;
using mixlab::fuzz::finding;

const mixlab::fuzz::ScratchDir& scratch() {
  static const mixlab::fuzz::ScratchDir dir("cifar");
  return dir;
}

void check_split(const mixlab::Dataset& d, int classes) {
  if (d.sample_shape != mixlab::Shape{32, 32, 3}) finding("cifar: sample shape is not 32x32x3");
  if (d.num_classes != classes) finding("cifar: wrong number of classes");
  if (d.size() <= 0) finding("cifar: a split loaded with no samples");
  if (static_cast<std::int64_t>(d.images.size()) != d.size() * 32 * 32 * 3)
    finding("cifar: image bytes do not match the labels");
  for (const std::int32_t label : d.labels) {
    if (label < 0 || label >= classes) finding("cifar: a label out of range was loaded");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const fs::path& dir = scratch().path();
  const fs::path batch = dir / "batch.bin";
  mixlab::fuzz::write_file(batch, data + 1, size - 1);
  static const bool linked = [&] {
    for (const char* name : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                             "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin",
                             "train.bin", "test.bin"})
      fs::create_symlink(batch, dir / name);
    return true;
  }();
  (void)linked;

  const bool cifar100 = (data[0] & 1) != 0;
  mixlab::DatasetSpec spec;
  spec.kind = cifar100 ? mixlab::DatasetSpec::Kind::cifar100 : mixlab::DatasetSpec::Kind::cifar10;
  spec.dir = dir;
  try {
    const mixlab::DatasetPair pair = mixlab::load_dataset(spec);
    check_split(pair.train, cifar100 ? 100 : 10);
    check_split(pair.test, cifar100 ? 100 : 10);
  } catch (const mixlab::DatasetError&) {
    return 0;
  } catch (const std::exception& e) {
    mixlab::fuzz::unexpected_exception(cifar100 ? "load_dataset(cifar100)" : "load_dataset(cifar10)",
                                       e);
  }
  return 0;
}
