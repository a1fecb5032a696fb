#include "engine/doctor/scaling.h"

#include <set>

namespace mixlab::doctor {

namespace {

std::string architecture(const DeviceProfile& d) {
  std::string sm = "sm_";
  for (const char c : d.compute_capability) {
    if (c != '.') sm += c;
  }
  return sm;
}

bool backward(CostPhase p) {
  return p == CostPhase::backward_data || p == CostPhase::backward_weights;
}

// A layer's forward (direction 0) or backward (1), or the optimizer's step (layer -1).
struct Group {
  int layer;
  int direction;
  bool contains(const CostItem& i) const {
    if (layer < 0) {
      return i.layer < 0 && (i.phase == CostPhase::optimizer || i.phase == CostPhase::loss_scaling);
    }
    return i.layer == layer && (backward(i.phase) ? 1 : 0) == direction;
  }
};

}  // namespace

std::string kernel_family(const CostItem& item, const DeviceProfile& device) {
  if (!device.is_gpu()) return "CPU kernels (oneDNN's and MixLab's)";
  if (!item.gemm) return "GPU memory-bound kernels";
  const std::string what = item.kind == TimeKind::convolution ? "convolutions" : "GEMMs";
  const std::string arch = " (" + architecture(device) + ")";
  if (item.dtype == DType::f32) return "float32 " + what + arch;
  if (item.emulated) return "16-bit " + what + " emulated in float32" + arch;
  if (!device.tensor_cores || item.misaligned_without_tensor_cores) {
    return "16-bit " + what + " on CUDA cores" + arch;
  }
  return "tensor-core " + what + arch;
}

void scale_layer_times(StepCost& there, const StepCost& here, const DeviceProfile& here_device,
                       const DeviceProfile& there_device) {
  int max_layer = -1;
  for (const CostItem& i : there.items) max_layer = std::max(max_layer, i.layer);
  int scaled_layers = 0, modelled_layers = 0;
  for (int layer = -1; layer <= max_layer; ++layer) {
    bool any = false, all_scaled = true;
    for (int direction = 0; direction < (layer < 0 ? 1 : 2); ++direction) {
      const Group g{layer, direction};
      std::set<std::string> families_here, families_there;
      bool timed = false;
      double measured = 0.0, modelled = 0.0, overhead = 0.0;
      for (const CostItem& i : here.items) {
        if (!g.contains(i)) continue;
        timed |= i.measured;
        families_here.insert(kernel_family(i, here_device));
        measured += i.time_s();
        modelled += i.measured ? i.model_s : i.time_s();
        // Launches as modelled: the kernel's part is the rest.
        overhead += i.launches * here_device.launch_overhead_s;
      }
      bool in_there = false;
      for (const CostItem& i : there.items) {
        if (!g.contains(i) || i.time_s() <= 0.0) continue;
        in_there = true;
        families_there.insert(kernel_family(i, there_device));
      }
      if (!in_there) continue;  // nothing of it runs there (fused into another kernel)
      any = true;
      std::string why;
      const double kernel_model = modelled - overhead;
      if (!timed) {
        why = "not timed on " + here_device.name;
      } else if (families_here != families_there) {
        // The first of the target's kernel families that here lacks, against here's.
        std::string there_family = *families_there.begin();
        for (const std::string& f : families_there) {
          if (!families_here.contains(f)) {
            there_family = f;
            break;
          }
        }
        std::string here_families;
        for (const std::string& f : families_here) {
          here_families += (here_families.empty() ? "" : ", ") + f;
        }
        why = "its kernels differ: " + there_family + " on " + there_device.name + ", " +
              here_families + " on " + here_device.name;
      } else if (kernel_model <= 0.0) {
        why = "no kernel time here to scale";
      }
      if (!why.empty()) {
        all_scaled = false;
        if (!there.modelled_why.contains(layer)) there.modelled_why[layer] = why;
        continue;
      }
      // The timed kernels' time against this device's model of them, carried over.
      const double ratio = std::max(0.0, measured - overhead) / kernel_model;
      for (CostItem& i : there.items) {
        if (!g.contains(i)) continue;
        i.model_s = i.time_s();
        i.scaled = true;
        i.compute_s *= ratio;
        i.memory_s *= ratio;
      }
    }
    if (layer < 0 || !any) continue;
    (all_scaled ? scaled_layers : modelled_layers) += 1;
  }
  there.scaled_source = "each layer timed on " + here_device.name + " and scaled to " +
                        there_device.name + " (" + std::to_string(scaled_layers) + " scaled, " +
                        std::to_string(modelled_layers) +
                        " modelled where the kernels differ or were not timed)";
}

}  // namespace mixlab::doctor
