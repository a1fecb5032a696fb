// A loader thread that shuffles a dataset each epoch and prefetches float32 batches, so that the
// trainer's wait for data is only what the loader could not hide.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/data/dataset.h"

namespace mixlab {

struct Batch {
  int size = 0;                 // samples in this batch (the last one of an epoch may be short)
  int epoch = 0;                // 0-based
  std::int64_t index = 0;       // batch number within its epoch
  std::vector<float> images;    // (size, H, W, C), raw pixel values 0..255
  std::vector<std::int32_t> labels;  // (size)
};

struct BatchLoaderOptions {
  int batch_size = 32;
  bool shuffle = true;
  bool drop_last = false;  // leave out a short last batch
  std::uint64_t seed = 1;  // same seed, same order
  int prefetch = 3;        // batches kept ready ahead of the trainer
  int epochs = 1;          // the loader stops after this many passes
};

class BatchLoader {
 public:
  BatchLoader(const Dataset& dataset, const BatchLoaderOptions& options);
  ~BatchLoader();  // stops and joins the thread
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Blocks until the next batch is ready; false once every epoch has been handed out.
  bool next(Batch& batch);
  std::int64_t batches_per_epoch() const;

 private:
  void run();

  const Dataset& dataset_;
  BatchLoaderOptions options_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable space_;
  std::deque<Batch> queue_;
  std::vector<Batch> free_;  // recycled buffers
  bool done_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace mixlab
