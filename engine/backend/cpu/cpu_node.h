// The CPU executor runs a model as a list of nodes: each Keras layer lowers to one node, plus a
// cast node before a oneDNN op whose input arrives in another dtype and an activation node after
// a Dense or Conv2D with a non-linear activation. Each node type lives in its own file pair.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/arena.h"
#include "engine/backend/cpu/cpu_tensor.h"

namespace mixlab::cpu {

struct CpuContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::uint64_t seed = 1;  // dropout masks
  int real_samples = 0;    // of the loaded batch (rows beyond are padding): batch statistics
};

// How a layer's compute copy of a parameter follows its float32 master.
enum class CopyMode : std::uint8_t {
  master,       // the layer computes with the master itself (float32, same layout)
  elementwise,  // same element order: the optimizer's loop writes the copy as it updates
  reorder,      // another layout: oneDNN re-lays it out after each update
};

// One trainable parameter group (a kernel or a bias) and where its buffers live. The master and
// the optimizer state share the gradient's element order and sit at the same offset of the
// executor's flat float32 arrays, so that each group's update is one loop. For a bfloat16 layer,
// oneDNN writes bfloat16 weight gradients in the forward weights' own layout, so the update loop
// also writes the layer's bfloat16 copy: no re-layout pass.
struct ParamSlot {
  int layer = 0;
  ParamKind kind = ParamKind::kernel;
  dnnl::memory::desc keras_desc;   // float32, Keras's layout
  dnnl::memory::desc grad_desc;    // what backward-weights writes (float32 or bfloat16)
  dnnl::memory::desc master_desc;  // float32, the gradient's element order
  dnnl::memory::desc copy_desc;    // the compute dtype, the layout the forward op wants
  // The layout backward-data wants, when oneDNN picks another one (a second copy, re-laid out
  // from the first); empty when the forward copy serves both.
  dnnl::memory::desc backward_copy_desc;
  Storage grad_storage = Storage::f32;
  Storage copy_storage = Storage::f32;
  CopyMode copy_mode = CopyMode::master;
  std::int64_t offset = 0;               // in floats, into the flat master and state arrays
  std::int64_t count = 0;                // elements of master_desc (padding included)
  std::int64_t grad_offset = 0;          // in bytes, into the gradient region
  std::int64_t fan_in = 0, fan_out = 0;  // for glorot_uniform
  Arena::Id copy_id = 0;
  Arena::Id backward_copy_id = 0;

  // Bound after allocation.
  dnnl::memory master, grad, copy;
  dnnl::memory backward_copy;      // == copy unless backward_copy_desc is set
  dnnl::reorder to_copy;           // master -> copy, CopyMode::reorder
  dnnl::reorder to_backward_copy;  // copy -> backward_copy, when there is one
};

// Describes a kernel slot from the layouts oneDNN chose: the gradient's (which the master and
// state follow) and the forward weights' (the copy's).
void describe_kernel(ParamSlot& slot, const dnnl::memory::desc& keras_desc,
                     const dnnl::memory::desc& grad_desc, const dnnl::memory::desc& weights_desc,
                     Storage storage);
// Describes a float32 bias slot (a float16-rounded copy under float16 storage).
void describe_bias(ParamSlot& slot, const dnnl::memory::desc& bias_desc, Storage storage);
// The same layout with another element type.
dnnl::memory::desc with_type(const dnnl::memory::desc& desc, dnnl::memory::data_type type);

class CpuNode {
 public:
  virtual ~CpuNode() = default;

  // Reserves scratch buffers; returns the largest oneDNN scratchpad its primitives need.
  virtual std::size_t reserve(Arena& arena) {
    (void)arena;
    return 0;
  }
  // Creates memory objects and argument maps once the arena exists; `scratchpad` is shared by
  // every primitive (they run one at a time).
  virtual void bind(const Arena& arena, const dnnl::memory& scratchpad) {
    (void)arena;
    (void)scratchpad;
  }
  virtual void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
                       std::uint64_t step) = 0;
  // dx is null when nothing upstream needs the input gradient.
  virtual void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                        const Tensor* dx) = 0;
  // The node's parameter groups (Dense, Conv2D); registered with the executor at planning.
  virtual std::vector<ParamSlot*> params() { return {}; }
  // The end of a training step (mixed_float8's scale updates); `applied`: the update was made
  // (not skipped by loss scaling).
  virtual void end_training_step(bool /*applied*/) {}
  // mixed_float8: the FP8 tensors' figures of the training step just ended (StepResult::fp8),
  // with their layer set and `part` 0; nothing otherwise.
  virtual void append_fp8_steps(std::vector<Fp8TensorStep>& /*out*/) {}
  // mixed_float8: the starting weights' saved FP8 scales and amax histories into its FP8
  // matmul; false when it runs none.
  virtual bool restore_fp8(Fp8StateRestorer& /*restorer*/) { return false; }
  // The output shares the input's buffer (Flatten): no copy forward, none backward.
  virtual bool aliases_input() const { return false; }

  int layer = -1;     // the Keras layer this node belongs to
  std::string label;  // "Dense", "Cast", "Activation(relu)", ...
  Storage out_storage = Storage::f32;
};

// Executes a primitive on the context's stream with the shared scratchpad, turning dnnl::error
// into BackendError naming the node.
// Argument maps are built once per node (bind) and their handles re-pointed per call, so the
// step loop builds no maps.
using ArgMap = std::unordered_map<int, dnnl::memory>;
void execute(CpuContext& ctx, const dnnl::primitive& p, const ArgMap& args, const std::string& node,
             const char* part);

// A primitive attribute asking for the user scratchpad (ours, in the arena).
dnnl::primitive_attr scratchpad_attr();

}  // namespace mixlab::cpu
