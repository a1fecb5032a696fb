#include "engine/doctor/cost_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "engine/core/error.h"
#include "engine/doctor/library_rules.h"
#include "engine/spec/shape_inference.h"

namespace mixlab::doctor {

std::string_view to_string(CostPhase phase) {
  switch (phase) {
    case CostPhase::data: return "data";
    case CostPhase::forward: return "forward";
    case CostPhase::loss: return "loss";
    case CostPhase::backward_data: return "backward data";
    case CostPhase::backward_weights: return "backward weights";
    case CostPhase::loss_scaling: return "loss scaling";
    case CostPhase::optimizer: return "optimizer";
  }
  return "?";
}

std::string_view to_string(TimeKind kind) {
  switch (kind) {
    case TimeKind::matmul: return "matmul";
    case TimeKind::convolution: return "convolution";
    case TimeKind::elementwise: return "elementwise";
    case TimeKind::casts: return "casts";
    case TimeKind::optimizer: return "optimizer";
    case TimeKind::loss_scaling: return "loss scaling";
    case TimeKind::data: return "data";
    case TimeKind::overhead: return "overhead";
  }
  return "?";
}

GemmQuantization quantize_gemm(const GemmShape& gemm, int tile_m, int tile_n, int sm_count) {
  GemmQuantization q;
  q.tile_m = tile_m;
  q.tile_n = tile_n;
  if (gemm.m <= 0 || gemm.n <= 0 || sm_count <= 0) return q;
  const std::int64_t tm = (gemm.m + tile_m - 1) / tile_m;
  const std::int64_t tn = (gemm.n + tile_n - 1) / tile_n;
  q.tiles = tm * tn;
  q.waves = (q.tiles + sm_count - 1) / sm_count;
  q.tile_efficiency = static_cast<double>(gemm.m) * static_cast<double>(gemm.n) /
                      (static_cast<double>(tm * tile_m) * static_cast<double>(tn * tile_n));
  q.wave_efficiency = static_cast<double>(q.tiles) / static_cast<double>(q.waves * sm_count);
  return q;
}

GemmQuantization quantize_gemm(const GemmShape& gemm, int sm_count) {
  // A smaller tile reuses its operands less: it must waste clearly less to be chosen. The
  // weights are this model's, not cuBLAS's heuristics (which are not published).
  struct Tile {
    int m, n;
    double reuse;
  };
  constexpr std::array<Tile, 4> kTiles{{{256, 128, 1.0}, {128, 128, 0.95}, {128, 64, 0.85},
                                        {64, 64, 0.7}}};
  constexpr std::int64_t kMinSplitDepth = 512;
  GemmQuantization best;
  double best_score = -1.0;
  for (const Tile& t : kTiles) {
    GemmQuantization q = quantize_gemm(gemm, t.m, t.n, sm_count);
    if (q.tiles > 0 && q.tiles < sm_count && gemm.k >= 2 * kMinSplitDepth) {
      const std::int64_t split =
          std::min<std::int64_t>(sm_count / q.tiles, gemm.k / kMinSplitDepth);
      if (split > 1) {
        q.split_k = static_cast<int>(split);
        q.tiles *= split;
        q.waves = (q.tiles + sm_count - 1) / sm_count;
        q.wave_efficiency =
            static_cast<double>(q.tiles) / static_cast<double>(q.waves * sm_count);
      }
    }
    const double score = q.efficiency() * t.reuse;
    if (score > best_score + 1e-12) {
      best = q;
      best_score = score;
    }
  }
  return best;
}

double misaligned_efficiency(const DeviceProfile& device) {
  return device.misaligned_matmul_efficiency > 0 ? device.misaligned_matmul_efficiency
                                                 : kMisalignedEfficiencyEstimate;
}

std::int64_t storage_bytes(const DeviceProfile& device, DType dtype) {
  if (dtype == DType::f32) return 4;
  if (device.is_gpu()) return 2;
  // The CPU backend keeps float16 as float32 everywhere, bfloat16 in 16 bits only where oneDNN
  // has bf16 kernels.
  return dtype == DType::bf16 && has_bf16_kernels(device.isa) ? 2 : 4;
}

namespace {

// The CPU's FP8 emulation, per value and thread: MixLab's quantize-dequantize loop
// (weighted_node.cpp, the FP8 rounding by table: fp8_table.h) measured on a 2-core AMD EPYC
// (AVX2): fashion-mlp at batch 128 spends 0.68 ms more a step in mixed_float8 than in
// mixed_bfloat16 on its 216 K rounded values (doctor --measure), 6 ns a value on each of the two
// threads (15 ns with the branchy rounding before the table).
constexpr double kFp8EmulationSecondsPerValue = 6e-9;

// Builds the items of one step.
class Model {
 public:
  Model(const ExecutionPlan& plan, const DeviceProfile& device, const RunConfig& run)
      : plan_(plan), device_(device), run_(run) {
    // CUDA graphs replay the launches: a fraction of the overhead.
    overhead_s_ = device.launch_overhead_s * (device.is_gpu() && run.cuda_graphs ? 0.3 : 1.0);
    fp8_policy_ = plan.policy == Policy::mixed_float8;
    fp8_cores_ = fp8_policy_ && has_fp8_roof(device);
  }

  std::vector<CostItem> items() {
    data();
    for (std::size_t n = 0; n < plan_.nodes.size(); ++n) node(static_cast<int>(n));
    loss();
    const int end = static_cast<int>(items_.size());
    // Backward runs from the last node down: order the items as they run.
    std::vector<CostItem> ordered;
    for (CostItem& item : items_) {
      if (item.phase != CostPhase::backward_data && item.phase != CostPhase::backward_weights) {
        ordered.push_back(std::move(item));
      }
    }
    for (int i = end - 1; i >= 0; --i) {
      CostItem& item = items_[static_cast<std::size_t>(i)];
      if (item.phase == CostPhase::backward_data || item.phase == CostPhase::backward_weights) {
        ordered.push_back(std::move(item));
      }
    }
    items_ = std::move(ordered);
    loss_scaling();
    fp8_scales();
    optimizer();
    return std::move(items_);
  }

 private:
  bool gpu() const { return device_.is_gpu(); }
  // mixed_float8 on the CPU: its bfloat16 is emulated (float32 values rounded), whatever the
  // CPU's bf16 kernels, for the FP8 rounding to act on them (the CPU executor's lowering).
  bool cpu_fp8() const { return fp8_policy_ && !gpu(); }
  double elem(DType d) const {
    if (cpu_fp8() && d != DType::f32) return 4.0;
    return static_cast<double>(storage_bytes(device_, d));
  }
  bool emulated(DType d) const {
    return d != DType::f32 && (cpu_fp8() || matmul_peak(device_, d, false) <= 0.0);
  }

