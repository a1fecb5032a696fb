#include "engine/data/batch_loader.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "engine/core/error.h"
#include "engine/data/rng.h"

namespace mixlab {

namespace {

bool has_full_capacity(const Batch& batch, std::size_t images, std::size_t labels,
                       std::size_t samples) {
  return batch.images.capacity() >= images && batch.labels.capacity() >= labels &&
         batch.indices.capacity() >= samples;
}

}  // namespace

BatchLoader::BatchLoader(const Dataset& dataset, const BatchLoaderOptions& options)
    : dataset_(dataset), options_(options) {
  if (options.batch_size < 1) {
    throw ConfigError("batch loader: batch_size must be at least 1, found " +
                      std::to_string(options.batch_size));
  }
  if (options.prefetch < 1) {
    throw ConfigError("batch loader: prefetch must be at least 1, found " +
                      std::to_string(options.prefetch));
  }
  if (options.epochs < 1) {
    throw ConfigError("batch loader: epochs must be at least 1, found " +
                      std::to_string(options.epochs));
  }
  const std::string name = "dataset " + quote(dataset.name);
  sample_elements_ = dataset.sample_shape.empty() ? 0 : 1;
  for (const std::int64_t side : dataset.sample_shape) {
    if (side < 1) {
      throw DatasetError(name + ": bad sample shape " + format_shape(dataset.sample_shape));
    }
    sample_elements_ *= side;
  }
  if (sample_elements_ < 1) throw DatasetError(name + ": no sample shape");
  const std::int64_t size = dataset.size();
  if (static_cast<std::uint64_t>(dataset.images.size()) !=
      static_cast<std::uint64_t>(size) * static_cast<std::uint64_t>(sample_elements_)) {
    throw DatasetError(name + ": " + std::to_string(dataset.images.size()) +
                       " image bytes do not match " + std::to_string(size) + " samples of " +
                       format_shape(dataset.sample_shape));
  }
  const std::int64_t positions = std::max(1, dataset.label_positions);
  if (static_cast<std::int64_t>(dataset.labels.size()) != size * positions) {
    throw DatasetError(name + ": " + std::to_string(dataset.labels.size()) + " labels are not " +
                       std::to_string(positions) + " per sample");
  }
  for (std::int64_t i = 0; i < size * positions; ++i) {
    if (dataset.labels[i] < 0 || dataset.labels[i] >= dataset.num_classes) {
      throw DatasetError(name + ": label of sample " + std::to_string(i / positions) + " is " +
                         std::to_string(dataset.labels[i]) + ", expected 0.." +
                         std::to_string(dataset.num_classes - 1));
    }
  }
  batches_per_epoch_ = options.drop_last ? size / options.batch_size
                                         : (size + options.batch_size - 1) / options.batch_size;
  if (batches_per_epoch_ == 0) {
    throw ConfigError("batch loader: " + name + " has " + std::to_string(size) +
                      " samples, too few for one batch of " + std::to_string(options.batch_size) +
                      (options.drop_last ? " with drop_last" : ""));
  }

  order_.resize(static_cast<std::size_t>(size));
  const std::size_t pool = static_cast<std::size_t>(options.prefetch) + 2;
  const auto samples = static_cast<std::size_t>(options.batch_size);
  const std::size_t labels = samples * static_cast<std::size_t>(positions);
  const std::size_t images =
      options.indices_only ? 0 : samples * static_cast<std::size_t>(sample_elements_);
  queue_.resize(static_cast<std::size_t>(options.prefetch));
  free_.reserve(pool);
  for (std::size_t i = 0; i < pool; ++i) {
    Batch& batch = free_.emplace_back();
    batch.images.reserve(images);
    batch.labels.reserve(labels);
    batch.indices.reserve(samples);
  }
  thread_ = std::thread(&BatchLoader::run, this);
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  space_.notify_all();
  thread_.join();
}

bool BatchLoader::next(Batch& batch) {
  Batch spent;  // destroyed after the lock is released, when the pool does not take it
  {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return queued_ > 0 || done_; });
    if (queued_ == 0) {
      if (error_) std::rethrow_exception(error_);
      return false;
    }
    Batch& slot = queue_[head_];
    std::swap(batch, slot);
    const auto samples = static_cast<std::size_t>(options_.batch_size);
    const std::size_t labels =
        samples * static_cast<std::size_t>(std::max(1, dataset_.label_positions));
    if (free_.size() < free_.capacity() &&
        has_full_capacity(
            slot, options_.indices_only ? 0 : samples * static_cast<std::size_t>(sample_elements_),
            labels, samples)) {
      free_.push_back(std::move(slot));
    } else {
      spent = std::move(slot);
    }
    head_ = (head_ + 1) % queue_.size();
    --queued_;
  }
  space_.notify_one();
  return true;
}

void BatchLoader::run() {
  try {
    const std::int64_t size = dataset_.size();
    for (int epoch = 0; epoch < options_.epochs; ++epoch) {
      std::iota(order_.begin(), order_.end(), std::int64_t{0});
      if (options_.shuffle) {  // Fisher-Yates, seeded by (seed, epoch) alone
        SplitMix64 rng(options_.seed, static_cast<std::uint64_t>(epoch));
        for (std::int64_t i = size - 1; i > 0; --i) {
          std::swap(order_[i], order_[rng.below(static_cast<std::uint64_t>(i) + 1)]);
        }
      }
      for (std::int64_t index = 0; index < batches_per_epoch_; ++index) {
        Batch batch;
        {
          std::unique_lock lock(mutex_);
          space_.wait(lock, [this] { return stop_ || queued_ < queue_.size(); });
          if (stop_) break;
          if (!free_.empty()) {  // always, unless a caller kept batches of its own
            batch = std::move(free_.back());
            free_.pop_back();
          }
        }
        fill(batch, epoch, index);
        {
          std::lock_guard lock(mutex_);
          queue_[(head_ + queued_) % queue_.size()] = std::move(batch);
          ++queued_;
        }
        ready_.notify_one();
      }
      std::lock_guard lock(mutex_);
      if (stop_) break;
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    error_ = std::current_exception();
  }
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  ready_.notify_all();
}

void BatchLoader::fill(Batch& batch, int epoch, std::int64_t index) const {
  const std::int64_t first = index * options_.batch_size;
  const std::int64_t count = std::min<std::int64_t>(options_.batch_size, dataset_.size() - first);
  const auto elements = static_cast<std::size_t>(sample_elements_);
  batch.size = static_cast<int>(count);
  batch.epoch = epoch;
  batch.index = index;
  batch.images.resize(options_.indices_only ? 0 : static_cast<std::size_t>(count) * elements);
  const auto positions = static_cast<std::size_t>(std::max(1, dataset_.label_positions));
  batch.labels.resize(static_cast<std::size_t>(count) * positions);
  batch.indices.resize(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const auto sample = static_cast<std::size_t>(order_[static_cast<std::size_t>(first + i)]);
    batch.indices[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(sample);
    std::copy_n(dataset_.labels.begin() + static_cast<std::ptrdiff_t>(sample * positions),
                positions, batch.labels.begin() + static_cast<std::ptrdiff_t>(i) * positions);
    if (options_.indices_only) continue;
    const std::uint8_t* src = dataset_.images.data() + sample * elements;
    float* dst = batch.images.data() + static_cast<std::size_t>(i) * elements;
    for (std::size_t e = 0; e < elements; ++e) dst[e] = static_cast<float>(src[e]);
  }
}

}  // namespace mixlab
