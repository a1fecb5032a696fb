// Debian's packaged Fashion-MNIST (dataset-fashion-mnist), when installed.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "engine/data/batch_loader.h"
#include "engine/data/dataset.h"

namespace mixlab {
namespace {

TEST(FashionMnist, LoadsThePackagedDataset) {
  if (!std::filesystem::is_directory(kDebianFashionMnistDir)) {
    GTEST_SKIP() << kDebianFashionMnistDir
                 << " not found (Debian package dataset-fashion-mnist not installed)";
  }
  const auto start = std::chrono::steady_clock::now();
  const DatasetPair pair = load_dataset(parse_dataset_spec("fashion-mnist"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("loaded fashion-mnist in %.3f s\n", seconds);
  RecordProperty("load_s", std::to_string(seconds));
  EXPECT_EQ(pair.train.name, "fashion-mnist/train");
  EXPECT_EQ(pair.train.size(), 60000);
  EXPECT_EQ(pair.test.size(), 10000);
  EXPECT_EQ(pair.train.sample_shape, (Shape{28, 28, 1}));
  EXPECT_EQ(pair.test.sample_shape, (Shape{28, 28, 1}));
  EXPECT_EQ(pair.train.num_classes, 10);
  EXPECT_EQ(pair.train.images.size(), 60000u * 784);
  int counts[10] = {};
  for (const auto label : pair.train.labels) ++counts[label];
  for (const int count : counts) EXPECT_EQ(count, 6000);  // Fashion-MNIST is balanced

  BatchLoaderOptions options;
  options.batch_size = 1000;
  BatchLoader loader(pair.train, options);
  Batch batch;
  std::int64_t samples = 0;
  while (loader.next(batch)) samples += batch.size;
  EXPECT_EQ(samples, 60000);
}

}  // namespace
}  // namespace mixlab