  // Adds `bytes` of elements of `dtype` to the item.
  void move(CostItem& item, DType dtype, double elements) const {
    if (elem(dtype) == 2) {
      item.bytes_16 += 2 * elements;
    } else {
      item.bytes_f32 += 4 * elements;
    }
  }

  CostItem& add(int node, CostPhase phase, TimeKind kind, DType dtype, std::string label) {
    CostItem item;
    item.node = node;
    item.layer = node >= 0 ? plan_.nodes[static_cast<std::size_t>(node)].layer : -1;
    item.phase = phase;
    item.kind = kind;
    item.dtype = dtype;
    item.label = std::move(label);
    item.launches = 1;
    items_.push_back(std::move(item));
    return items_.back();
  }

  // Finishes an item's times from its counts.
  void time(CostItem& item, double peak, double bandwidth_efficiency = 1.0) const {
    item.peak_flops = peak > 0 ? peak : device_.peak.float32;
    item.compute_s = item.flops / item.peak_flops;
    item.memory_s = item.bytes() / (device_.bandwidth_bytes_per_s * bandwidth_efficiency);
    item.overhead_s = item.launches * overhead_s_;
  }

  // A convolution's rate as a fraction of its dtype's matmul peak on this CPU: the measured
  // wide (64 channels and more) and narrow (16 and fewer) figures, log-interpolated by the
  // narrower of its input and output channels.
  double convolution_efficiency(bool bf16, std::int64_t channels) const {
    // 0: not measured (a published profile, a CPU without bf16 kernels): the figure above it.
    const auto or_else = [](double measured, double fallback) {
      return measured > 0 ? measured : fallback;
    };
    const double wide =
        bf16 ? or_else(device_.bf16_convolution_efficiency, device_.convolution_efficiency)
             : device_.convolution_efficiency;
    const double narrow = or_else(
        bf16 ? device_.bf16_narrow_convolution_efficiency : device_.narrow_convolution_efficiency,
        wide);
    const double t =
        std::clamp(std::log2(static_cast<double>(std::max<std::int64_t>(channels, 1)) / 16.0) / 2.0,
                   0.0, 1.0);  // 16 -> 0, 64 -> 1
    return std::pow(narrow, 1.0 - t) * std::pow(wide, t);
  }

  // The roof of a GEMM of `dtype` with these dimensions; records emulation, alignment and
  // quantization on the item. `conv_channels`: a convolution's narrower channel count.
  double gemm_peak(CostItem& item, DType dtype, std::int64_t conv_channels = 0) const {
    double peak = cpu_fp8() && dtype != DType::f32 ? 0.0 : matmul_peak(device_, dtype, run_.tf32);
    if (item.fp8) peak = device_.peak.fp8;
    if (peak <= 0.0) {
      item.emulated = true;  // float32 math with 16-bit rounding (or no such path at all)
      peak = device_.peak.float32;
    }
    if (gpu() && dtype != DType::f32 && device_.tensor_cores && !item.misaligned.empty()) {
      // NVIDIA's guide (library_rules.h): before cuBLAS 11.0 and cuDNN 7.6.3 a 16-bit GEMM
      // whose dimensions are not multiples of 8 ran without tensor cores (modelled at
      // float32's rate); from them on it runs on them at a lower efficiency, measured by the
      // GPU calibration or estimated.
      const LibraryRule& rule = item.kind == TimeKind::convolution
                                    ? kMisalignedConvolutionOnTensorCores
                                    : kMisalignedGemmOnTensorCores;
      if (holds(rule, device_.libraries)) {
        peak *= misaligned_efficiency(device_);
      } else {
        item.misaligned_without_tensor_cores = true;
        peak = device_.peak.float32;
      }
    }
    if (item.kind == TimeKind::convolution) {
      const bool bf16 = !item.emulated && dtype == DType::bf16;
      peak *= convolution_efficiency(bf16, conv_channels);
      if (bf16 && item.phase == CostPhase::backward_weights &&
          device_.bf16_weights_gradient_efficiency > 0) {
        peak *= device_.bf16_weights_gradient_efficiency;
      }
    }
    if (device_.small_gemm_efficiency < 1.0) {
      const double smallest = static_cast<double>(
          std::min({item.shape.m, item.shape.n, item.shape.k}));
      const double t = std::clamp(std::log2(smallest / 32.0) / 4.0, 0.0, 1.0);  // 32 -> 512
      peak *= std::pow(device_.small_gemm_efficiency, 1.0 - t);
    }
    if (gpu() && device_.sm_count > 0) {
      item.quantization = quantize_gemm(item.shape, device_.sm_count);
      peak *= item.quantization.efficiency();
    }
    return peak;
  }

  // The measured fraction of the streaming rate that this CPU's kernels reach on a memory-bound
  // layer (oneDNN's batch normalization, or MixLab's elementwise loops), on the item's tensors'
  // dtype; 1 where not measured (a GPU, a published profile).
  double memory_efficiency(const CostItem& item, bool normalization) const {
    if (gpu()) return 1.0;
    const bool bf16 = elem(item.dtype) == 2;
    const double e =
        normalization
            ? (bf16 ? device_.bf16_normalization_efficiency : device_.normalization_efficiency)
            : (bf16 ? device_.bf16_elementwise_efficiency : device_.elementwise_efficiency);
    return e > 0 ? e : 1.0;
  }

  // The first dimension (of those named) that is not a multiple of 8, for 16-bit math on a GPU.
  void check_alignment(CostItem& item, DType dtype,
                       std::initializer_list<std::pair<const char*, std::int64_t>> dims) const {
    if (!gpu() || dtype == DType::f32) return;
    for (const auto& [name, value] : dims) {
      if (value % kTensorCoreMultiple16Bit != 0) {
        item.misaligned = name;
        item.misaligned_value = value;
        return;
      }
    }
  }

  // The CPU rounds what an emulated 16-bit node writes in a pass of its own.
  void rounding(int node, CostPhase phase, DType dtype, double elements, const std::string& what) {
    if (gpu() || !emulated(dtype) || elements <= 0) return;
    CostItem& r = add(node, phase, TimeKind::casts, dtype,
                      what + " " + std::string(to_string(dtype)) + " rounding (emulated)");
    r.bytes_f32 = 8 * elements;
    r.flops = elements;
    r.launches = 0;
    time(r, 0);
  }

  // The first of a GEMM's dimensions that is not a multiple of 16, for an FP8 node on FP8
  // tensor cores; empty otherwise.
  std::pair<std::string, std::int64_t> fp8_misalignment(
      const PlanNode& node,
      std::initializer_list<std::pair<const char*, std::int64_t>> dims) const {
    if (!node.fp8 || !fp8_cores_) return {};
    for (const auto& [name, value] : dims) {
      if (value % kTensorCoreMultipleFp8 != 0) return {name, value};
    }
    return {};
  }

