// A loader thread that shuffles a dataset each epoch and prefetches float32 batches, so that the
// trainer's wait for data is only what the loader could not hide.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/data/dataset.h"

namespace mixlab {

struct Batch {
  int size = 0;               // samples in this batch (the last one of an epoch may be short)
  int epoch = 0;              // 0-based
  std::int64_t index = 0;     // batch number within its epoch
  std::vector<float> images;  // (size, H, W, C), raw pixel values 0..255
  std::vector<std::int32_t> labels;   // (size, the dataset's label_positions)
  std::vector<std::int64_t> indices;  // (size) the samples' positions in the dataset
};

struct BatchLoaderOptions {
  int batch_size = 32;
  bool shuffle = true;
  bool drop_last = false;     // leave out a short last batch
  std::uint64_t seed = 1;     // same seed, same order
  int prefetch = 3;           // batches kept ready ahead of the trainer
  int epochs = 1;             // the loader stops after this many passes
  bool indices_only = false;  // hand out sample indices and labels, no images (the dataset is
                              // on the device: ModelExecutor::load_batch_indices)
};

// Hands out every sample of the dataset exactly once per epoch, in an order that depends only on
// the seed and the epoch (a different one each epoch), for `epochs` passes. The dataset must
// outlive the loader and stay unchanged while it runs.
//
// Buffers are recycled: the constructor allocates prefetch + 2 full-size batches, next() swaps
// the caller's spent batch back into the pool, and after construction the loader allocates
// nothing (a caller's batch smaller than a full one is dropped, not grown).
class BatchLoader {
 public:
  // Throws ConfigError for batch_size, prefetch or epochs below 1, or options that leave no
  // batch (drop_last with fewer samples than batch_size); DatasetError for a dataset whose
  // images do not match its labels and shape, or whose labels are out of range.
  BatchLoader(const Dataset& dataset, const BatchLoaderOptions& options);
  ~BatchLoader();  // stops and joins the thread, also mid-epoch
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Blocks until the next batch is ready and swaps it into `batch` (whose previous buffers go
  // back to the pool); false once every epoch has been handed out. Rethrows an error of the
  // loader thread.
  bool next(Batch& batch);
  std::int64_t batches_per_epoch() const { return batches_per_epoch_; }

 private:
  void run();
  void fill(Batch& batch, int epoch, std::int64_t index) const;

  const Dataset& dataset_;
  const BatchLoaderOptions options_;
  std::int64_t sample_elements_ = 0;  // H * W * C
  std::int64_t batches_per_epoch_ = 0;
  std::vector<std::int64_t> order_;  // (dataset size) sample order of the current epoch;
                                     // only the loader thread touches it once started

  std::mutex mutex_;               // guards everything below but thread_
  std::condition_variable ready_;  // a batch was queued, or the loader finished
  std::condition_variable space_;  // a queue slot came free, or stop_ was set
  std::vector<Batch> queue_;       // ring of `prefetch` slots; no allocation when cycling
  std::size_t head_ = 0;           // slot of the oldest ready batch
  std::size_t queued_ = 0;         // ready batches
  std::vector<Batch> free_;        // recycled buffers; capacity reserved, never grows
  bool done_ = false;              // the loader thread has finished (all epochs, stop, error)
  bool stop_ = false;              // the destructor asks the loader thread to stop
  std::exception_ptr error_;       // what ended the loader thread early, for next() to rethrow
  std::thread thread_;
};

}  // namespace mixlab
