// Predicting another device from this one's timings (issue 28, section 2), after Habitat (Yu et
// al., USENIX ATC '21), which scales each operation measured on the GPU at hand to another GPU.
// Each layer's forward and backward, timed here, carry to the target as the ratio of their timed
// kernel time to this device's roofline model of them, applied to the target's roofline model:
// compute-bound work so scales by the ratio of the roofs (the target's tile and wave
// quantization included), memory-bound work by the ratio of the bandwidths, and launches cost
// the target's overhead. Where the kernels differ in kind, the target's analytical model stands
// and the layer says why: the CPU's kernels against a GPU's; tensor cores against none; 16-bit
// math emulated against native; another GPU architecture's GEMM and convolution kernels (cuBLAS
// and cuDNN pick other kernels per architecture: Habitat learns those with small models, MixLab
// models them).
#pragma once

#include <string>

#include "engine/doctor/cost_model.h"

namespace mixlab::doctor {

// What must match between two devices for an item's time to scale: "tensor-core GEMMs (sm_90)",
// "float32 GEMMs (sm_80)", "GPU memory-bound kernels", "CPU kernels".
std::string kernel_family(const CostItem& item, const DeviceProfile& device);

// `there`: the target's prediction (predict_step on its profile); `here`: this device's, with its
// layers timed (apply_layer_times). Each of `there`'s layers' forward and backward, and the
// optimizer's step, whose kernels are of the same families as here's and were timed, is scaled
// (CostItem::scaled, model_s keeping the target's model); the others keep the model, their
// reason in there.modelled_why. Sets there.scaled_source.
void scale_layer_times(StepCost& there, const StepCost& here, const DeviceProfile& here_device,
                       const DeviceProfile& there_device);

}  // namespace mixlab::doctor