  // An FP8 node's casts of `elements` values (its input and kernel, or its output's gradient):
  // on FP8 tensor cores (`cores`) a fused cast, transpose and amax kernel per tensor reading the
  // 16-bit values (the float32 gradient) and writing two FP8 copies, as Transformer Engine's
  // cast_transpose (cuBLASLt's FP8 GEMMs take A transposed, B not); on the CPU the emulation's
  // pass over float32 values (scale, round to bfloat16 and FP8, count, amax) in place.
  void fp8_casts(int n, const PlanNode& node, CostPhase phase, double elements,
                 const std::string& what, bool cores, int tensors) {
    if (!node.fp8) return;
    if (cores) {
      CostItem& c = add(n, phase, TimeKind::casts, DType::bf16,
                        node.label + " " + what + " FP8 cast, transpose and amax");
      if (phase == CostPhase::forward)
        c.bytes_16 = 2 * elements;
      else
        c.bytes_f32 = 4 * elements;
      c.bytes_8 = 2 * elements;
      c.flops = 3 * elements;
      c.launches = tensors;
      time(c, 0);
      return;
    }
    if (gpu()) return;  // off the FP8 tensor cores a GPU's layer runs in bfloat16
    CostItem& r = add(n, phase, TimeKind::casts, DType::bf16,
                      node.label + " " + what + " FP8 rounding (emulated)");
    r.bytes_f32 = 8 * elements;
    r.flops = 6 * elements;
    r.launches = 0;
    time(r, 0, memory_efficiency(r, false));
    // Scalar and branchy (a division, three roundings, the format's encode and decode): its
    // time per value, not the matmul roof, bounds it.
    r.compute_s = std::max(r.compute_s,
                           elements * kFp8EmulationSecondsPerValue / std::max(1, device_.threads));
  }

  // mixed_float8's delayed scaling after the step: every FP8 tensor's amax history rolled and
  // its scale computed (three tensors a node), in one kernel on a GPU (Transformer Engine's
  // amax_and_scale_update), in a loop on the CPU.
  void fp8_scales() {
    const double tensors =
        3.0 * static_cast<double>(std::count_if(plan_.nodes.begin(), plan_.nodes.end(),
                                                [](const PlanNode& node) { return node.fp8; }));
    if (tensors == 0 || (gpu() && !fp8_cores_)) return;
    const double history = std::max(1, run_.fp8.history);
    CostItem& s = add(-1, CostPhase::loss_scaling, TimeKind::loss_scaling, DType::f32,
                      "FP8 amax histories and scales");
    s.bytes_f32 = tensors * (8 * history + 8);
    s.flops = tensors * history;
    s.launches = gpu() ? 1 : 0;
    time(s, 0);
  }

  void data() {
    const double elements = static_cast<double>(plan_.batch) * num_elements(plan_.input_shape);
    if (gpu() && !run_.data_on_device) {
      CostItem& c = add(-1, CostPhase::data, TimeKind::data, DType::f32, "input batch copy to the GPU");
      c.bytes_f32 = 4 * elements + 4 * plan_.batch;
      c.launches = 2;
      c.peak_flops = device_.peak.float32;
      c.memory_s = c.bytes() / device_.host_link_bytes_per_s;
      c.overhead_s = c.launches * overhead_s_;
      return;
    }
    CostItem& g = add(-1, CostPhase::data, TimeKind::data, DType::f32,
                      gpu() ? "input batch gathered on the GPU" : "input batch gathered");
    g.bytes_f32 = 8 * elements + 8 * plan_.batch;
    g.launches = gpu() ? 1 : 0;
    time(g, 0);
  }

