// What the CUDA executor's nodes share: the device state they run with (CudaContext: streams,
// cuBLASLt and cuDNN handles, workspaces, the flat parameter arrays), the device arena every
// buffer lives in, device tensors and parameter slots, and the node interface each op family
// implements (elementwise_nodes, dense_node, conv_node, pool_node).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/kernels.h"
#include "engine/plan/arena_layout.h"

namespace mixlab::cuda {

using Purpose = MemoryPurpose;

// The plan's reservations (ArenaLayout), then one cudaMalloc; each reservation 256-byte aligned
// (what cuBLASLt's and cuDNN's fastest kernels expect).
class DeviceArena {
 public:
  using Id = ArenaLayout::Id;
  static constexpr std::size_t kAlign = 256;

  DeviceArena() = default;
  ~DeviceArena();
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;

  Id reserve(std::size_t bytes, Purpose purpose) { return layout_.reserve(bytes, purpose); }
  Id reserve(const PlanBuffer& buffer) { return layout_.reserve(buffer); }
  // Allocates and zeroes the arena. Throws AllocationError with the bytes needed, the bytes free
  // and the plan's parts when the GPU has too little memory.
  void allocate(const std::string& device_name);
  std::byte* ptr(Id id) const { return base_ + layout_.offset(id); }
  template <class T>
  T* as(Id id) const {
    return reinterpret_cast<T*>(ptr(id));
  }
  const MemoryPlan& plan() const { return layout_.plan(); }
  std::size_t size() const { return layout_.size(); }

 private:
  ArenaLayout layout_{kAlign};
  std::byte* base_ = nullptr;
};

// A device tensor: (batch, ...) elements of a dtype.
struct DTensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  std::vector<std::int64_t> dims;  // batch first
  std::int64_t elements() const {
    std::int64_t n = 1;
    for (auto d : dims) n *= d;
    return n;
  }
  std::size_t bytes() const { return static_cast<std::size_t>(elements()) * dtype_bytes(dtype); }
};

// A trainable parameter group of one layer (the plan's slot), at `offset` elements into the flat
// master, gradient, optimizer-state and 16-bit copy arrays.
struct ParamSlot {
  int layer = 0;
  ParamKind kind = ParamKind::kernel;
  std::int64_t count = 0;
  std::int64_t offset = 0;
  std::int64_t fan_in = 0, fan_out = 0;
  DType compute = DType::f32;  // the layer's: f32 reads the master, 16 bits the copy
  // A Conv2D kernel is kept as (filters, kh, kw, in) for cuDNN's NHWC filters; Keras's layout is
  // (kh, kw, in, filters). Zero for every other slot (same layout as Keras).
  int conv_kh = 0, conv_kw = 0, conv_in = 0, conv_out = 0;
};

// The slot the plan laid out (offset, counts, fans), for a node to keep.
ParamSlot param_slot(const PlanSlot& planned);

// What nodes run with.
struct CudaContext {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t dnn = nullptr;
  void* lt_workspace = nullptr;
  std::size_t lt_workspace_bytes = 0;
  void* dnn_workspace = nullptr;
  const StepParams* params = nullptr;  // device
  std::uint64_t seed = 1;
  bool tf32 = false;
  // Flat parameter arrays (device).
  float* master = nullptr;  // (param floats)
  float* grads = nullptr;   // (param floats)
  void* copy16 = nullptr;   // (param floats) in copy_dtype; null under float32
  DType copy_dtype = DType::f32;

  const void* weights(const ParamSlot& slot) const;
  float* gradient(const ParamSlot& slot) const { return grads + slot.offset; }
};

class CudaNode {
 public:
  CudaNode(int layer, DType out_dtype, std::string label)
      : layer(layer), out_dtype(out_dtype), label(std::move(label)) {}
  virtual ~CudaNode() = default;
  virtual bool aliases_input() const { return false; }
  // Extra device buffers (reserved before, bound after the allocation).
  virtual void reserve(DeviceArena& arena) { (void)arena; }
  virtual void bind(const DeviceArena& arena) { (void)arena; }
  virtual std::size_t dnn_workspace_bytes() const { return 0; }
  virtual void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) = 0;
  // dy may be overwritten (fused activations compute their gradient in place); dx is null when
  // the input gradient is not needed.
  virtual void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                        const DTensor* dx) = 0;
  // Dense and Conv2D: their kernel (then bias), in the plan's order.
  virtual std::vector<ParamSlot*> params() { return {}; }
  // mixed_float8: after a training step, the FP8 tensors' amaxes update their scales (when the
  // step was applied) and the step's figures are reported once (append_fp8_steps).
  virtual void end_training_step(CudaContext& ctx, bool applied) {
    (void)ctx;
    (void)applied;
  }
  virtual void append_fp8_steps(std::vector<Fp8TensorStep>& out) { (void)out; }
  // mixed_float8: the starting weights' saved FP8 scales and amax histories into its FP8
  // matmul; false when it runs none.
  virtual bool restore_fp8(Fp8StateRestorer& restorer) {
    (void)restorer;
    return false;
  }

  const int layer;
  const DType out_dtype;
  const std::string label;  // "layer 3 (Dense)"
};

}  // namespace mixlab::cuda
