// The synthetic dataset: deterministic from its seed, balanced, learnable and fast.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/data/loaders.h"

namespace mixlab {
namespace {

TEST(Synthetic, ShapesAndSizes) {
  const DatasetPair pair = load_dataset(parse_dataset_spec("synthetic:5x4x3:7:103"));
  EXPECT_EQ(pair.train.name, "synthetic/train");
  EXPECT_EQ(pair.test.name, "synthetic/test");
  for (const Dataset* dataset : {&pair.train, &pair.test}) {
    EXPECT_EQ(dataset->sample_shape, (Shape{5, 4, 3}));
    EXPECT_EQ(dataset->num_classes, 7);
    EXPECT_EQ(dataset->images.size(), static_cast<std::size_t>(dataset->size()) * 60);
  }
  EXPECT_EQ(pair.train.size(), 103);
  EXPECT_EQ(pair.test.size(), 20);
  EXPECT_EQ(make_synthetic({1, 1, 1}, 2, 4, 1).test.size(), 1);  // at least one test sample
  // Flat features (an MLP's input) and two axes, as a model's input may have.
  const DatasetPair flat = load_dataset(parse_dataset_spec("synthetic:207:10:16"));
  EXPECT_EQ(flat.train.sample_shape, (Shape{207}));
  EXPECT_EQ(flat.train.images.size(), 16U * 207U);
  EXPECT_EQ(load_dataset(parse_dataset_spec("synthetic:28x28:10:4")).train.sample_shape,
            (Shape{28, 28}));
}

TEST(Synthetic, SameSeedSameBytes) {
  const DatasetPair a = make_synthetic({8, 8, 3}, 10, 500, 42);
  const DatasetPair b = make_synthetic({8, 8, 3}, 10, 500, 42);
  EXPECT_EQ(a.train.images, b.train.images);
  EXPECT_EQ(a.train.labels, b.train.labels);
  EXPECT_EQ(a.test.images, b.test.images);
  EXPECT_EQ(a.test.labels, b.test.labels);
  const DatasetPair c = make_synthetic({8, 8, 3}, 10, 500, 43);
  EXPECT_NE(a.train.images, c.train.images);
  EXPECT_NE(a.train.labels, c.train.labels);
  // The test split is not a copy of the training split.
  EXPECT_FALSE(std::equal(a.test.images.begin(), a.test.images.end(), a.train.images.begin()));
}

TEST(Synthetic, BalancedLabelsInRandomOrder) {
  const DatasetPair pair = make_synthetic({2, 2, 1}, 7, 1000, 3);
  std::vector<int> counts(7, 0);
  for (const std::int32_t label : pair.train.labels) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 7);
    ++counts[label];
  }
  for (const int count : counts) {
    EXPECT_GE(count, 142);
    EXPECT_LE(count, 143);
  }
  int in_cycle = 0;  // labels that sit where i % 7 would put them
  for (std::size_t i = 0; i < pair.train.labels.size(); ++i) {
    in_cycle += pair.train.labels[i] == static_cast<int>(i % 7);
  }
  EXPECT_LT(in_cycle, 400);
}

TEST(Synthetic, UsesTheWholeByteRange) {
  const DatasetPair pair = make_synthetic({8, 8, 3}, 10, 1000, 1);
  const auto [lo, hi] = std::minmax_element(pair.train.images.begin(), pair.train.images.end());
  EXPECT_LE(*lo, 10);
  EXPECT_GE(*hi, 245);
}

// Nearest class mean, fitted on the training split, scored on the test split.
double nearest_mean_accuracy(const DatasetPair& pair) {
  const auto elements = static_cast<std::size_t>(pair.train.images.size() / pair.train.size());
  const int classes = pair.train.num_classes;
  std::vector<double> means(classes * elements, 0.0);
  std::vector<int> counts(classes, 0);
  for (std::int64_t i = 0; i < pair.train.size(); ++i) {
    const int label = pair.train.labels[i];
    ++counts[label];
    for (std::size_t e = 0; e < elements; ++e) {
      means[label * elements + e] += pair.train.images[i * elements + e];
    }
  }
  for (int k = 0; k < classes; ++k) {
    for (std::size_t e = 0; e < elements; ++e) means[k * elements + e] /= std::max(1, counts[k]);
  }
  int correct = 0;
  for (std::int64_t i = 0; i < pair.test.size(); ++i) {
    int best = -1;
    double best_distance = std::numeric_limits<double>::max();
    for (int k = 0; k < classes; ++k) {
      double distance = 0;
      for (std::size_t e = 0; e < elements; ++e) {
        const double d = pair.test.images[i * elements + e] - means[k * elements + e];
        distance += d * d;
      }
      if (distance < best_distance) {
        best_distance = distance;
        best = k;
      }
    }
    correct += best == pair.test.labels[i];
  }
  return static_cast<double>(correct) / static_cast<double>(pair.test.size());
}

TEST(Synthetic, LearnableByNearestClassMean) {
  const double accuracy = nearest_mean_accuracy(make_synthetic({8, 8, 3}, 10, 2000, 5));
  EXPECT_GT(accuracy, 0.9) << "chance is 0.1";
  // Even tiny images carry the class clearly above chance (1/4).
  const double tiny = nearest_mean_accuracy(make_synthetic({2, 2, 1}, 4, 2000, 5));
  EXPECT_GT(tiny, 0.5) << "chance is 0.25";
}

TEST(Synthetic, FiftyThousandCifarSizedSamplesQuickly) {
#if defined(__SANITIZE_ADDRESS__) || !defined(NDEBUG)
  GTEST_SKIP() << "timing is only meaningful in an optimized build without sanitizers";
#endif
  const auto start = std::chrono::steady_clock::now();
  const DatasetPair pair = load_dataset(parse_dataset_spec("synthetic:32x32x3:10:50000"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(pair.train.size(), 50000);
  EXPECT_EQ(pair.test.size(), 10000);
  EXPECT_LT(seconds, 1.5);
  RecordProperty("generate_s", std::to_string(seconds));
  std::printf("synthetic 32x32x3, 50000 + 10000 samples: %.3f s\n", seconds);
}

TEST(Synthetic, BadParametersThrow) {
  EXPECT_THROW(make_synthetic({}, 10, 100, 1), ConfigError);
  EXPECT_THROW(make_synthetic({2, 2, 2, 2}, 10, 100, 1), ConfigError);
  EXPECT_THROW(make_synthetic({8, 8, 3}, 1, 100, 1), ConfigError);
  EXPECT_THROW(make_synthetic({8, 8, 3}, 10, 0, 1), ConfigError);
  EXPECT_THROW(make_synthetic({8, 0, 3}, 10, 10, 1), ConfigError);
}

}  // namespace
}  // namespace mixlab