  void node(int n) {
    const PlanNode& node = plan_.nodes[static_cast<std::size_t>(n)];
    const double in = static_cast<double>(plan_.in_elements(n));
    const double out = static_cast<double>(plan_.out_elements(n));
    const DType d = node.out_dtype;
    // The input's gradient is computed (a dense or conv's own weight gradients are, whenever
    // the node runs backward at all).
    const bool backward = node.backward && std::any_of(node.inputs.begin(), node.inputs.end(),
                                                       [](const PlanInput& i) { return i.grad; });
    const std::string& label = node.label;
    accumulations(n, node);
    switch (node.op) {
      case PlanOp::dense:
        dense(n, node, backward);
        break;
      case PlanOp::conv2d:
        conv(n, node, backward);
        break;
      case PlanOp::pooling: {
        const double window = in / std::max(out, 1.0);  // about the window's elements
        CostItem& f = add(n, CostPhase::forward, TimeKind::elementwise, d, label + " forward");
        move(f, node.in_dtype, in);
        move(f, d, out);
        f.flops = in;
        time(f, 0, device_.pooling_efficiency);
        rounding(n, CostPhase::forward, d, out, label);
        if (backward) {
          CostItem& b = add(n, CostPhase::backward_data, TimeKind::elementwise, d,
                            label + " backward");
          b.bytes_f32 = 4 * out + 4 * in;  // the gradient in, the gradient out
          move(b, node.in_dtype, in);      // the input, for the max's position
          b.flops = in + window;
          time(b, 0, device_.pooling_efficiency);
        }
        break;
      }
      case PlanOp::flatten:
        break;
      case PlanOp::zero_padding: {
        CostItem& f = add(n, CostPhase::forward, TimeKind::elementwise, d, label + " padding");
        move(f, node.in_dtype, in);
        move(f, d, out);
        time(f, 0, memory_efficiency(f, false));
        if (backward) {
          CostItem& b = add(n, CostPhase::backward_data, TimeKind::elementwise, d,
                            label + " padding backward");
          b.bytes_f32 = 4 * out + 4 * in;
          time(b, 0, memory_efficiency(b, false));
        }
        break;
      }
      case PlanOp::batch_norm: {
        // Memory-bound, in float32 whatever the tensors' dtype: training reads the input twice
        // (the statistics, then the normalization) and writes the output; backward reads the
        // input and the gradient twice (the sums, then the input's gradient).
        CostItem& f = add(n, CostPhase::forward, TimeKind::elementwise, d,
                          label + " batch_norm (float32 statistics)");
        move(f, node.in_dtype, 2 * in);
        move(f, d, out);
        f.flops = 5 * out;
        f.launches = gpu() ? 2 : 0;
        time(f, 0, memory_efficiency(f, true));
        rounding(n, CostPhase::forward, d, out, label);
        if (node.backward) {
          CostItem& b = add(n, CostPhase::backward_data, TimeKind::elementwise, d,
                            label + " batch_norm backward");
          move(b, node.in_dtype, 2 * in);
          b.bytes_f32 += 4 * 2 * out + (backward ? 4 * in : 0);
          b.flops = 8 * out;
          b.launches = gpu() ? 2 : 0;
          time(b, 0, memory_efficiency(b, true));
        }
        break;
      }
      case PlanOp::layer_norm: {
        // Memory-bound, float32 statistics per row: forward reads the input twice (the
        // statistics) and once more (the output); backward reads the input and the gradient for
        // the row sums and again for the input's gradient, and once for dgamma and dbeta.
        CostItem& f = add(n, CostPhase::forward, TimeKind::elementwise, d,
                          label + " layer_norm (float32 statistics)");
        move(f, node.in_dtype, 3 * in);
        move(f, d, out);
        f.flops = 6 * out;
        f.launches = gpu() ? 1 : 0;
        time(f, 0, memory_efficiency(f, true));
        rounding(n, CostPhase::forward, d, out, label);
        if (node.backward) {
          CostItem& b = add(n, CostPhase::backward_data, TimeKind::elementwise, d,
                            label + " layer_norm backward");
          move(b, node.in_dtype, 3 * in);
          move(b, d, 3 * out);
          if (backward) move(b, d, in);
          b.flops = 10 * out;
          b.launches = gpu() ? 3 : 0;
          time(b, 0, memory_efficiency(b, true));
        }
        break;
      }
      case PlanOp::attention: {
        const double b = static_cast<double>(plan_.batch);
        const double s = static_cast<double>(node.out_shape.front());
        const double h = node.heads, kd = node.key_dim, vd = node.value_dim;
        const double scores = b * h * s * s;
        const double projections = b * s * h * (2 * kd + vd);
        if (predicts_fused_attention(device_, run_) && fused_attention_applies(device_, node)) {
          // cuDNN's fused attention (flash-style): the scores never leave the chip; the four
          // GEMMs of forward (scores, weighted values) and backward (recomputed scores, dP, dV,
          // dQ, dK) on tensor cores; memory: the projections, the output, its gradient and the
          // row statistics.
          CostItem& f = add(n, CostPhase::forward, TimeKind::matmul, d,
                            label + " (fused: cuDNN scaled dot-product attention)");
          f.gemm = true;
          f.flops = 2 * scores * (kd + vd) + 5 * scores;
          move(f, d, projections + out);
          f.bytes_f32 += 4 * b * h * s;
          f.launches = 1;
          // The score GEMMs are S x S: a sequence length off a multiple of 8 pads its tiles.
          check_alignment(f, d, {{"sequence length", node.out_shape.front()}});
          time(f, gemm_peak(f, d));
          if (node.backward) {
            CostItem& g =
                add(n, CostPhase::backward_data, TimeKind::matmul, d, label + " backward (fused)");
            g.gemm = true;
            g.flops = 2 * scores * (3 * kd + 2 * vd) + 5 * scores;
            move(g, d, 2 * projections + 2 * out);
            g.bytes_f32 += 8 * b * h * s;
            g.launches = 2;
            check_alignment(g, d, {{"sequence length", node.out_shape.front()}});
            time(g, gemm_peak(g, d));
          }
          break;
        }
        if (gpu()) {
          // MixLab's unfused attention on a GPU: six cuBLASLt strided-batched GEMMs (a launch
          // per head each) on tensor cores, the scores and weights through memory in the
          // layer's dtype, and the float32 softmax and its backward as kernels between them.
          // Forward: Q K^T writes S, the softmax reads it and writes P in place, P V reads P.
          CostItem& f = add(n, CostPhase::forward, TimeKind::matmul, d,
                            label + " (unfused: cuBLASLt scores and weighted values)");
          f.gemm = true;
          f.flops = 2 * scores * (kd + vd);
          move(f, d, projections + out + 2 * scores);
          f.launches = 2 * h;
          check_alignment(f, d, {{"sequence length", node.out_shape.front()}});
          time(f, gemm_peak(f, d));
          CostItem& sm = add(n, CostPhase::forward, TimeKind::elementwise, d,
                             label + " softmax (float32, the scores through memory)");
          move(sm, d, 2 * scores);
          sm.flops = 5 * scores;
          sm.launches = 1;
          time(sm, 0, memory_efficiency(sm, true));
          if (node.backward) {
            // dP = dY V^T (float32) and dV = P^T dY; the softmax's backward reads P and dP and
            // writes dS; dK = dS^T Q and dQ = dS K (float32), then cast into their buffers.
            CostItem& g = add(n, CostPhase::backward_data, TimeKind::matmul, d,
                              label + " backward (unfused: cuBLASLt)");
            g.gemm = true;
            g.flops = 4 * scores * (kd + vd);
            move(g, d, 2 * projections + out + 3 * scores);
            g.bytes_f32 += 4 * scores + 4 * projections;
            g.launches = 4 * h;
            check_alignment(g, d, {{"sequence length", node.out_shape.front()}});
            time(g, gemm_peak(g, d));
            CostItem& sb = add(n, CostPhase::backward_data, TimeKind::elementwise, d,
                               label + " softmax backward and the gradients' casts");
            move(sb, d, 2 * scores + projections);
            sb.bytes_f32 += 4 * scores + 4 * projections;
            sb.flops = 4 * scores;
            sb.launches = 4;
            time(sb, 0, memory_efficiency(sb, true));
          }
          break;
        }
        // MixLab's unfused attention on the CPU: oneDNN's float32 GEMMs a head at a time, the
        // steps x steps weights of every head written in float32 and read back by backward.
        CostItem& f = add(n, CostPhase::forward, TimeKind::matmul, d,
                          label + " (scores, float32 softmax, weighted values)");
        f.flops = 2 * scores * (kd + vd) + 5 * scores;
        move(f, d, projections);
        move(f, d, out);
        f.bytes_f32 += 4 * scores;
        time(f, 0);
        if (node.backward) {
          CostItem& g = add(n, CostPhase::backward_data, TimeKind::matmul, d, label + " backward");
          g.flops = 4 * scores * (kd + vd) + 4 * scores;
          move(g, d, projections + out);
          move(g, d, projections);  // the three gradients cast into their buffers
          g.bytes_f32 += 4 * scores + 8 * projections;
          time(g, 0);
        }
        break;
      }
      case PlanOp::embedding:
      case PlanOp::position_embedding: {
        // A gather (or a broadcast) of float32 table rows into the output; backward zeroes the
        // table's gradient and adds every position's gradient into it.
        CostItem& f = add(n, CostPhase::forward, TimeKind::elementwise, d,
                          label + " " + std::string(to_string(node.op)));
        f.bytes_f32 = 4 * out + (node.op == PlanOp::embedding ? 4 * in : 0);
        move(f, d, out);
        time(f, 0, memory_efficiency(f, false));
        rounding(n, CostPhase::forward, d, out, label);
        if (node.backward) {
          CostItem& b = add(n, CostPhase::backward_weights, TimeKind::elementwise, d,
                            label + " " + std::string(to_string(node.op)) + " backward");
          move(b, d, out);
          b.bytes_f32 = 8 * out;  // read and add into the float32 table rows
          b.flops = out;
          b.launches = gpu() ? 2 : 0;
          time(b, 0, memory_efficiency(b, false));
        }
        break;
      }
      case PlanOp::merge: {
        // Memory-bound: every input read once and the output written; backward writes each
        // input's gradient (a product also reads the other inputs).
        const double k = static_cast<double>(node.inputs.size());
        CostItem& f = add(n, CostPhase::forward, TimeKind::elementwise, d,
                          label + " " + std::string(to_string(node.merge)));
        move(f, node.in_dtype, node.merge == MergeOp::concatenate ? out : k * out);
        move(f, d, out);
        f.flops = node.merge == MergeOp::concatenate ? 0.0 : (k - 1.0) * out;
        time(f, 0, memory_efficiency(f, false));
        rounding(n, CostPhase::forward, d, out, label);
        if (backward) {
          CostItem& b = add(n, CostPhase::backward_data, TimeKind::elementwise, d,
                            label + " " + std::string(to_string(node.merge)) + " backward");
          const double grads = node.merge == MergeOp::concatenate ? out : k * out;
          b.bytes_f32 = 4 * out + 4 * grads;  // the gradient in, each input's out
          if (node.merge == MergeOp::multiply || node.merge == MergeOp::maximum) {
            move(b, d, k * out);  // the inputs it differentiates against
          }
          b.flops = grads;
          time(b, 0, memory_efficiency(b, false));
        }
        break;
      }
      case PlanOp::cast: {
        CostItem& c = add(n, CostPhase::forward, TimeKind::casts, d, label);
        move(c, node.in_dtype, in);
        move(c, d, out);
        c.flops = out;
        if (!gpu() && elem(node.in_dtype) == elem(d)) {
          // Between float32 and emulated 16 bits the CPU rounds in place.
          c.label += " (rounding)";
        }
        time(c, 0);
        break;
      }
      case PlanOp::activation:
      case PlanOp::rescaling:
      case PlanOp::normalization:
      case PlanOp::dropout: {
        double flops_per = 1.0;
        if (node.op == PlanOp::activation) {
          if (node.activation == ActivationFn::softmax) flops_per = 3.0;
          if (node.activation == ActivationFn::gelu) flops_per = 8.0;
          if (node.activation == ActivationFn::sigmoid || node.activation == ActivationFn::tanh ||
              node.activation == ActivationFn::silu || node.activation == ActivationFn::elu)
            flops_per = 4.0;
          if (node.activation == ActivationFn::hard_sigmoid ||
              node.activation == ActivationFn::hard_silu)
            flops_per = 2.0;
        }
        if (node.op == PlanOp::dropout) flops_per = 6.0;  // the counter hash and the select
        CostItem& f = add(n, CostPhase::forward, TimeKind::elementwise, d, label + " " +
                              std::string(to_string(node.op)));
        move(f, node.in_dtype, in);
        move(f, d, out);
        f.flops = flops_per * out;
        time(f, 0, memory_efficiency(f, false));
        rounding(n, CostPhase::forward, d, out, label);
        // The softmax before the cross-entropy is differentiated with the loss.
        const bool with_loss = n + 1 == static_cast<int>(plan_.nodes.size()) &&
                               (plan_.head == LossHead::softmax_crossentropy ||
                                plan_.head == LossHead::sigmoid_binary);
        if (backward && !with_loss) {
          CostItem& b = add(n, CostPhase::backward_data, TimeKind::elementwise, d,
                            label + " " + std::string(to_string(node.op)) + " backward");
          b.bytes_f32 = 8 * out;  // the gradient in and out
          if (node.op == PlanOp::activation) move(b, d, out);  // the output it differentiates
          b.flops = flops_per * out;
          time(b, 0, memory_efficiency(b, false));
        }
        break;
      }
    }
  }

