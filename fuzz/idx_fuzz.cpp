// Fuzzes the IDX reader (MNIST / Fashion-MNIST, plain or gzip, detected by content) through
// load_idx_split (engine/data/loaders.h). The input is
//   [4 bytes, big-endian: n][n bytes: the image file][the rest: the label file]
// (n is cut to what there is). Bad files must end in a DatasetError; any other exception, a
// crash, a leak, or a dataset that breaks its own invariants is a finding. Files go to a scratch
// folder on /dev/shm.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/data/loaders.h"
#include "fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;
using mixlab::fuzz::finding;

const mixlab::fuzz::ScratchDir& scratch() {
  static const mixlab::fuzz::ScratchDir dir("idx");
  return dir;
}

void check_split(const mixlab::Dataset& d) {
  if (d.sample_shape.size() != 3 || d.sample_shape[2] != 1)
    finding("idx: sample shape is not HxWx1");
  if (d.size() <= 0) finding("idx: a split loaded with no samples");
  if (static_cast<std::int64_t>(d.images.size()) != d.size() * d.sample_elements())
    finding("idx: image bytes do not match the labels and the sample shape");
  for (const std::int32_t label : d.labels) {
    if (label < 0 || label >= d.num_classes) finding("idx: a label out of range was loaded");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  const fs::path& dir = scratch().path();
  const std::size_t images_bytes = std::min<std::size_t>(mixlab::fuzz::read_be32(data), size - 4);
  const fs::path images = dir / "images.idx";
  const fs::path labels = dir / "labels.idx";
  mixlab::fuzz::write_file(images, data + 4, images_bytes);
  mixlab::fuzz::write_file(labels, data + 4 + images_bytes, size - 4 - images_bytes);
  try {
    check_split(mixlab::load_idx_split(images, labels, "mnist/train"));
  } catch (const mixlab::DatasetError&) {
    return 0;
  } catch (const std::exception& e) {
    mixlab::fuzz::unexpected_exception("load_idx_split", e);
  }
  return 0;
}
