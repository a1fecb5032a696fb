#include "engine/backend/cuda/batch_staging.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/plan/arena_layout.h"

namespace mixlab::cuda {

namespace {
constexpr std::size_t kAlign = 256;
std::size_t align_up(std::size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}
}  // namespace

BatchStaging::BatchStaging(int batch, std::int64_t sample_elements, std::int64_t label_limit,
                           std::int64_t positions)
    : batch_(batch),
      sample_elements_(sample_elements),
      label_limit_(label_limit),
      positions_(positions) {
  label_bytes_ = align_up(static_cast<std::size_t>(batch * positions) * sizeof(std::int32_t));
  incoming_bytes_ =
      label_bytes_ + static_cast<std::size_t>(batch) *
                         std::max<std::size_t>(static_cast<std::size_t>(sample_elements) *
                                                   sizeof(float),
                                               sizeof(std::int64_t));
  slot_bytes_ = align_up(incoming_bytes_);
  try {
    CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
    for (cudaEvent_t* e : {&slot_copied_[0], &slot_copied_[1], &batch_ready_, &incoming_consumed_})
      CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  } catch (...) {
    release();
    throw;
  }
}

BatchStaging::~BatchStaging() {
  release();
}

void BatchStaging::release() {
  if (copy_stream_) cudaStreamSynchronize(copy_stream_);
  if (compute_) cudaStreamSynchronize(compute_);
  for (cudaEvent_t* e : {&slot_copied_[0], &slot_copied_[1], &batch_ready_, &incoming_consumed_}) {
    if (*e) cudaEventDestroy(*e);
    *e = nullptr;
  }
  if (pinned_) cudaFreeHost(pinned_);
  pinned_ = nullptr;
  release_dataset();
  if (copy_stream_) cudaStreamDestroy(copy_stream_);
  copy_stream_ = nullptr;
}

void BatchStaging::release_dataset() {
  if (dataset_images_) cudaFree(dataset_images_);
  if (dataset_labels_) cudaFree(dataset_labels_);
  dataset_images_ = nullptr;
  dataset_labels_ = nullptr;
  dataset_size_ = 0;
  dataset_bytes_ = 0;
}

void BatchStaging::bind(std::byte* incoming, cudaStream_t compute) {
  incoming_ = incoming;
  compute_ = compute;
  const std::size_t bytes = 2 * slot_bytes_;
  if (cudaMallocHost(reinterpret_cast<void**>(&pinned_), bytes) != cudaSuccess) {
    cudaGetLastError();
    pinned_ = nullptr;
    throw AllocationError("cannot allocate " + std::to_string(bytes) + " bytes (" +
                              format_mib(bytes) + ") of pinned host memory for the batches",
                          bytes);
  }
  CUDA_CHECK(cudaEventRecord(incoming_consumed_, compute_));
  for (cudaEvent_t e : slot_copied_) CUDA_CHECK(cudaEventRecord(e, copy_stream_));
}

void BatchStaging::check_labels(std::span<const std::int32_t> labels, std::int64_t n) const {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int32_t label = labels[static_cast<std::size_t>(i)];
    if (label < 0 || label >= label_limit_) {
      throw ConfigError("label " + std::to_string(label) + " is outside the model's " +
                        std::to_string(label_limit_) + " classes");
    }
  }
}

std::byte* BatchStaging::next_slot() {
  const int slot = next_;
  next_ = 1 - next_;
  // The slot's previous copy to the device must have finished before it is overwritten.
  CUDA_CHECK(cudaEventSynchronize(slot_copied_[slot]));
  return pinned_ + static_cast<std::size_t>(slot) * slot_bytes_;
}

void BatchStaging::copy_slot(std::byte* slot, std::size_t bytes) {
  // The incoming buffer is free once the compute stream has taken the previous batch from it.
  CUDA_CHECK(cudaStreamWaitEvent(copy_stream_, incoming_consumed_, 0));
  CUDA_CHECK(cudaMemcpyAsync(incoming_, slot, bytes, cudaMemcpyHostToDevice, copy_stream_));
  CUDA_CHECK(cudaEventRecord(slot_copied_[slot == pinned_ ? 0 : 1], copy_stream_));
  CUDA_CHECK(cudaEventRecord(batch_ready_, copy_stream_));
}