  // Where a branch rejoins, an input's gradient buffer already holds another reader's: the
  // executors write this node's gradient into scratch, then add it in (read both, write one), a
  // pass over float32 gradients the op's own backward does not count.
  void accumulations(int n, const PlanNode& node) {
    if (!node.backward) return;
    for (const PlanInput& input : node.inputs) {
      if (!input.grad || !input.accumulate || input.node == kPlanInput) continue;
      const double elements = static_cast<double>(plan_.out_elements(input.node));
      CostItem& a = add(n, CostPhase::backward_data, TimeKind::elementwise, DType::f32,
                        node.label + " gradient accumulation");
      a.bytes_f32 = 12 * elements;
      a.flops = elements;
      time(a, 0, memory_efficiency(a, false));
    }
  }

  void dense(int n, const PlanNode& node, bool backward) {
    const std::int64_t in = node.in_shape.back();
    const std::int64_t units = node.out_shape.back();
    const std::int64_t rows = plan_.in_elements(n) / in;
    const DType d = node.out_dtype;
    const bool bias = node.params.size() > 1;
    const double m = static_cast<double>(rows), k = static_cast<double>(in),
                 u = static_cast<double>(units);
    const std::string& label = node.label;
    // mixed_float8 on FP8 tensor cores: every dimension a multiple of 16, else the layer runs
    // in bfloat16.
    const std::pair<std::string, std::int64_t> fp8_miss =
        fp8_misalignment(node, {{"batch", rows}, {"input features", in}, {"units", units}});
    const bool fp8 = node.fp8 && fp8_cores_ && fp8_miss.first.empty();
    const auto mark = [&](CostItem& item) {
      item.fp8 = fp8;
      item.fp8_misaligned = fp8_miss.first;
      item.fp8_misaligned_value = fp8_miss.second;
    };
    // Forward: (rows x in) x (in x units).
    {
      fp8_casts(n, node, CostPhase::forward, m * k + k * u, "input and kernel", fp8, 2);
      CostItem& f = add(n, CostPhase::forward, TimeKind::matmul, d, label + " forward");
      f.gemm = true;
      f.shape = {rows, units, in};
      mark(f);
      check_alignment(f, d, {{"batch", rows}, {"input features", in}, {"units", units}});
      f.flops = 2 * m * k * u + (bias ? m * u : 0) + (node.activation != ActivationFn::linear ? m * u : 0);
      if (fp8) {
        f.bytes_8 += m * k + k * u;  // the E4M3 input and kernel
      } else {
        move(f, d, m * k);
        move(f, d, k * u);
      }
      move(f, d, m * u);
      if (bias) f.bytes_f32 += 4 * u;
      time(f, gemm_peak(f, d));
      rounding(n, CostPhase::forward, d, m * u, label);
    }
    // The incoming gradient as the GEMMs read it: in the layer's dtype (cast below on a GPU, as
    // the CPU stores it).
    const double grad = elem(d);
    fp8_casts(n, node, CostPhase::backward_weights, m * u, "gradient", fp8, 1);
    if (gpu() && d != DType::f32 && !fp8) {
      // The float32 activation gradient is cast to the layer's dtype for the tensor cores.
      CostItem& c = add(n, CostPhase::backward_weights, TimeKind::casts, d,
                        label + " gradient cast");
      c.bytes_f32 = 4 * m * u;
      c.bytes_16 = 2 * m * u;
      c.flops = m * u;
      time(c, 0);
    }
    if (node.activation == ActivationFn::relu) {
      // The fused ReLU's gradient (GPU), before the GEMMs.
      CostItem& r = add(n, CostPhase::backward_weights, TimeKind::elementwise, d,
                        label + " relu backward");
      r.bytes_f32 = 8 * m * u;
      move(r, d, m * u);
      r.flops = m * u;
      time(r, 0);
    }
    // Weights: (in x rows) x (rows x units), into the float32 gradient; the bias's sum with it.
    {
      CostItem& w = add(n, CostPhase::backward_weights, TimeKind::matmul, d,
                        label + " backward weights");
      w.gemm = true;
      w.shape = {in, units, rows};
      mark(w);
      check_alignment(w, d, {{"batch", rows}, {"input features", in}, {"units", units}});
      w.flops = 2 * m * k * u + (bias ? m * u : 0);
      w.bytes_f32 += 4 * k * u + (bias ? 4 * u : 0);
      if (fp8) {
        w.bytes_8 += m * k + m * u;  // the transposed E4M3 input and E5M2 gradient
      } else {
        move(w, d, m * k);
        if (grad == 2)
          w.bytes_16 += 2 * m * u;
        else
          w.bytes_f32 += 4 * m * u;
      }
      w.launches = gpu() && bias ? 2 : 1;
      time(w, gemm_peak(w, d));
      rounding(n, CostPhase::backward_weights, d, k * u + (bias ? u : 0), label + " gradient");
    }
    if (backward) {
      // Data: (rows x units) x (units x in), into the float32 activation gradient.
      CostItem& b = add(n, CostPhase::backward_data, TimeKind::matmul, d,
                        label + " backward data");
      b.gemm = true;
      b.shape = {rows, in, units};
      mark(b);
      check_alignment(b, d, {{"batch", rows}, {"units", units}, {"input features", in}});
      b.flops = 2 * m * k * u;
      if (fp8) {
        b.bytes_8 += k * u + m * u;  // the transposed E4M3 kernel and E5M2 gradient
      } else {
        move(b, d, k * u);
        if (grad == 2)
          b.bytes_16 += 2 * m * u;
        else
          b.bytes_f32 += 4 * m * u;
      }
      b.bytes_f32 += 4 * m * k;
      time(b, gemm_peak(b, d));
      rounding(n, CostPhase::backward_data, d, m * k, label + " input gradient");
    }
  }

