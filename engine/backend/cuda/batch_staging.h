// How a batch reaches the GPU while the previous step runs. The host writes it into one of two
// pinned slots (used in turn), the copy stream copies it into the arena's incoming buffer, and
// when the next step starts the compute stream takes it from there into the input and label
// buffers (take()). With the training split kept on the device (upload_dataset), a slot holds
// sample indices and take() gathers the batch on the device instead.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/backend/cuda/kernels.h"

namespace mixlab::cuda {

class BatchStaging {
 public:
  // `label_limit`: labels must be below it (the model's classes; 2 for one binary output).
  // `positions`: labels per sample (1, or a (steps, classes) output's steps).
  BatchStaging(int batch, std::int64_t sample_elements, std::int64_t label_limit,
               std::int64_t positions = 1);
  ~BatchStaging();
  BatchStaging(const BatchStaging&) = delete;
  BatchStaging& operator=(const BatchStaging&) = delete;

  // Bytes of the device's incoming buffer (labels, then images in float32 or sample indices).
  std::size_t incoming_bytes() const { return incoming_bytes_; }
  // After the arena is allocated: where the incoming buffer is; allocates the pinned slots.
  void bind(std::byte* incoming, cudaStream_t compute);

  // Stages n <= batch samples (the rest padding) and queues their copy.
  void load(std::span<const float> images, std::span<const std::int32_t> labels, int n);
  // Keeps the whole training split on the device when it fits (false: it does not, or the
  // allocation failed; batches then come through load()).
  bool upload_dataset(std::span<const std::uint8_t> images, std::span<const std::int32_t> labels);
  void load_indices(std::span<const std::int64_t> indices, int n);

  // A batch was loaded since the last take().
  bool pending() const { return pending_ != Pending::none; }
  int pending_samples() const { return pending_n_; }
  // Makes the compute stream wait for the pending batch's copy.
  void wait_ready();
  // Enqueues, on the compute stream, the pending batch into `images` (batch, sample) float32 and
  // `labels` (batch, positions); a gather reads params->real_samples, so the step parameters go
  // first.
  void take(const StepParams* params, float* images, std::int32_t* labels);
  // Device memory the dataset holds.
  std::size_t dataset_bytes() const { return dataset_bytes_; }

 private:
  enum class Pending : std::uint8_t { none, images, indices };

  void check_labels(std::span<const std::int32_t> labels, std::int64_t n) const;
  std::byte* next_slot();
  void copy_slot(std::byte* slot, std::size_t bytes);
  void release_dataset();
  // Frees what it holds (safe to call twice).
  void release();

  int batch_;
  std::int64_t sample_elements_;
  std::int64_t label_limit_;
  std::int64_t positions_;      // labels per sample
  std::size_t label_bytes_;     // the labels' part of a slot, 256-byte aligned
  std::size_t incoming_bytes_;  // labels + max(images, indices)
  std::size_t slot_bytes_;      // incoming_bytes_, 256-byte aligned
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_stream_ = nullptr;
  cudaEvent_t slot_copied_[2] = {nullptr, nullptr};
  cudaEvent_t batch_ready_ = nullptr, incoming_consumed_ = nullptr;
  std::byte* incoming_ = nullptr;  // device, in the arena
  std::byte* pinned_ = nullptr;    // two slots
  int next_ = 0;
  Pending pending_ = Pending::none;
  int pending_n_ = 0;

  // The training split on the device.
  std::uint8_t* dataset_images_ = nullptr;  // (size, sample) uint8
  std::int32_t* dataset_labels_ = nullptr;  // (size, positions)
  std::int64_t dataset_size_ = 0;
  std::size_t dataset_bytes_ = 0;
};

}  // namespace mixlab::cuda
