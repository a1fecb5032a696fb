// The prefetching batch loader: coverage, order, batch sizes, shutdown and buffer reuse.
#include <algorithm>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/data/batch_loader.h"
#include "engine/data/dataset.h"
#include "engine/data/loaders.h"
#include "tests/data/alloc_counter.h"

namespace mixlab {
namespace {

// Sample i holds its own index in its two pixels (i / 256, i % 256); label i % 10.
Dataset numbered_dataset(int size) {
  Dataset dataset;
  dataset.name = "numbered";
  dataset.sample_shape = {1, 2, 1};
  dataset.num_classes = 10;
  for (int i = 0; i < size; ++i) {
    dataset.images.push_back(static_cast<std::uint8_t>(i / 256));
    dataset.images.push_back(static_cast<std::uint8_t>(i % 256));
    dataset.labels.push_back(i % 10);
  }
  return dataset;
}

struct Seen {
  int epoch;
  std::int64_t index;
  std::vector<int> samples;
};

// Every batch the loader hands out, its samples decoded, checking each against its label.
std::vector<Seen> drain(const Dataset& dataset, const BatchLoaderOptions& options) {
  BatchLoader loader(dataset, options);
  std::vector<Seen> seen;
  Batch batch;
  while (loader.next(batch)) {
    Seen record{batch.epoch, batch.index, {}};
    EXPECT_EQ(batch.images.size(), static_cast<std::size_t>(batch.size) * 2);
    EXPECT_EQ(batch.labels.size(), static_cast<std::size_t>(batch.size));
    for (int i = 0; i < batch.size; ++i) {
      const int sample =
          static_cast<int>(batch.images[2 * i]) * 256 + static_cast<int>(batch.images[2 * i + 1]);
      EXPECT_EQ(batch.labels[i], sample % 10);
      record.samples.push_back(sample);
    }
    seen.push_back(std::move(record));
  }
  EXPECT_FALSE(loader.next(batch)) << "still false after the end";
  return seen;
}

std::vector<std::vector<int>> orders_by_epoch(const std::vector<Seen>& seen, int epochs) {
  std::vector<std::vector<int>> orders(epochs);
  for (const Seen& batch : seen) {
    orders.at(batch.epoch)
        .insert(orders[batch.epoch].end(), batch.samples.begin(), batch.samples.end());
  }
  return orders;
}

TEST(BatchLoader, EverySampleOncePerEpoch) {
  const Dataset dataset = numbered_dataset(1000);
  BatchLoaderOptions options;
  options.batch_size = 64;
  options.epochs = 3;
  const std::vector<Seen> seen = drain(dataset, options);
  ASSERT_EQ(seen.size(), 3u * 16);
  for (std::size_t b = 0; b < seen.size(); ++b) {
    EXPECT_EQ(seen[b].epoch, static_cast<int>(b / 16));
    EXPECT_EQ(seen[b].index, static_cast<std::int64_t>(b % 16));
    EXPECT_EQ(seen[b].samples.size(), b % 16 == 15 ? 1000u - 15 * 64 : 64u);
  }
  std::vector<int> all(1000);
  std::iota(all.begin(), all.end(), 0);
  for (std::vector<int> order : orders_by_epoch(seen, 3)) {
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, all);
  }
}

TEST(BatchLoader, ShuffledDifferentlyEachEpochAndDeterministic) {
  const Dataset dataset = numbered_dataset(500);
  BatchLoaderOptions options;
  options.batch_size = 50;
  options.epochs = 3;
  options.seed = 7;
  const auto orders = orders_by_epoch(drain(dataset, options), 3);
  std::vector<int> identity(500);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(orders[0], identity);
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
  EXPECT_EQ(orders_by_epoch(drain(dataset, options), 3), orders) << "same seed, same order";
  options.seed = 8;
  EXPECT_NE(orders_by_epoch(drain(dataset, options), 3)[0], orders[0]);
  // The order of an epoch depends on (seed, epoch) only, not on the batch size.
  options.seed = 7;
  options.batch_size = 33;
  EXPECT_EQ(orders_by_epoch(drain(dataset, options), 3), orders);
}

TEST(BatchLoader, WithoutShuffleInOrder) {
  const Dataset dataset = numbered_dataset(100);
  BatchLoaderOptions options;
  options.batch_size = 30;
  options.shuffle = false;
  options.epochs = 2;
  std::vector<int> identity(100);
  std::iota(identity.begin(), identity.end(), 0);
  for (const auto& order : orders_by_epoch(drain(dataset, options), 2)) EXPECT_EQ(order, identity);
}

TEST(BatchLoader, ShortLastBatchOrDropLast) {
  const Dataset dataset = numbered_dataset(10);
  BatchLoaderOptions options;
  options.batch_size = 4;
  options.epochs = 2;
  {
    BatchLoader loader(dataset, options);
    EXPECT_EQ(loader.batches_per_epoch(), 3);
  }
  std::vector<int> sizes;
  for (const Seen& batch : drain(dataset, options)) sizes.push_back(int(batch.samples.size()));
  EXPECT_EQ(sizes, (std::vector<int>{4, 4, 2, 4, 4, 2}));

  options.drop_last = true;
  {
    BatchLoader loader(dataset, options);
    EXPECT_EQ(loader.batches_per_epoch(), 2);
  }
  const std::vector<Seen> dropped = drain(dataset, options);
  sizes.clear();
  for (const Seen& batch : dropped) sizes.push_back(int(batch.samples.size()));
  EXPECT_EQ(sizes, (std::vector<int>{4, 4, 4, 4}));
  for (const auto& order : orders_by_epoch(dropped, 2)) {
    EXPECT_EQ(std::set<int>(order.begin(), order.end()).size(), 8u) << "no sample twice";
  }
  // An exact multiple has no short batch either way.
  options.batch_size = 5;
  options.drop_last = false;
  EXPECT_EQ(drain(dataset, options).size(), 4u);
}

TEST(BatchLoader, RawPixelValuesAsFloat) {
  Dataset dataset;
  dataset.name = "extremes";
  dataset.sample_shape = {1, 1, 3};
  dataset.num_classes = 2;
  dataset.images = {0, 128, 255};
  dataset.labels = {1};
  BatchLoader loader(dataset, {});
  Batch batch;
  ASSERT_TRUE(loader.next(batch));
  EXPECT_EQ(batch.images, (std::vector<float>{0.0f, 128.0f, 255.0f}));
  EXPECT_EQ(batch.labels, (std::vector<std::int32_t>{1}));
  EXPECT_FALSE(loader.next(batch));
}

TEST(BatchLoader, WorksWithEveryPrefetchDepthAndASlowConsumer) {
  const Dataset dataset = numbered_dataset(200);
  for (const int prefetch : {1, 2, 5}) {
    BatchLoaderOptions options;
    options.batch_size = 7;
    options.prefetch = prefetch;
    options.epochs = 2;
    BatchLoader loader(dataset, options);
    Batch batch;
    int batches = 0;
    while (loader.next(batch)) {
      if (batches++ % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(batches, 2 * 29);
  }
}

TEST(BatchLoader, StopsPromptlyMidEpoch) {
  const DatasetPair pair = make_synthetic({32, 32, 3}, 10, 20000, 1);
  BatchLoaderOptions options;
  options.batch_size = 256;
  options.epochs = 1000;  // far more work than the test waits for
  for (const int taken : {0, 1, 5}) {
    const auto start = std::chrono::steady_clock::now();
    {
      BatchLoader loader(pair.train, options);
      Batch batch;
      for (int i = 0; i < taken; ++i) ASSERT_TRUE(loader.next(batch));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let it fill the queue
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 2.0) << "after " << taken << " batches";
  }
}

TEST(BatchLoader, NoAllocationAfterConstruction) {
  const Dataset dataset = numbered_dataset(1000);
  BatchLoaderOptions options;
  options.batch_size = 64;  // a short last batch too, so buffers change size
  options.epochs = 5;
  options.prefetch = 2;
  std::vector<const float*> buffers;
  buffers.reserve(200);
  Batch batch;
  batch.images.reserve(64 * 2);  // a full-size batch of the caller's joins the pool
  batch.labels.reserve(64);
  long during = 0;
  int batches = 0;
  {
    BatchLoader loader(dataset, options);
    const long before = test::allocation_count();
    while (loader.next(batch)) {
      ++batches;
      if (buffers.size() < buffers.capacity()) buffers.push_back(batch.images.data());
    }
    during = test::allocation_count() - before;
  }
  EXPECT_EQ(batches, 5 * 16);
  EXPECT_EQ(during, 0) << "allocations while handing out " << batches << " batches";
  std::sort(buffers.begin(), buffers.end());
  const auto distinct = std::unique(buffers.begin(), buffers.end()) - buffers.begin();
  EXPECT_LE(distinct, options.prefetch + 3) << "buffers are recycled";
}

TEST(BatchLoader, BadOptions) {
  const Dataset dataset = numbered_dataset(10);
  const auto options_with = [](auto change) {
    BatchLoaderOptions options;
    change(options);
    return options;
  };
  EXPECT_THROW(BatchLoader(dataset, options_with([](auto& o) { o.batch_size = 0; })), ConfigError);
  EXPECT_THROW(BatchLoader(dataset, options_with([](auto& o) { o.prefetch = 0; })), ConfigError);
  EXPECT_THROW(BatchLoader(dataset, options_with([](auto& o) { o.epochs = 0; })), ConfigError);
  EXPECT_THROW(BatchLoader(dataset, options_with([](auto& o) {
                             o.batch_size = 11;
                             o.drop_last = true;
                           })),
               ConfigError);
  EXPECT_NO_THROW(BatchLoader(dataset, options_with([](auto& o) { o.batch_size = 11; })));
  EXPECT_THROW(BatchLoader(Dataset{}, BatchLoaderOptions{}), DatasetError);
}

TEST(BatchLoader, InconsistentDataset) {
  Dataset dataset = numbered_dataset(10);
  dataset.images.pop_back();
  EXPECT_THROW(BatchLoader(dataset, BatchLoaderOptions{}), DatasetError);
  dataset = numbered_dataset(10);
  dataset.labels[3] = 10;
  EXPECT_THROW(BatchLoader(dataset, BatchLoaderOptions{}), DatasetError);
}

}  // namespace
}  // namespace mixlab