  void conv(int n, const PlanNode& node, bool backward) {
    // (H, W, C) -> (P, Q, K) with an R x S kernel; implicit GEMMs (NVIDIA's convolution guide):
    // forward (B*P*Q) x (C*R*S) x K, data (B*H*W) x (K*R*S) x C, weights K x (B*P*Q) x (C*R*S).
    const std::int64_t b = plan_.batch;
    const std::int64_t h = node.in_shape[0], w = node.in_shape[1], c = node.in_shape[2];
    const std::int64_t p = node.out_shape[0], q = node.out_shape[1], f = node.out_shape[2];
    const PlanSlot& kernel = plan_.params[static_cast<std::size_t>(node.params.front())];
    const std::int64_t r = kernel.keras_shape[0], s = kernel.keras_shape[1];
    const bool bias = node.params.size() > 1;
    const DType d = node.out_dtype;
    // A grouped (depthwise) convolution: each output reads c / groups channels. No GEMM for
    // the tensor cores: it is memory-bound, timed against the float32 roof and the bandwidth.
    const double groups = static_cast<double>(node.groups);
    const bool grouped = node.groups > 1;
    const double in = static_cast<double>(b * h * w * c), out = static_cast<double>(b * p * q * f),
                 weights = static_cast<double>(r * s * c * f) / groups;
    const double macs = static_cast<double>(b * p * q) * static_cast<double>(c * r * s) *
                        static_cast<double>(f) / groups;
    const std::string& label = node.label;
    const auto peak = [&](CostItem& item) {
      return grouped ? 0.0 : gemm_peak(item, d, std::min(c, f));
    };
    // mixed_float8: the CPU rounds a Conv2D's input, kernel and output gradient through FP8
    // (fp8_casts). A GPU runs a pointwise one whose dimensions are multiples of 16 as a Dense
    // over its pixels on the FP8 GEMMs, and every other convolution in bfloat16 (cuBLASLt's FP8
    // matmuls are GEMMs; the CUDA backend does the same, and the FP8 rules say so).
    const bool pointwise = pointwise_conv(plan_, node);
    const std::pair<std::string, std::int64_t> fp8_miss =
        pointwise
            ? fp8_misalignment(
                  node, {{"output positions", b * p * q}, {"input channels", c}, {"filters", f}})
            : std::pair<std::string, std::int64_t>{};
    if (pointwise && node.fp8 && fp8_cores_ && fp8_miss.first.empty()) {
      dense(n, node, backward);
      return;
    }
    const auto mark = [&](CostItem& item) {
      item.fp8_misaligned = fp8_miss.first;
      item.fp8_misaligned_value = fp8_miss.second;
    };
    fp8_casts(n, node, CostPhase::forward, in + weights, "input and kernel", false, 2);
    {
      CostItem& fw = add(n, CostPhase::forward, TimeKind::convolution, d, label + " forward");
      fw.gemm = !grouped;
      fw.shape = {b * p * q, f, c * r * s};
      mark(fw);
      if (!grouped) check_alignment(fw, d, {{"input channels", c}, {"filters", f}});
      fw.flops = 2 * macs + (bias ? out : 0);
      move(fw, d, in);
      move(fw, d, weights);
      move(fw, d, out);
      time(fw, peak(fw));
      rounding(n, CostPhase::forward, d, out, label);
    }
    const double grad = elem(d);
    fp8_casts(n, node, CostPhase::backward_weights, out, "gradient", false, 1);
    if (gpu() && d != DType::f32) {
      CostItem& cast = add(n, CostPhase::backward_weights, TimeKind::casts, d,
                           label + " gradient cast");
      cast.bytes_f32 = 4 * out;
      cast.bytes_16 = 2 * out;
      cast.flops = out;
      time(cast, 0);
    }
    {
      CostItem& wg = add(n, CostPhase::backward_weights, TimeKind::convolution, d,
                         label + " backward weights");
      wg.gemm = !grouped;
      wg.shape = {f, c * r * s, b * p * q};
      if (!grouped) check_alignment(wg, d, {{"input channels", c}, {"filters", f}});
      wg.flops = 2 * macs + (bias ? out : 0);
      move(wg, d, in);
      if (grad == 2) wg.bytes_16 += 2 * out; else wg.bytes_f32 += 4 * out;
      wg.bytes_f32 += 4 * weights + (bias ? 4.0 * static_cast<double>(f) : 0.0);
      wg.launches = gpu() && bias ? 2 : 1;
      time(wg, peak(wg));
      rounding(n, CostPhase::backward_weights, d, weights + (bias ? f : 0), label + " gradient");
    }
    if (backward) {
      CostItem& dg = add(n, CostPhase::backward_data, TimeKind::convolution, d,
                         label + " backward data");
      dg.gemm = !grouped;
      dg.shape = {b * h * w, c, f * r * s};
      if (!grouped) check_alignment(dg, d, {{"input channels", c}, {"filters", f}});
      dg.flops = 2 * macs;
      move(dg, d, weights);
      if (grad == 2) dg.bytes_16 += 2 * out; else dg.bytes_f32 += 4 * out;
      dg.bytes_f32 += 4 * in;
      time(dg, peak(dg));
      rounding(n, CostPhase::backward_data, d, in, label + " input gradient");
    }
  }

