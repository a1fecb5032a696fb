#include "engine/backend/cpu/cpu_node.h"

#include "engine/core/error.h"

#include <cmath>
#include <random>

namespace mixlab::cpu {

void execute(CpuContext& ctx, const dnnl::primitive& p, const ArgMap& args, const std::string& node,
             const char* part) {
  try {
    p.execute(ctx.stream, args);
  } catch (const dnnl::error& e) {
    throw BackendError("oneDNN error in " + node + " " + part + ": " + e.what());
  }
}

dnnl::primitive_attr scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory::desc with_type(const dnnl::memory::desc& desc, dnnl::memory::data_type type) {
  dnnl_memory_desc_t c = desc.data;
  c.data_type = static_cast<dnnl_data_type_t>(type);
  return dnnl::memory::desc(c);
}

void describe_kernel(ParamSlot& slot, const dnnl::memory::desc& keras_desc,
                     const dnnl::memory::desc& grad_desc, const dnnl::memory::desc& weights_desc,
                     Storage storage) {
  using dt = dnnl::memory::data_type;
  slot.kind = ParamKind::kernel;
  slot.keras_desc = keras_desc;
  slot.grad_desc = grad_desc;
  slot.grad_storage = grad_desc.data_type() == dt::bf16 ? Storage::bf16 : Storage::f32;
  slot.master_desc = with_type(grad_desc, dt::f32);
  slot.copy_desc = weights_desc;
  slot.copy_storage = storage;
  if (storage == Storage::f32 && weights_desc == slot.master_desc) {
    slot.copy_mode = CopyMode::master;
  } else if (with_type(weights_desc, dt::f32) == slot.master_desc) {
    slot.copy_mode = CopyMode::elementwise;
  } else {
    slot.copy_mode = CopyMode::reorder;
  }
}

void describe_bias(ParamSlot& slot, const dnnl::memory::desc& bias_desc, Storage storage) {
  slot.kind = ParamKind::bias;
  slot.keras_desc = slot.grad_desc = slot.master_desc = slot.copy_desc = bias_desc;
  slot.grad_storage = Storage::f32;
  slot.copy_storage = is_rounded(storage) ? storage : Storage::f32;
  slot.copy_mode = is_rounded(storage) ? CopyMode::elementwise : CopyMode::master;
}

}  // namespace mixlab::cpu
