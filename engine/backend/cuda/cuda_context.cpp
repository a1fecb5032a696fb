#include <string>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_context.h"

namespace mixlab::cuda {

DeviceArena::~DeviceArena() {
  if (base_) cudaFree(base_);
}

void DeviceArena::allocate(const std::string& device_name) {
  const std::size_t bytes = layout_.size();
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const auto fail = [&] {
    throw AllocationError("out of GPU memory: " + layout_.describe_need() + " on " + device_name +
                              " but " + std::to_string(free_bytes) + " bytes (" +
                              format_mib(free_bytes) + ") of " + format_mib(total_bytes) +
                              " are free; try a smaller batch size",
                          bytes);
  };
  if (bytes > free_bytes) fail();
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    fail();
  }
  CUDA_CHECK(status);
  base_ = static_cast<std::byte*>(p);
  // On the legacy default stream, which the executor's non-blocking streams do not wait for:
  // finish before anything is written into the arena.
  CUDA_CHECK(cudaMemset(base_, 0, bytes));
  CUDA_CHECK(cudaDeviceSynchronize());
}

ParamSlot param_slot(const PlanSlot& planned) {
  ParamSlot slot;
  slot.layer = planned.layer;
  slot.kind = planned.kind;
  slot.count = planned.count;
  slot.offset = planned.offset;
  slot.fan_in = planned.fan_in;
  slot.fan_out = planned.fan_out;
  slot.compute = planned.compute;
  return slot;
}

const void* CudaContext::weights(const ParamSlot& slot) const {
  if (slot.compute == DType::f32 || !copy16) return master + slot.offset;
  return static_cast<const std::byte*>(copy16) +
         static_cast<std::size_t>(slot.offset) * dtype_bytes(copy_dtype);
}

}  // namespace mixlab::cuda