  void loss() {
    const double rows = static_cast<double>(plan_.batch) * static_cast<double>(plan_.classes);
    CostItem& l = add(-1, CostPhase::loss, TimeKind::elementwise, DType::f32,
                      "loss and its gradient");
    l.bytes_f32 = 4 * rows * 3 + 4 * plan_.batch;
    l.flops = 6 * rows;
    l.launches = gpu() ? 2 : 1;
    time(l, 0);
  }

  double param_floats() const {
    double total = 0;
    for (const PlanSlot& slot : plan_.params) total += static_cast<double>(slot.count);
    return total;
  }

  // mixed_float16 scales its loss dynamically, as Keras runs it (and the doctor measures it).
  void loss_scaling() {
    if (plan_.policy != Policy::mixed_float16) return;
    const double p = param_floats();
    if (p == 0) return;
    CostItem& s = add(-1, CostPhase::loss_scaling, TimeKind::loss_scaling, DType::f32,
                      gpu() ? "unscale and finite check of the gradients"
                            : "finite check (in the optimizer's pass)");
    if (gpu()) {
      s.bytes_f32 = 8 * p;  // the float32 gradients read and written
      s.flops = 2 * p;
      s.launches = 2;  // and the scale's state machine
    } else {
      s.launches = 0;  // the CPU checks while it updates: no pass of its own
    }
    time(s, 0);
  }

  void optimizer() {
    const double p = param_floats();
    if (p == 0) return;
    CostItem& o = add(-1, CostPhase::optimizer, TimeKind::optimizer, DType::f32,
                      std::string(to_string(run_.optimizer.kind)) + " update");
    // Master read and written, gradient read, state read and written.
    o.bytes_f32 = (12.0 + 8.0 * plan_.optimizer_states) * p;
    o.flops = (plan_.optimizer_states == 2 ? 12.0 : 3.0) * p;
    if (plan_.copy_dtype != DType::f32) {
      move(o, plan_.copy_dtype, p);  // the 16-bit copies the layers read
      // The CPU writes them to arrays of their own: each cache line is read before it is written.
      if (!gpu()) move(o, plan_.copy_dtype, p);
      o.label += " and " + std::string(to_string(plan_.copy_dtype)) + " weight copies";
    }
    o.launches = gpu() ? 1 : static_cast<int>(plan_.params.size());
    time(o, 0);
  }