void BatchStaging::load(std::span<const float> images, std::span<const std::int32_t> labels,
                        int n) {
  if (n < 1 || n > batch_) {
    throw ConfigError("a batch of " + std::to_string(n) + " samples does not fit batch size " +
                      std::to_string(batch_));
  }
  if (static_cast<std::int64_t>(images.size()) < n * sample_elements_ ||
      static_cast<std::int64_t>(labels.size()) < n * positions_) {
    throw ConfigError("batch buffers are smaller than " + std::to_string(n) + " samples");
  }
  check_labels(labels, n * positions_);
  std::byte* slot = next_slot();
  auto* lab = reinterpret_cast<std::int32_t*>(slot);
  std::memcpy(lab, labels.data(), static_cast<std::size_t>(n * positions_) * sizeof(std::int32_t));
  std::memset(lab + n * positions_, 0,
              static_cast<std::size_t>((batch_ - n) * positions_) * sizeof(std::int32_t));
  auto* img = reinterpret_cast<float*>(slot + label_bytes_);
  const auto sample_bytes = static_cast<std::size_t>(sample_elements_) * sizeof(float);
  std::memcpy(img, images.data(), static_cast<std::size_t>(n) * sample_bytes);
  std::memset(img + n * sample_elements_, 0, static_cast<std::size_t>(batch_ - n) * sample_bytes);
  copy_slot(slot, label_bytes_ + static_cast<std::size_t>(batch_) * sample_bytes);
  pending_ = Pending::images;
  pending_n_ = n;
}

bool BatchStaging::upload_dataset(std::span<const std::uint8_t> images,
                                  std::span<const std::int32_t> labels) {
  const auto size = static_cast<std::int64_t>(labels.size()) / positions_;
  if (size == 0 || static_cast<std::int64_t>(labels.size()) != size * positions_ ||
      static_cast<std::int64_t>(images.size()) != size * sample_elements_)
    return false;
  check_labels(labels, size * positions_);
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t bytes = images.size() + labels.size_bytes();
  if (bytes + (std::size_t{256} << 20) > free_bytes) return false;  // keep 256 MiB for libraries
  CUDA_CHECK(cudaStreamSynchronize(compute_));  // nothing may still read the old copy
  release_dataset();
  const auto allocate = [](void** p, std::size_t n) {
    const cudaError_t status = cudaMalloc(p, n);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return false;
    }
    CUDA_CHECK(status);
    return true;
  };
  if (!allocate(reinterpret_cast<void**>(&dataset_images_), images.size()) ||
      !allocate(reinterpret_cast<void**>(&dataset_labels_), labels.size_bytes())) {
    release_dataset();
    return false;  // the run copies batches from the host instead
  }
  CUDA_CHECK(cudaMemcpyAsync(dataset_images_, images.data(), images.size(), cudaMemcpyHostToDevice,
                             compute_));
  CUDA_CHECK(cudaMemcpyAsync(dataset_labels_, labels.data(), labels.size_bytes(),
                             cudaMemcpyHostToDevice, compute_));
  CUDA_CHECK(cudaStreamSynchronize(compute_));  // the host buffers are pageable
  dataset_size_ = size;
  dataset_bytes_ = bytes;
  return true;
}

void BatchStaging::load_indices(std::span<const std::int64_t> indices, int n) {
  if (!dataset_images_) throw ConfigError("load_batch_indices() before upload_dataset()");
  if (n < 1 || n > batch_ || static_cast<int>(indices.size()) < n) {
    throw ConfigError("a batch of " + std::to_string(n) + " samples does not fit batch size " +
                      std::to_string(batch_));
  }
  for (int i = 0; i < n; ++i) {
    const std::int64_t sample = indices[static_cast<std::size_t>(i)];
    if (sample < 0 || sample >= dataset_size_) {
      throw ConfigError("sample " + std::to_string(sample) + " is outside the dataset's " +
                        std::to_string(dataset_size_));
    }
  }
  std::byte* slot = next_slot();
  auto* idx = reinterpret_cast<std::int64_t*>(slot + label_bytes_);
  std::memcpy(idx, indices.data(), static_cast<std::size_t>(n) * sizeof(std::int64_t));
  std::fill(idx + n, idx + batch_, std::int64_t{0});
  copy_slot(slot, label_bytes_ + static_cast<std::size_t>(batch_) * sizeof(std::int64_t));
  pending_ = Pending::indices;
  pending_n_ = n;
}

void BatchStaging::wait_ready() {
  CUDA_CHECK(cudaStreamWaitEvent(compute_, batch_ready_, 0));
}

void BatchStaging::take(const StepParams* params, float* images, std::int32_t* labels) {
  if (pending_ == Pending::images) {
    CUDA_CHECK(cudaMemcpyAsync(labels, incoming_,
                               static_cast<std::size_t>(batch_ * positions_) * sizeof(std::int32_t),
                               cudaMemcpyDeviceToDevice, compute_));
    CUDA_CHECK(cudaMemcpyAsync(images, incoming_ + label_bytes_,
                               static_cast<std::size_t>(batch_ * sample_elements_) * sizeof(float),
                               cudaMemcpyDeviceToDevice, compute_));
  } else if (pending_ == Pending::indices) {
    kernels::gather_batch(dataset_images_, dataset_labels_,
                          reinterpret_cast<const std::int64_t*>(incoming_ + label_bytes_), params,
                          batch_, sample_elements_, positions_, images, labels, compute_);
  }
  CUDA_CHECK(cudaEventRecord(incoming_consumed_, compute_));
  pending_ = Pending::none;
}

}  // namespace mixlab::cuda
