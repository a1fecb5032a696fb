// A seeded, learnable synthetic dataset for runs that need no files: one random prototype image
// per class; each sample is the average of its class's prototype and uniform noise.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/data/file_reader.h"  // check_fits_in_memory
#include "engine/data/loaders.h"
#include "engine/data/rng.h"

namespace mixlab {

namespace {

// Streams of the seeded process; each sample also gets its own stream so that its bytes do not
// depend on how the set is generated (in order, in chunks, in threads).
enum Stream : std::uint64_t { kPrototypes = 1, kTrainLabels = 2, kTestLabels = 3 };
constexpr std::uint64_t kTrainSamples = std::uint64_t{1} << 40;
constexpr std::uint64_t kTestSamples = std::uint64_t{2} << 40;

void fill_random_bytes(SplitMix64& rng, std::uint8_t* dst, std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const std::uint64_t r = rng.next();
    for (int k = 0; k < 8; ++k) dst[i + k] = static_cast<std::uint8_t>(r >> (8 * k));
  }
  if (i < count) {
    const std::uint64_t r = rng.next();
    for (int k = 0; i < count; ++i, ++k) dst[i] = static_cast<std::uint8_t>(r >> (8 * k));
  }
}

Dataset make_split(const std::vector<std::uint8_t>& prototypes, const Shape& shape, int classes,
                   std::int64_t size, std::uint64_t seed, std::uint64_t label_stream,
                   std::uint64_t sample_streams, const char* split) {
  const auto elements = static_cast<std::size_t>(num_elements(shape));
  Dataset dataset;
  dataset.name = std::string("synthetic/") + split;
  dataset.sample_shape = shape;
  dataset.num_classes = classes;

  // Balanced labels (counts differ by at most one), in a random order.
  dataset.labels.resize(static_cast<std::size_t>(size));
  for (std::int64_t i = 0; i < size; ++i)
    dataset.labels[i] = static_cast<std::int32_t>(i % classes);
  SplitMix64 label_rng(seed, label_stream);
  for (std::int64_t i = size - 1; i > 0; --i) {
    std::swap(dataset.labels[i],
              dataset.labels[label_rng.below(static_cast<std::uint64_t>(i) + 1)]);
  }

  dataset.images.resize(static_cast<std::size_t>(size) * elements);
  for (std::int64_t i = 0; i < size; ++i) {
    std::uint8_t* dst = dataset.images.data() + static_cast<std::size_t>(i) * elements;
    const std::uint8_t* prototype =
        prototypes.data() + static_cast<std::size_t>(dataset.labels[i]) * elements;
    SplitMix64 rng(seed, sample_streams + static_cast<std::uint64_t>(i));
    fill_random_bytes(rng, dst, elements);
    for (std::size_t e = 0; e < elements; ++e) {
      dst[e] = static_cast<std::uint8_t>((unsigned{prototype[e]} + unsigned{dst[e]} + 1) / 2);
    }
  }
  return dataset;
}

}  // namespace

std::string check_synthetic(const Shape& shape, std::int64_t classes, std::int64_t train_size) {
  constexpr std::int64_t kMaxSide = std::int64_t{1} << 16;
  const std::string shape_text = format_shape(shape);
  if (shape.empty() || shape.size() > 3) {
    return "bad shape " + quote(shape_text) + ": expected HxWxC, or 1 or 2 sizes (784, 28x28)";
  }
  for (const std::int64_t side : shape) {
    if (side < 1 || side > kMaxSide) {
      return "bad shape " + quote(shape_text) + ": each size must be 1.." +
             std::to_string(kMaxSide);
    }
  }
  if (classes < 2 || classes > kMaxSyntheticClasses) {
    return "classes must be 2.." + std::to_string(kMaxSyntheticClasses) + ", found " +
           std::to_string(classes);
  }
  if (train_size < 1) {
    return "N (training samples) must be at least 1, found " + std::to_string(train_size);
  }
  // Prototypes, training and test samples; each factor is bounded, so check by division.
  const std::int64_t elements = num_elements(shape);
  const std::int64_t max_samples = kMaxSyntheticBytes / elements;
  if (train_size > max_samples ||
      classes + train_size + std::max<std::int64_t>(1, train_size / 5) > max_samples) {
    return shape_text + " images, " + std::to_string(classes) + " classes and " +
           std::to_string(train_size) + " samples need more than the limit of " +
           std::to_string(kMaxSyntheticBytes >> 30) + " GiB";
  }
  return {};
}

DatasetPair make_synthetic(const Shape& shape, int classes, std::int64_t train_size,
                           std::uint64_t seed) {
  if (const std::string problem = check_synthetic(shape, classes, train_size); !problem.empty()) {
    throw ConfigError("synthetic dataset: " + problem);
  }
  const auto elements = static_cast<std::size_t>(num_elements(shape));
  const std::int64_t test_size = std::max<std::int64_t>(1, train_size / 5);
  // Refused by the memory budget runs are held to (memory_budget.h) before anything is made:
  // the prototypes, the samples and their labels.
  const auto samples = static_cast<std::uint64_t>(train_size + test_size);
  check_fits_in_memory(
      "synthetic:" + format_shape(shape) + ":" + std::to_string(classes) + ":" +
          std::to_string(train_size),
      (static_cast<std::uint64_t>(classes) + samples) * elements + samples * sizeof(std::int32_t),
      "generating its " + std::to_string(samples) + " samples");
  std::vector<std::uint8_t> prototypes(static_cast<std::size_t>(classes) * elements);
  SplitMix64 prototype_rng(seed, kPrototypes);
  fill_random_bytes(prototype_rng, prototypes.data(), prototypes.size());
  return {
      make_split(prototypes, shape, classes, train_size, seed, kTrainLabels, kTrainSamples,
                 "train"),
      make_split(prototypes, shape, classes, test_size, seed, kTestLabels, kTestSamples, "test")};
}

}  // namespace mixlab