 private:
  const ExecutionPlan& plan_;
  const DeviceProfile& device_;
  const RunConfig& run_;
  double overhead_s_ = 0.0;
  bool fp8_policy_ = false;  // mixed_float8
  bool fp8_cores_ = false;   // and the device runs its GEMMs on FP8 tensor cores
  std::vector<CostItem> items_;
};

}  // namespace

bool StepCost::layer_measured(int layer) const {
  return std::any_of(items.begin(), items.end(),
                     [layer](const CostItem& i) { return i.layer == layer && i.measured; });
}

double StepCost::layer_model_seconds(int layer) const {
  double total = 0.0;
  for (const CostItem& item : items) {
    if (item.layer == layer) total += item.measured || item.scaled ? item.model_s : item.time_s();
  }
  return total;
}

bool StepCost::layer_scaled(int layer) const {
  return std::any_of(items.begin(), items.end(),
                     [layer](const CostItem& i) { return i.layer == layer && i.scaled; });
}

std::string_view StepCost::layer_source(int layer) const {
  if (layer_measured(layer)) return "measured";
  if (layer_scaled(layer)) return "scaled";
  return "modelled";
}

namespace {

// Scales `selected` items so that their times add up to `seconds`; without any (or with none
// that takes time) adds one item for it.
template <class Select>
void scale_items(StepCost& cost, Select selected, double seconds, const CostItem& blank) {
  double modelled = 0.0;
  for (const CostItem& item : cost.items)
    if (selected(item)) modelled += item.time_s();
  if (modelled <= 0.0) {
    CostItem item = blank;
    item.measured = true;
    item.compute_s = seconds;
    cost.items.push_back(std::move(item));
    return;
  }
  const double f = seconds / modelled;
  for (CostItem& item : cost.items) {
    if (!selected(item)) continue;
    if (!item.measured) item.model_s = item.time_s();
    item.measured = true;
    item.compute_s *= f;
    item.memory_s *= f;
    item.overhead_s *= f;
  }
}

}  // namespace

void apply_layer_times(StepCost& cost, const std::vector<double>& forward_ms,
                       const std::vector<double>& backward_ms, double optimizer_ms,
                       std::string source) {
  const auto is_backward = [](const CostItem& i) {
    return i.phase == CostPhase::backward_data || i.phase == CostPhase::backward_weights;
  };
  for (std::size_t l = 0; l < forward_ms.size(); ++l) {
    const int layer = static_cast<int>(l);
    CostItem blank;
    blank.layer = layer;
    blank.kind = TimeKind::elementwise;
    blank.phase = CostPhase::forward;
    blank.label = "layer " + std::to_string(layer) + " forward (measured)";
    if (forward_ms[l] >= 0.0) {
      scale_items(
          cost,
          [&](const CostItem& i) { return i.layer == layer && i.phase == CostPhase::forward; },
          forward_ms[l] / 1e3, blank);
    }
    if (l < backward_ms.size() && backward_ms[l] > 0.0) {
      blank.phase = CostPhase::backward_data;
      blank.label = "layer " + std::to_string(layer) + " backward (measured)";
      scale_items(
          cost, [&](const CostItem& i) { return i.layer == layer && is_backward(i); },
          backward_ms[l] / 1e3, blank);
    }
  }
  if (optimizer_ms > 0.0) {
    CostItem blank;
    blank.phase = CostPhase::optimizer;
    blank.kind = TimeKind::optimizer;
    blank.label = "optimizer (measured)";
    scale_items(
        cost,
        [](const CostItem& i) {
          return i.layer < 0 &&
                 (i.phase == CostPhase::optimizer || i.phase == CostPhase::loss_scaling);
        },
        optimizer_ms / 1e3, blank);
  }
  cost.measured_source = std::move(source);
}

double StepCost::step_s() const {
  double data = 0.0, rest = 0.0;
  for (const CostItem& item : items) {
    (item.phase == CostPhase::data ? data : rest) += item.time_s();
  }
  return data_overlapped ? rest + std::max(0.0, data - rest) : rest + data;
}

double StepCost::seconds(TimeKind kind) const {
  double total = 0.0;
  for (const CostItem& item : items) {
    if (kind == TimeKind::overhead) {
      total += item.overhead_s;
    } else if (item.kind == kind) {
      total += item.time_s() - item.overhead_s;
    }
  }
  return total;
}

double StepCost::seconds(CostPhase phase) const {
  double total = 0.0;
  for (const CostItem& item : items) {
    if (item.phase == phase) total += item.time_s();
  }
  return total;
}

double StepCost::layer_seconds(int layer, bool backward) const {
  double total = 0.0;
  for (const CostItem& item : items) {
    if (item.layer != layer) continue;
    const bool is_backward =
        item.phase == CostPhase::backward_data || item.phase == CostPhase::backward_weights;
    if (is_backward == backward) total += item.time_s();
  }
  return total;
}

double StepCost::kernel_s() const {
  double total = 0.0;
  for (const CostItem& item : items) total += item.time_s() - item.overhead_s;
  return total;
}

double StepCost::overhead_s() const { return seconds(TimeKind::overhead); }

int StepCost::launches() const {
  int total = 0;
  for (const CostItem& item : items) total += item.launches;
  return total;
}

double StepCost::bytes() const {
  double total = 0.0;
  for (const CostItem& item : items) total += item.bytes();
  return total;
}

double StepCost::flops() const {
  double total = 0.0;
  for (const CostItem& item : items) total += item.flops;
  return total;
}

StepCost predict_step(const ModelSpec& spec, Policy policy, const RunConfig& run,
                      const DeviceProfile& device) {
  const int batch = run.batch_size;
  if (batch < 1) {
    throw ConfigError("batch size " + std::to_string(batch) + ": it must be at least 1");
  }
  if (device.bandwidth_bytes_per_s <= 0 || device.peak.float32 <= 0) {
    throw ConfigError("device profile " + quote(device.name) + " has no bandwidth or float32 peak");
  }
  const ShapeTable table = infer_shapes(spec, policy);
  const ExecutionPlan plan = build_plan(spec, table, policy, batch, run.optimizer,
                                        device.is_gpu() ? kCudaLowering : kCpuLowering);
  Model model(plan, device, run);
  StepCost cost;
  cost.policy = policy;
  cost.batch = batch;
  cost.support = policy_support(device.device_info(), policy);
  cost.items = model.items();
  cost.memory = plan.memory();
  cost.device_memory_bytes = device.is_gpu() ? device.memory_bytes : 0;
  cost.params = table.params_total;
  cost.data_overlapped = device.is_gpu();
  return cost;
}

double roofline_bound_s(const ModelSpec& spec, Policy policy, const RunConfig& run,
                        const DeviceProfile& device) {
  DeviceProfile bare = device;
  bare.small_gemm_efficiency = 1.0;
  bare.convolution_efficiency = 1.0;
  bare.narrow_convolution_efficiency = 0.0;
  bare.bf16_convolution_efficiency = 0.0;
  bare.bf16_narrow_convolution_efficiency = 0.0;
  bare.pooling_efficiency = 1.0;
  bare.bf16_weights_gradient_efficiency = 0.0;
  bare.elementwise_efficiency = 0.0;
  bare.bf16_elementwise_efficiency = 0.0;
  bare.normalization_efficiency = 0.0;
  bare.bf16_normalization_efficiency = 0.0;
  bare.launch_overhead_s = 0.0;
  return predict_step(spec, policy, run, bare).step_s();
}

bool has_fp8_roof(const DeviceProfile& device) {
  return device.is_gpu() && device.peak.fp8 > 0 &&
         has_fp8_tensor_cores(compute_capability_value(device.device_info()));
}

bool predicts_fused_attention(const DeviceProfile& device, const RunConfig& run) {
  return device.is_gpu() && run.attention != AttentionKernels::unfused;
}

bool fused_attention_applies(const DeviceProfile& device, const PlanNode& node) {
  return fused_attention_blocker(device, node).empty();
}

std::string fused_attention_blocker(const DeviceProfile& device, const PlanNode& node) {
  if (!device.is_gpu()) return "the CPU has no cuDNN";
  if (node.out_dtype == DType::f32)
    return "cuDNN fuses 16-bit attention only (float32 runs unfused)";
  const double cc = std::atof(device.compute_capability.c_str());
  if (cc < 8.0) return "cuDNN 9's fused attention needs compute capability 8.0 (Ampere) or later";
  // engine/backend/cuda/fused_attention.cpp's limits (the backward's, cudnn-frontend's checks):
  // heads of at most 256 on Hopper, 128 elsewhere.
  const int limit = cc >= 9.0 && cc < 10.0 ? 256 : 128;
  for (const int dim : {node.key_dim, node.value_dim}) {
    if (dim > limit || dim % 8 != 0) {
      return "a head size of " + std::to_string(dim) + ": cuDNN fuses heads of at most " +
             std::to_string(limit) + " in multiples of 8";
    }
  }
  if (node.out_shape.front() < 2) return "one step (cuDNN's fused backward needs two or more)";
  return {};
}

}  // namespace mixlab::doctor
