// The doctor's rules. Each looks at a diagnosis's predictions (and measurement, where there is
// one) and returns its findings; thresholds and their sources are beside each.
#include <algorithm>
#include <cmath>
#include <set>

#include "engine/doctor/diagnosis.h"
#include "engine/doctor/doctor_text.h"
#include "engine/doctor/library_rules.h"
#include "engine/spec/layer_text.h"
#include "engine/spec/shape_inference.h"

namespace mixlab::doctor::rules {

namespace {

using Field = SuggestedChange::Field;

// A policy's step predicted after a change to the input.
StepCost repredict(const Diagnosis& d, Policy policy, const SuggestedChange& change) {
  const DiagnosisInput in = apply_change(d.input, change);
  return predict_step(in.spec, policy, in.run, in.device);
}

// Samples per second after over before.
double per_sample_gain(const StepCost& before, const StepCost& after) {
  return (before.step_s() / before.batch) / (after.step_s() / after.batch);
}

std::string title(const Diagnosis& d, int layer) { return layer_title(d.input.spec, layer); }
std::string policy_name(const Diagnosis& d) { return std::string(to_string(d.input.mixed)); }

std::int64_t nearest_multiple(std::int64_t value, std::int64_t multiple) {
  const std::int64_t down = value / multiple * multiple;
  const std::int64_t up = down + multiple;
  return down >= multiple && value - down < up - value ? down : up;
}

// Whether layer `li` is the one whose units are the model's outputs (they cannot change).
bool output_layer(const Diagnosis& d, int li) {
  const auto& layers = d.input.spec.layers;
  for (std::size_t j = static_cast<std::size_t>(li) + 1; j < layers.size(); ++j) {
    if (layers[j].type == LayerType::Dense || layers[j].type == LayerType::Conv2D) return false;
  }
  return true;
}

}  // namespace

// float16 tensor cores need compute capability 7.0 and the GTX 16xx have none; bfloat16 needs
// 8.0; FP8 8.9 (NVIDIA's CUDA programming guide, compute capabilities). On the CPU, bf16 is
// native only with AVX512-BF16 or AMX, float16 always emulated (Intel's ISA references; oneDNN).
// The engine's one rule (policy_support) judges; this says what it means for speed.
std::vector<Finding> capability(const Diagnosis& d) {
  const PolicySupport& s = d.mixed.support;
  const DeviceProfile& dev = d.input.device;
  if (s.level == Support::native && s.reason.empty()) return {};
  Finding f;
  f.id = "capability";
  f.message = s.reason.empty() ? policy_name(d) + " cannot run on " + dev.name : s.reason;
  f.figures["compute_capability"] = compute_capability_value(dev.device_info());
  if (s.level == Support::unsupported) {
    f.severity = Severity::high;
    const Policy other = d.input.mixed == Policy::mixed_bfloat16 ? Policy::mixed_float16
                                                                 : Policy::mixed_bfloat16;
    f.suggestion = policy_support(dev.device_info(), other).level == Support::native
                       ? "use " + std::string(to_string(other)) + ", or stay in float32"
                       : "stay in float32";
  } else {
    f.severity = s.level == Support::emulated ? Severity::medium : Severity::high;
    f.suggestion = dev.is_gpu() ? "stay in float32 on this GPU"
                                : "stay in float32 on this CPU; run mixed precision here to see "
                                  "its numerics (overflow, loss scaling), not its speed";
  }
  return {f};
}

// What the profile's libraries do with a misaligned 16-bit GEMM (a convolution's or a Dense
// layer's), and what that rests on (library_rules.h); the efficiency kept goes in `f`'s figures.
std::string misaligned_basis(const Diagnosis& d, bool convolution, Finding& f) {
  const DeviceProfile& device = d.input.device;
  const LibraryRule& rule =
      convolution ? kMisalignedConvolutionOnTensorCores : kMisalignedGemmOnTensorCores;
  const std::string version = version_of(rule, device.libraries);
  const std::string library = std::string(rule.library) + (version.empty() ? "" : " " + version);
  const std::string guide = "NVIDIA's Matrix Multiplication Background guide, Table 1";
  if (!holds(rule, device.libraries)) {
    f.figures["tensor_core_efficiency"] = 0.0;
    return library + " runs it without tensor cores (before " + rule.library + " " + rule.since +
           " they required multiples of 8: " + guide + ")";
  }
  const double e = misaligned_efficiency(device);
  f.figures["tensor_core_efficiency"] = e;
  const std::string rate = std::to_string(std::lround(e * 100)) + "% of their aligned rate";
  return library + " runs it on tensor cores (so from " + rule.library + " " + rule.since + ": " +
         guide + ") at " +
         (device.misaligned_matmul_efficiency > 0
              ? rate + ", as measured on this GPU"
              : "about " + rate + ", an estimate until a GPU calibration measures it");
}

// NVIDIA's "Deep Learning Performance" guide (Matrix Multiplication Background; Optimizing
// Linear/Fully-Connected Layers; Convolutional Layers): 16-bit GEMM dimensions should be
// multiples of 8 (FP8: 16) for the tensor cores; for convolutions the channel counts.
std::vector<Finding> alignment(const Diagnosis& d) {
  struct Key {
    std::string dim;
    std::int64_t value;
    int layer;  // -1 for the batch (every layer)
    bool operator<(const Key& o) const {
      return std::tie(dim, value, layer) < std::tie(o.dim, o.value, o.layer);
    }
  };
  std::map<Key, std::set<int>> misses;
  for (const CostItem& item : d.mixed.items) {
    // Attention's sequence length: attention_alignment below says it with the head size.
    if (item.misaligned.empty() || item.misaligned == "sequence length") continue;
    const int layer = item.misaligned == "batch" ? -1 : item.layer;
    misses[{item.misaligned, item.misaligned_value, layer}].insert(item.layer);
  }
  std::vector<Finding> out;
  const std::string tc = "for " + policy_name(d) + "'s tensor cores";
  for (const auto& [key, layers] : misses) {
    Finding f;
    f.id = "alignment";
    f.layers.assign(layers.begin(), layers.end());
    const std::int64_t aligned = nearest_multiple(key.value, kTensorCoreMultiple16Bit);
    f.figures["value"] = static_cast<double>(key.value);
    f.figures["aligned_value"] = static_cast<double>(aligned);
    f.severity = Severity::low;
    if (key.dim == "batch") {
      const SuggestedChange change{Field::batch_size, -1, aligned};
      const StepCost after = repredict(d, d.input.mixed, change);
      f.predicted_gain = per_sample_gain(d.mixed, after);
      f.message = "the batch size " + std::to_string(key.value) + " is not a multiple of " +
                  std::to_string(kTensorCoreMultiple16Bit) + " " + tc + ": every Dense GEMM (" +
                  std::to_string(layers.size()) +
                  " layers) runs on slower kernels: " + misaligned_basis(d, false, f);
      f.suggestion = "use batch " + std::to_string(aligned);
      f.change = change;
    } else if (key.dim == "units" || key.dim == "filters") {
      const int li = key.layer;
      const bool fixed = key.dim == "units" && output_layer(d, li);
      f.message = title(d, li) + ": " + key.dim + " " + std::to_string(key.value) +
                  " is not a multiple of 8 " + tc + "; " +
                  misaligned_basis(d, key.dim == "filters", f);
      if (fixed) {
        f.severity = Severity::info;
        f.message += "; it is the model's output size, which the data fixes";
      } else {
        const SuggestedChange change{key.dim == "units" ? Field::units : Field::filters, li, aligned};
        const StepCost after = repredict(d, d.input.mixed, change);
        f.predicted_gain = d.mixed.step_s() / after.step_s();
        f.suggestion = "make it " + std::to_string(aligned) + " " + key.dim;
        f.change = change;
      }
    } else if (key.dim == "input channels") {
      const int li = key.layer;
      // The model's input channels reach the first Conv2D; a later one's are the filters of a
      // Conv2D before it, whose own finding carries the fix.
      const auto& layers = d.input.spec.layers;
      const bool first_conv =
          std::none_of(layers.begin(), layers.begin() + li,
                       [](const LayerSpec& l) { return l.type == LayerType::Conv2D; });
      if (!first_conv) continue;
      f.message = title(d, li) + ": its input has " + std::to_string(key.value) +
                  " channels, not a multiple of 8 " + tc + "; " + misaligned_basis(d, true, f);
      const SuggestedChange change{Field::input_channels, -1, aligned};
      const StepCost after = repredict(d, d.input.mixed, change);
      const double gain = d.mixed.step_s() / after.step_s();
      if (gain < 1.0) {
        // The padded channels' extra work outweighs the faster kernels.
        f.severity = Severity::info;
        f.message += "; padding it to " + std::to_string(aligned) +
                     " channels would cost more than it saves (predicted " + ratio(gain) + ")";
        out.push_back(std::move(f));
        continue;
      }
      f.predicted_gain = gain;
      f.suggestion = "pad the input to " + std::to_string(aligned) +
                     " channels (zeros), or leave it where the first layer is a small part";
      f.change = change;
    } else {  // input features: the previous Dense's units carry the finding
      const int li = key.layer;
      if (li > 0 && d.input.spec.layers[static_cast<std::size_t>(li) - 1].type == LayerType::Dense)
        continue;
      f.message = title(d, li) + ": " + std::to_string(key.value) +
                  " input features, not a multiple of 8 " + tc;
    }
    if (f.predicted_gain >= 1.05) f.severity = Severity::medium;
    out.push_back(std::move(f));
  }
  for (Finding& f : attention_alignment(d)) out.push_back(std::move(f));
  return out;
}

// Issue 29: attention's head size and sequence length, on a GPU in 16 bits. cuDNN 9 fuses
// scaled dot-product attention only for head sizes that are multiples of 8 up to 128 (256 on
// Hopper; fused_attention_blocker), so a key_dim off a multiple of 8 keeps the S x S scores in
// memory; the sequence length is both dimensions of the score GEMMs, which the tensor cores tile
// by 8 (NVIDIA's Matrix Multiplication Background guide). The head size's gain is predicted with
// the fused kernels (what --attention auto takes once the heads are aligned); the sequence
// length's as the run would run attention.
std::vector<Finding> attention_alignment(const Diagnosis& d) {
  const DeviceProfile& dev = d.input.device;
  if (!dev.is_gpu() || d.input.mixed == Policy::float32) return {};
  const ShapeTable table = infer_shapes(d.input.spec, d.input.mixed);
  const std::string tc = "for " + policy_name(d) + "'s tensor cores";
  std::vector<Finding> out;
  bool sequence_said = false;
  for (std::size_t i = 0; i < d.input.spec.layers.size(); ++i) {
    const LayerSpec& layer = d.input.spec.layers[i];
    if (layer.type != LayerType::MultiHeadAttention) continue;
    const int li = static_cast<int>(i);
    const std::int64_t steps = table.layers[i].input_shape[0];
    const int value_dim = layer.value_dim > 0 ? layer.value_dim : layer.key_dim;
    const bool key = layer.key_dim % kTensorCoreMultiple16Bit != 0;
    if (key || value_dim % kTensorCoreMultiple16Bit != 0) {
      const int dim = key ? layer.key_dim : value_dim;
      // At most the fused kernels' largest head (fused_attention_blocker: 256 on Hopper).
      const double cc = compute_capability_value(dev.device_info());
      const std::int64_t aligned = std::min<std::int64_t>(
          nearest_multiple(dim, kTensorCoreMultiple16Bit), cc >= 9.0 && cc < 10.0 ? 256 : 128);
      Finding f;
      f.id = "alignment";
      f.severity = Severity::low;
      f.layers = {li};
      f.figures["value"] = dim;
      f.figures["aligned_value"] = static_cast<double>(aligned);
      f.message = title(d, li) + ": " + (key ? "key_dim " : "value_dim ") + std::to_string(dim) +
                  " is not a multiple of 8 " + tc +
                  ": cuDNN's fused attention cannot run its heads (it fuses head sizes in "
                  "multiples of 8), so each head's " +
                  std::to_string(steps) + " x " + std::to_string(steps) +
                  " scores go through memory";
      if (key) {
        // What the fused kernels would gain with an aligned head size.
        DiagnosisInput fused = d.input;
        fused.run.attention = AttentionKernels::fused;
        const SuggestedChange change{Field::key_dim, li, aligned};
        const StepCost before = predict_step(fused.spec, fused.mixed, fused.run, fused.device);
        const DiagnosisInput changed = apply_change(fused, change);
        const StepCost after =
            predict_step(changed.spec, changed.mixed, changed.run, changed.device);
        f.predicted_gain = before.step_s() / after.step_s();
        f.suggestion = "make key_dim " + std::to_string(aligned) +
                       (predicts_fused_attention(dev, d.input.run)
                            ? std::string()
                            : std::string(" (the gain predicted with fused "
                                          "attention: --attention auto)"));
        f.change = change;
      } else {
        f.suggestion = "make value_dim " + std::to_string(aligned);
      }
      if (f.predicted_gain >= 1.05) f.severity = Severity::medium;
      out.push_back(std::move(f));
    }
    if (steps % kTensorCoreMultiple16Bit != 0 && !sequence_said) {
      sequence_said = true;  // one input, one sequence length: said once
      // Padded up (the real tokens stay; the padding is masked work), as NVIDIA's guide advises.
      const std::int64_t aligned = (steps + kTensorCoreMultiple16Bit - 1) /
                                   kTensorCoreMultiple16Bit * kTensorCoreMultiple16Bit;
      Finding f;
      f.id = "alignment";
      f.severity = Severity::low;
      f.layers = {li};
      f.figures["value"] = static_cast<double>(steps);
      f.figures["aligned_value"] = static_cast<double>(aligned);
      f.message = "the sequence length " + std::to_string(steps) + " is not a multiple of 8 " + tc +
                  ": it is both dimensions of every attention head's score GEMM, whose tiles "
                  "it leaves part empty";
      const SuggestedChange change{Field::sequence_length, -1, aligned};
      // The same real tokens a step, padded: the extra steps' work against the aligned tiles.
      const StepCost after = repredict(d, d.input.mixed, change);
      const double gain = d.mixed.step_s() / after.step_s();
      if (gain < 1.0) {
        f.severity = Severity::info;
        f.message += "; padding it to " + std::to_string(aligned) +
                     " steps would cost more than it saves here (predicted " + ratio(gain) + ")";
      } else {
        f.predicted_gain = gain;
        f.suggestion = "pad the sequences to " + std::to_string(aligned) + " steps";
        f.change = change;
        if (gain >= 1.05) f.severity = Severity::medium;
      }
      out.push_back(std::move(f));
    }
  }
  return out;
}

// Tile and wave quantization (NVIDIA's guide, "Matrix Multiplication Background"): under 80% of
// the computed tiles useful, the GEMM wastes a fifth of the GPU. Only GEMMs that take 5% of the
// step or more are worth a change.
std::vector<Finding> quantization(const Diagnosis& d) {
  const DeviceProfile& dev = d.input.device;
  if (!dev.is_gpu() || dev.sm_count <= 0) return {};
  const double step = d.mixed.step_s();
  std::vector<Finding> out;
  std::set<int> done;
  for (const CostItem& item : d.mixed.items) {
    if (!item.gemm || item.quantization.efficiency() >= 0.8 || item.time_s() < 0.05 * step ||
        done.count(item.layer) > 0) {
      continue;
    }
    done.insert(item.layer);
    const GemmQuantization& q = item.quantization;
    Finding f;
    f.id = "quantization";
    f.severity = Severity::low;
    f.layers = {item.layer};
    f.figures["tile_efficiency"] = q.tile_efficiency;
    f.figures["wave_efficiency"] = q.wave_efficiency;
    f.figures["tiles"] = static_cast<double>(q.tiles);
    f.figures["waves"] = static_cast<double>(q.waves);
    f.message = item.label + ": a " + std::to_string(item.shape.m) + "x" +
                std::to_string(item.shape.n) + " output in " + std::to_string(q.tile_m) + "x" +
                std::to_string(q.tile_n) + " tiles fills " + percent(q.efficiency()) + " of " +
                dev.name + "'s " + std::to_string(dev.sm_count) + " SMs over " +
                std::to_string(q.waves) + (q.waves == 1 ? " wave" : " waves") + " (tiles " +
                percent(q.tile_efficiency) + ", waves " + percent(q.wave_efficiency) + ")";
    // A batch that fills the waves, where the GEMM's rows are the batch.
    const bool rows_are_batch = item.shape.m == d.input.run.batch_size;
    if (rows_are_batch) {
      int best = 0;
      for (int delta = 8; delta <= d.input.run.batch_size && best == 0; delta += 8) {
        for (const int b : {d.input.run.batch_size + delta, d.input.run.batch_size - delta}) {
          const int candidate = b / 8 * 8;
          if (candidate < 8) continue;
          GemmShape s = item.shape;
          s.m = candidate;
          if (quantize_gemm(s, dev.sm_count).efficiency() >= 0.9) {
            best = candidate;
            break;
          }
        }
      }
      if (best > 0) {
        const SuggestedChange change{Field::batch_size, -1, best};
        const StepCost after = repredict(d, d.input.mixed, change);
        f.predicted_gain = per_sample_gain(d.mixed, after);
        f.suggestion = "use batch " + std::to_string(best);
        f.change = change;
      }
    }
    if (f.predicted_gain >= 1.05) f.severity = Severity::medium;
    out.push_back(std::move(f));
  }
  return out;
}

// The roofline (Williams, Waterman and Patterson, 2009): a GEMM whose FLOPs per byte are under
// the device's ridge point (peak / bandwidth) waits on memory; halving its bytes is all that
// 16 bits can give it, not the tensor cores' multiple.
std::vector<Finding> memory_bound(const Diagnosis& d) {
  const DeviceProfile& dev = d.input.device;
  const double step = d.mixed.step_s();
  std::vector<const CostItem*> bound;
  double bound_s = 0;
  for (const CostItem& item : d.mixed.items) {
    if (item.gemm && item.memory_bound() && item.time_s() >= 0.05 * step) {
      bound.push_back(&item);
      bound_s += item.time_s();
    }
  }
  if (bound.empty()) return {};
  std::sort(bound.begin(), bound.end(),
            [](const CostItem* a, const CostItem* b) { return a->time_s() > b->time_s(); });
  const CostItem& top = *bound.front();
  const double peak16 = matmul_peak(dev, compute_dtype(d.input.mixed), false);
  const double ridge = peak16 / dev.bandwidth_bytes_per_s;
  const double tensor_ratio = peak16 / dev.peak.float32;
  Finding f;
  f.id = "memory-bound";
  f.severity = bound_s >= 0.3 * step ? Severity::medium : Severity::low;
  std::set<int> layers;
  for (const CostItem* item : bound) layers.insert(item->layer);
  f.layers.assign(layers.begin(), layers.end());
  f.figures["intensity_flop_per_byte"] = top.intensity();
  f.figures["ridge_flop_per_byte"] = ridge;
  f.figures["share_of_step"] = bound_s / step;
  char text[64];
  std::snprintf(text, sizeof text, "%.0f", top.intensity());
  std::string message = top.label + " does " + text + " FLOPs per byte, under " + dev.name +
                        "'s ridge point of ";
  std::snprintf(text, sizeof text, "%.0f", ridge);
  message += std::string(text) + " in 16 bits";
  if (bound.size() > 1) message += " (" + std::to_string(bound.size()) + " GEMMs like it)";
  message += ": they wait on memory (" + percent(bound_s / step) +
             " of the step), so mixed precision gains them at most the 2x of halved bytes, not "
             "the tensor cores' " + ratio(tensor_ratio);
  f.message = message;
  if (top.shape.m == d.input.run.batch_size || top.shape.k == d.input.run.batch_size) {
    const int bigger = std::min(8192, d.input.run.batch_size * 4);
    const SuggestedChange change{Field::batch_size, -1, bigger};
    const StepCost after = repredict(d, d.input.mixed, change);
    f.predicted_gain = per_sample_gain(d.mixed, after);
    f.suggestion = "a larger batch (" + std::to_string(bigger) +
                   ") does more work per weight read";
    f.change = change;
  }
  return {f};
}

// Issue 27: BatchNormalization and depthwise convolutions do a few FLOPs per byte (a depthwise
// 3x3 does 9 multiply-adds per element it reads; BatchNormalization 5 or so, in float32 with a
// cast in and out under a mixed policy): no tensor core helps them, and 16 bits gain them at
// most the 2x of halved bytes. When they hold much of a mixed step, the model's speed-up is
// bounded by them, however fast its convolutions become. "Most" (over half) is medium; over 30%
// low.
std::vector<Finding> normalization_bound(const Diagnosis& d) {
  if (d.input.mixed == Policy::float32) return {};
  const double step = d.mixed.step_s();
  double bound_s = 0.0, f32_bound_s = 0.0;
  std::set<int> layers;
  const auto counts = [&](int layer) {
    if (layer < 0 || layer >= static_cast<int>(d.input.spec.layers.size())) return false;
    const LayerType t = d.input.spec.layers[static_cast<std::size_t>(layer)].type;
    return t == LayerType::BatchNormalization || t == LayerType::DepthwiseConv2D;
  };
  for (const CostItem& item : d.mixed.items) {
    if (!counts(item.layer)) continue;
    bound_s += item.time_s();
    layers.insert(item.layer);
  }
  for (const CostItem& item : d.float32.items) {
    if (counts(item.layer)) f32_bound_s += item.time_s();
  }
  const double share = bound_s / step;
  if (layers.empty() || share < 0.3) return {};
  Finding f;
  f.id = "normalization-bound";
  f.severity = share >= 0.5 ? Severity::medium : Severity::low;
  f.layers.assign(layers.begin(), layers.end());
  f.figures["share_of_step"] = share;
  f.figures["gain_of_these_layers"] = bound_s > 0 ? f32_bound_s / bound_s : 0.0;
  // The best the whole step could do if everything else took no time at all under mixed:
  // Amdahl's bound on the speed-up, set by these layers alone.
  const double bound = bound_s > 0 ? d.float32.step_s() / bound_s : 0.0;
  f.figures["speedup_bound"] = bound;
  f.message = std::to_string(layers.size()) +
              " BatchNormalization and DepthwiseConv2D layers take " + percent(share) + " of the " +
              policy_name(d) +
              " step: they are memory-bound (BatchNormalization computes in float32, casting its "
              "input and output), so mixed precision gains them " +
              ratio(f.figures["gain_of_these_layers"]) +
              " here, and they alone cap the model's speed-up at " + ratio(bound) +
              ", however fast its convolutions become";
  return {f};
}

std::vector<Finding> attention_bound(const Diagnosis& d) {
  if (d.input.mixed == Policy::float32) return {};
  const std::vector<int> layers = [&] {
    std::vector<int> out;
    for (std::size_t i = 0; i < d.input.spec.layers.size(); ++i) {
      if (d.input.spec.layers[i].type == LayerType::MultiHeadAttention) {
        out.push_back(static_cast<int>(i));
      }
    }
    return out;
  }();
  if (layers.empty()) return {};
  // The cores' own items, by their plan nodes (their projections are Dense GEMMs the other
  // rules see).
  const ShapeTable table = infer_shapes(d.input.spec, d.input.mixed);
  const ExecutionPlan plan =
      build_plan(d.input.spec, table, d.input.run.batch_size, d.input.run.optimizer,
                 d.input.device.is_gpu() ? kCudaLowering : kCpuLowering);
  double core_s = 0.0;
  for (const CostItem& item : d.mixed.items) {
    if (item.node >= 0 && item.node < static_cast<int>(plan.nodes.size()) &&
        plan.nodes[static_cast<std::size_t>(item.node)].op == PlanOp::attention) {
      core_s += item.time_s();
    }
  }
  const double share = core_s / d.mixed.step_s();
  if (share < 0.25) return {};
  // Whether cuDNN's fused attention runs these cores, predicted or as it would.
  std::string blocker;
  for (const PlanNode& node : plan.nodes) {
    if (node.op == PlanOp::attention) blocker = fused_attention_blocker(d.input.device, node);
    if (!blocker.empty()) break;
  }
  const bool fused = predicts_fused_attention(d.input.device, d.input.run) && blocker.empty();
  const std::int64_t steps = table.layers[static_cast<std::size_t>(layers.front())].input_shape[0];
  // The weights' bytes per sample, every attention layer's heads: float32 on the CPU, the
  // layer's 16-bit dtype on a GPU.
  const double per = d.input.device.is_gpu() && d.input.mixed != Policy::float32 ? 2.0 : 4.0;
  double weight_bytes = 0.0;
  for (const int l : layers) {
    const LayerSpec& layer = d.input.spec.layers[static_cast<std::size_t>(l)];
    const std::int64_t s = table.layers[static_cast<std::size_t>(l)].input_shape[0];
    weight_bytes += per * static_cast<double>(s * s) * layer.num_heads;
  }
  Finding f;
  f.id = "attention-bound";
  f.severity = share >= 0.5 ? Severity::medium : Severity::low;
  f.layers = layers;
  f.figures["share_of_step"] = share;
  f.figures["weights_bytes_per_sample"] = weight_bytes;
  f.message =
      std::to_string(layers.size()) + " MultiHeadAttention core" +
      (layers.size() > 1 ? "s take " : " takes ") + percent(share) + " of the " + policy_name(d) +
      " step" +
      (fused ? " with cuDNN's fused attention"
             : ": MixLab's unfused kernels write each head's " + std::to_string(steps) + " x " +
                   std::to_string(steps) + " scores and weights (" +
                   megabytes(weight_bytes * d.input.run.batch_size) + " at batch " +
                   std::to_string(d.input.run.batch_size) + ") to memory and read them back");
  if (fused) return {f};
  if (!blocker.empty()) {
    f.message += "; cuDNN's fused attention does not apply: " + blocker;
    return {f};
  }
  // What cuDNN's fused attention would do here.
  DiagnosisInput what_if = d.input;
  what_if.run.attention = AttentionKernels::automatic;
  const StepCost after = predict_step(what_if.spec, what_if.mixed, what_if.run, what_if.device);
  f.predicted_gain = d.mixed.step_s() / after.step_s();
  f.suggestion = "run with --attention auto: cuDNN 9's fused scaled dot-product attention";
  return {f};
}

// The threshold: when the optimizer's master-weight traffic, loss scaling and the casts
// move more than half of a mixed step's bytes, 16-bit math cannot pay for them. Where the
// 16-bit math is fast enough that mixed is still predicted clearly faster (native bf16 on a
// CPU, say), the finding says how far that traffic holds the gain down instead.
std::vector<Finding> weight_bound(const Diagnosis& d) {
  if (d.input.mixed == Policy::float32 || d.mixed.params == 0) return {};
  // The optimizer's pass, loss scaling's and the casts: what the master weights cost a step.
  double weight_bytes = 0.0, weight_s = 0.0;
  for (const CostItem& item : d.mixed.items) {
    if (item.kind == TimeKind::optimizer || item.kind == TimeKind::casts ||
        item.kind == TimeKind::loss_scaling) {
      weight_bytes += item.bytes();
      weight_s += item.time_s();
    }
  }
  const double share = weight_bytes / d.mixed.bytes();
  if (share <= 0.5) return {};
  constexpr double kClearlyFaster = 1.1;
  const double speedup = d.predicted_speedup();
  const bool mixed_wins = speedup >= kClearlyFaster;
  // As severe as the time that traffic takes: half the step or more is what makes mixed slower.
  // Where mixed is faster all the same, the traffic costs gain, not speed: medium at most.
  const double time_share = weight_s / d.mixed.step_s();
  Finding f;
  f.id = "weight-bound";
  f.severity = time_share >= 0.5 && !mixed_wins ? Severity::high
               : time_share >= 0.2              ? Severity::medium
                                                : Severity::low;
  f.figures["time_share"] = time_share;
  f.figures["weight_bytes"] = weight_bytes;
  f.figures["step_bytes"] = d.mixed.bytes();
  f.figures["params"] = static_cast<double>(d.mixed.params);
  f.message = "the step moves " + megabytes(weight_bytes) + " of its " +
              megabytes(d.mixed.bytes()) + " (" + percent(share) + ") to read, update and write " +
              count(static_cast<double>(d.mixed.params)) +
              " float32 master weights and cast them to 16 bits, every step whatever the batch: " +
              (mixed_wins ? "that traffic holds mixed precision's gain to " + ratio(speedup)
                          : std::string("mixed precision is expected to be no faster here"));
  // The smallest batch (doubling, up to 8192) at which mixed is predicted clearly faster, or,
  // where it already is, clearly more so.
  const double wanted = mixed_wins ? speedup * kClearlyFaster : kClearlyFaster;
  if (!mixed_wins) f.suggestion = "stay in float32";
  for (int batch = d.input.run.batch_size * 2; batch <= 8192; batch *= 2) {
    const SuggestedChange change{Field::batch_size, -1, batch};
    const StepCost at = repredict(d, d.input.mixed, change);
    const StepCost at32 = repredict(d, Policy::float32, change);
    if (at32.step_s() / at.step_s() >= wanted) {
      f.predicted_gain = per_sample_gain(d.mixed, at);
      f.figures["batch_where_mixed_wins"] = batch;
      f.suggestion = std::string(mixed_wins ? "" : "stay in float32, or ") + "train at batch " +
                     std::to_string(batch) + " or more (mixed then " +
                     speedup_words(at32.step_s() / at.step_s()) + " float32)";
      f.change = change;
      break;
    }
  }
  return {f};
}

// When launches cost more than the kernels they launch (the step's kernel time is under the
// launch overhead times the launch count), the GPU idles between kernels (what Nsight Systems
// shows as gaps): replay the step as a CUDA graph, or give each kernel more work.
std::vector<Finding> overhead_bound(const Diagnosis& d) {
  const StepCost& c = d.mixed;
  if (c.overhead_s() <= c.kernel_s()) return {};
  Finding f;
  f.id = "overhead-bound";
  f.severity = Severity::medium;
  f.figures["launches"] = c.launches();
  f.figures["overhead_ms"] = c.overhead_s() * 1e3;
  f.figures["kernel_ms"] = c.kernel_s() * 1e3;
  const DeviceProfile& dev = d.input.device;
  f.message = "the step's " + std::to_string(c.launches()) +
              (dev.is_gpu() ? " kernel launches cost " : " library calls cost ") +
              millis(c.overhead_s()) + ", more than the " + millis(c.kernel_s()) +
              " of work they start";
  if (dev.is_gpu() && !d.input.run.cuda_graphs) {
    const SuggestedChange change{Field::cuda_graphs, -1, 1};
    const StepCost after = repredict(d, d.input.mixed, change);
    f.predicted_gain = c.step_s() / after.step_s();
    f.suggestion = "replay the step as a CUDA graph (--cuda-graphs), or a larger batch";
    f.change = change;
  } else {
    const int bigger = std::min(8192, d.input.run.batch_size * 4);
    const SuggestedChange change{Field::batch_size, -1, bigger};
    const StepCost after = repredict(d, d.input.mixed, change);
    f.predicted_gain = per_sample_gain(c, after);
    f.suggestion = "a larger batch (" + std::to_string(bigger) + ")";
    f.change = change;
  }
  return {f};
}

// TensorBoard's input-pipeline analysis: a step waiting on input 5% of its time or more is
// moderately input-bound, 20% or more highly. Predicted too where a GPU's batch copy outlasts
// the step it overlaps.
std::vector<Finding> input_bound(const Diagnosis& d) {
  std::vector<Finding> out;
  const DeviceProfile& dev = d.input.device;
  const auto suggest = [&](Finding& f) {
    if (dev.is_gpu() && !d.input.run.data_on_device) {
      const SuggestedChange change{Field::data_on_device, -1, 1};
      const StepCost after = repredict(d, d.input.mixed, change);
      f.predicted_gain = d.mixed.step_s() / after.step_s();
      f.suggestion = "keep the dataset on the GPU (--data-on-device)";
      f.change = change;
    } else {
      f.suggestion = "load batches ahead (more loader threads), or keep the data in memory";
    }
  };
  if (d.measured) {
    for (const MeasuredRun* run : {&d.measured->float32, &d.measured->mixed}) {
      if (run->step_ms <= 0) continue;
      const double share = run->data_wait_ms / run->step_ms;
      if (share < 0.05) continue;
      Finding f;
      f.id = "input-bound";
      f.severity = share >= 0.2 ? Severity::high : Severity::medium;
      f.figures["data_wait_share"] = share;
      f.message = std::string(to_string(run->policy)) + " waited for its input " +
                  percent(share) + " of each step (measured, median " +
                  millis(run->data_wait_ms / 1e3) + ")";
      suggest(f);
      out.push_back(std::move(f));
      break;
    }
  }
  if (out.empty() && d.mixed.data_overlapped) {
    const double data = d.mixed.seconds(CostPhase::data);
    double rest = 0.0;  // the step's own work, which the copy overlaps
    for (const CostItem& item : d.mixed.items) {
      if (item.phase != CostPhase::data) rest += item.time_s();
    }
    if (data > rest) {
      Finding f;
      f.id = "input-bound";
      f.severity = data > 1.25 * rest ? Severity::high : Severity::medium;
      f.figures["copy_ms"] = data * 1e3;
      f.figures["step_kernels_ms"] = rest * 1e3;
      f.message = "copying each batch to the GPU (" + millis(data) + ") takes longer than the "
                  "step it overlaps (" + millis(rest) + ")";
      suggest(f);
      out.push_back(std::move(f));
    }
  }
  return out;
}

// Keras's mixed-precision guide: keep the model's output softmax (or sigmoid) in float32; with
// float16, dynamic loss scaling (LossScaleOptimizer) halves the scale on every overflow and
// skips that step. Over 1% of steps skipped, a scale that keeps halving, or an overflow at the
// very first step mean the initial scale is too high for this model.
std::vector<Finding> loss_scaling(const Diagnosis& d) {
  std::vector<Finding> out;
  if (d.input.mixed != Policy::float32) {
    const ShapeTable table = infer_shapes(d.input.spec, d.input.mixed);
    const auto& layers = d.input.spec.layers;
    if (!layers.empty()) {
      const int last = static_cast<int>(layers.size()) - 1;
      const LayerSpec& l = layers.back();
      const bool squashes =
          l.activation == ActivationFn::softmax || l.activation == ActivationFn::sigmoid;
      if (squashes && table.layers.back().compute != DType::f32) {
        Finding f;
        f.id = "output-precision";
        f.severity = Severity::medium;
        f.layers = {last};
        f.message = title(d, last) + " computes the model's output " +
                    std::string(to_string(l.activation)) + " in " +
                    std::string(to_string(table.layers.back().compute)) +
                    ": its probabilities and the loss lose precision";
        f.suggestion = "give it \"dtype\": \"float32\" (Keras's advice for the output layer)";
        out.push_back(std::move(f));
      }
    }
  }
  if (!d.measured) return out;
  const MeasuredRun& m = d.measured->mixed;
  if (m.steps <= 0) return out;
  const double skipped = static_cast<double>(m.skipped_steps) / static_cast<double>(m.steps);
  if (skipped > 0.01 || m.scale_halvings >= 3 || m.first_step_skipped) {
    Finding f;
    f.id = "loss-scaling";
    f.severity = skipped > 0.05 ? Severity::high : Severity::medium;
    f.figures["skipped_share"] = skipped;
    f.figures["halvings"] = m.scale_halvings;
    f.figures["final_scale"] = m.final_loss_scale;
    f.message = std::to_string(m.skipped_steps) + " of " + std::to_string(m.steps) + " steps (" +
                percent(skipped) + ") were skipped on overflow; the scale went from " +
                count(m.initial_loss_scale) + " to " + count(m.final_loss_scale) +
                (m.first_step_skipped ? ", overflowing at the very first step" : "");
    char scale[32];
    std::snprintf(scale, sizeof scale, "%g", std::max(1.0, m.final_loss_scale));
    f.suggestion = std::string("start the loss scale lower (") + scale +
                   ", where this run settled)";
    out.push_back(std::move(f));
  }
  return out;
}

// Training memory from the plan against the device's (a GPU's; the CPU has the host's).
std::vector<Finding> memory_fit(const Diagnosis& d) {
  std::vector<Finding> out;
  for (const StepCost* c : {&d.float32, &d.mixed}) {
    if (c->fits()) continue;
    Finding f;
    f.id = "does-not-fit";
    f.severity = Severity::high;
    f.figures["needed_bytes"] = static_cast<double>(c->memory.total());
    f.figures["device_bytes"] = static_cast<double>(c->device_memory_bytes);
    f.message = std::string(to_string(c->policy)) + " needs " + megabytes(c->memory.total()) +
                " to train at batch " + std::to_string(c->batch) + "; " + d.input.device.name +
                " has " + megabytes(static_cast<double>(c->device_memory_bytes));
    for (int batch = c->batch / 2; batch >= 1; batch /= 2) {
      const SuggestedChange change{Field::batch_size, -1, batch};
      const StepCost at = repredict(d, c->policy, change);
      if (at.fits()) {
        f.suggestion = "train at batch " + std::to_string(batch) + " or less";
        f.change = change;
        break;
      }
    }
    if (f.suggestion.empty()) f.suggestion = "the parameters alone do not fit: a smaller model";
    out.push_back(std::move(f));
  }
  return out;
}

// Where a measured layer ran more than 2x its roofline prediction, the limit is the library's
// kernel (its choice, or its version), not the hardware.
std::vector<Finding> measured_vs_predicted(const Diagnosis& d) {
  if (!d.measured) return {};
  std::vector<Finding> out;
  for (const auto& [run, cost] : {std::pair{&d.measured->float32, &d.float32},
                                  std::pair{&d.measured->mixed, &d.mixed}}) {
    const std::size_t n = std::min(run->layer_forward_ms.size(), run->layer_backward_ms.size());
    int worst = -1;
    double worst_ratio = 2.0, worst_ms = 0;
    for (std::size_t li = 0; li < n; ++li) {
      const double measured = run->layer_forward_ms[li] + run->layer_backward_ms[li];
      const double predicted = cost->layer_model_seconds(static_cast<int>(li)) * 1e3;
      if (predicted <= 0 || measured < 0.05 * run->step_ms) continue;
      if (measured / predicted > worst_ratio) {
        worst = static_cast<int>(li);
        worst_ratio = measured / predicted;
        worst_ms = measured;
      }
    }
    if (worst < 0) continue;
    Finding f;
    f.id = "library-limit";
    f.severity = Severity::low;
    f.layers = {worst};
    f.figures["measured_ms"] = worst_ms;
    f.figures["ratio"] = worst_ratio;
    char text[32];
    std::snprintf(text, sizeof text, "%.1fx", worst_ratio);
    f.message = title(d, worst) + " ran " + text + " slower than its roofline in " +
                std::string(to_string(run->policy)) +
                ": the library's kernel choice, not the hardware, is the limit here";
    f.suggestion = "try another library version, or a layer shape its kernels favour";
    out.push_back(std::move(f));
  }
  return out;
}

// Layers timed on this device (diagnose's layer_times) that the mixed policy does not speed up:
// the library's 16-bit kernel gains nothing at this shape (oneDNN's bfloat16 convolution on 3
// input channels runs as long as its float32 one, where the roofline allows 1.8x), or the layer
// is slower in the mixed policy (its casts and rounding outweigh the 16-bit math). Neither can
// a roofline know: only the measurement shows it. Layers under 5% of the float32 step are left
// out; under 1.1x counts as no gain, under 0.95x as slower. The fix, for --what-if to measure:
// the layer kept in float32 ("dtype": "float32"), which gains what it lost; on a GPU, a Conv2D
// or Dense on fewer than 8 channels of the model's input gets them padded to 8 (tensor cores
// block by 8). Not on the CPU: the 3-channel convolution padded to 8 channels ran 1.13x
// faster in bfloat16 than in float32 (1.54 against 1.74 ms, forward and backward), but twice as
// long as the unpadded one in float32 (0.78 ms), a loss overall.
std::vector<Finding> mixed_no_gain(const Diagnosis& d) {
  if (d.input.mixed == Policy::float32 || !d.layer_times) return {};
  const double f32_step = d.float32.step_s();
  const double mixed_step = d.mixed.step_s();
  const ShapeTable table = infer_shapes(d.input.spec, d.input.mixed);
  std::vector<Finding> out;
  for (int li = 0; li < static_cast<int>(d.input.spec.layers.size()); ++li) {
    if (!d.float32.layer_measured(li) || !d.mixed.layer_measured(li)) continue;
    // A layer kept in float32 ("dtype": "float32") is not the mixed policy's to speed up.
    if (table.layers[static_cast<std::size_t>(li)].compute == DType::f32) continue;
    const double f32_s = d.float32.layer_seconds(li, false) + d.float32.layer_seconds(li, true);
    const double mixed_s = d.mixed.layer_seconds(li, false) + d.mixed.layer_seconds(li, true);
    if (f32_s < 0.05 * f32_step || mixed_s <= 0.0) continue;
    const double gain = f32_s / mixed_s;
    if (gain >= 1.1) continue;
    const bool slower = gain < 0.95;
    const LayerSpec& layer = d.input.spec.layers[static_cast<std::size_t>(li)];
    const LayerInfo& info = table.layers[static_cast<std::size_t>(li)];
    const double roof_f = d.float32.layer_model_seconds(li);
    const double roof_m = d.mixed.layer_model_seconds(li);
    const double allowed = roof_m > 0 ? roof_f / roof_m : 0.0;
    const std::int64_t channels = info.input_shape.empty() ? 0 : info.input_shape.back();
    const bool matmul = layer.type == LayerType::Conv2D || layer.type == LayerType::Dense;
    const bool reads_input =
        info.inputs.size() == 1 && info.inputs.front() == -1;  // the model's input
    Finding f;
    f.id = slower ? "slower-in-mixed" : "no-mixed-gain";
    const double share = mixed_s / mixed_step;
    f.severity = share >= 0.15 ? Severity::medium : Severity::low;
    if (slower && share >= 0.3) f.severity = Severity::high;
    f.layers = {li};
    f.figures["float32_ms"] = f32_s * 1e3;
    f.figures["mixed_ms"] = mixed_s * 1e3;
    f.figures["measured_gain"] = gain;
    f.figures["roofline_gain"] = allowed;
    f.figures["share_of_step"] = share;
    const std::string dtype(to_string(compute_dtype(d.input.mixed)));
    f.message = title(d, li) + " takes " + millis(f32_s) + " in float32 and " + millis(mixed_s) +
                " in " + policy_name(d) + " (timed here): " +
                (slower ? "it is slower in " + policy_name(d)
                        : "the library's " + dtype + " kernel gains nothing at this shape") +
                (matmul && channels > 0 && channels < 8
                     ? " (" + std::to_string(channels) + " input channels)"
                     : std::string()) +
                (allowed > 0 ? ", where the roofline allows " + ratio(allowed) : std::string());
    if (d.input.device.is_gpu() && matmul && reads_input && channels < 8) {
      // Tensor cores block by 8: the input padded with zeros (its gain for --what-if to
      // measure: more work, in a kernel that may now pay).
      f.suggestion =
          "pad the input to 8 channels with zeros, or keep this layer in float32 "
          "(\"dtype\": \"float32\")";
      f.change = {Field::input_channels, li, 8};
    } else {
      // The mixed step with this layer's float32 time in place of its mixed one (the casts
      // around it left out): a gain where the layer is slower in mixed, about none where it
      // only gains nothing.
      f.suggestion =
          "keep this layer in float32 (\"dtype\": \"float32\"), where it runs " + millis(f32_s);
      f.change = {Field::layer_float32, li, 1};
      const double after = mixed_step - mixed_s + f32_s;
      if (after > 0) f.predicted_gain = mixed_step / after;
    }
    out.push_back(std::move(f));
  }
  return out;
}

// mixed_float8 (issue 30). FP8 tensor cores run GEMMs at twice the 16-bit rate (the profiles'
// FP8 roofs: NVIDIA's Ada and Hopper whitepapers); cuBLASLt's FP8 GEMMs need dimensions in
// multiples of 16 and operands cast (with their amax) and transposed first, which a small GEMM
// does not repay. Saturation: delayed scaling sets a tensor's scale from its past amaxes; a
// tensor that outgrows them clips at the format's largest value (E4M3 448, E5M2 57344). One
// value in a hundred clipped in a step (kFp8SaturationThreshold) is a tensor whose range the
// history does not follow, which Transformer Engine's guidance keeps in higher precision.
std::vector<Finding> fp8(const Diagnosis& d) {
  if (d.input.mixed != Policy::mixed_float8) return {};
  std::vector<Finding> out;
  const DeviceProfile& dev = d.input.device;
  const ShapeTable table = infer_shapes(d.input.spec, d.input.mixed);
  const int layers = static_cast<int>(d.input.spec.layers.size());
  const auto layer_s = [](const StepCost& c, int li) {
    return c.layer_seconds(li, false) + c.layer_seconds(li, true);
  };
  // The FP8 layers (PlanNode::fp8), and those that reach the FP8 tensor cores.
  std::set<int> fp8_layers, on_cores;
  std::map<int, const CostItem*> missed;  // a layer's first GEMM kept off them by a dimension
  double fp8_gemm_s = 0.0, cast_s = 0.0;
  for (const CostItem& item : d.mixed.items) {
    if (item.fp8) {
      on_cores.insert(item.layer);
      fp8_gemm_s += item.time_s();
    }
    if (!item.fp8_misaligned.empty() && !missed.count(item.layer)) missed[item.layer] = &item;
    if (item.label.find(" FP8 ") != std::string::npos) {
      fp8_layers.insert(item.layer);
      cast_s += item.time_s();
    }
  }
  for (const auto& [li, item] : missed) fp8_layers.insert(li);
  if (has_fp8_roof(dev)) {
    Finding f;
    f.id = "fp8";
    f.severity = Severity::info;
    f.layers.assign(on_cores.begin(), on_cores.end());
    f.figures["fp8_layers"] = static_cast<double>(fp8_layers.size());
    f.figures["on_fp8_tensor_cores"] = static_cast<double>(on_cores.size());
    f.figures["fp8_gemm_ms"] = fp8_gemm_s * 1e3;
    f.figures["fp8_cast_ms"] = cast_s * 1e3;
    f.figures["fp8_tflops"] = dev.peak.fp8 / 1e12;
    if (d.baseline) f.figures["gain_over_mixed_bfloat16"] = d.predicted_fp8_speedup();
    f.message = std::to_string(on_cores.size()) + " of " + std::to_string(fp8_layers.size()) +
                " FP8 layers run on " + dev.name + "'s FP8 tensor cores (" +
                count(dev.peak.fp8 / 1e12) + " TFLOP/s, twice bfloat16's): their GEMMs take " +
                millis(fp8_gemm_s) + " of the " + millis(d.mixed.step_s()) +
                " step, their casts, transposes and amaxes " + millis(cast_s);
    out.push_back(std::move(f));
  }
  // Dimensions off multiples of 16.
  for (const auto& [li, item] : missed) {
    // The alignment rule's finding on the same dimension (off a multiple of 8 too) says it.
    if (item->misaligned == item->fp8_misaligned) continue;
    // A Dense's input features are the units of the Dense before it, whose finding carries it.
    if (item->fp8_misaligned == "input features" && li > 0 &&
        d.input.spec.layers[static_cast<std::size_t>(li) - 1].type == LayerType::Dense) {
      continue;
    }
    Finding f;
    f.id = "fp8-alignment";
    f.layers = {li};
    const std::int64_t aligned =
        nearest_multiple(item->fp8_misaligned_value, kTensorCoreMultipleFp8);
    f.figures["value"] = static_cast<double>(item->fp8_misaligned_value);
    f.figures["aligned_value"] = static_cast<double>(aligned);
    f.severity = Severity::low;
    const std::string what =
        item->fp8_misaligned + " " + std::to_string(item->fp8_misaligned_value);
    f.message = title(d, li) + ": " + what +
                " is not a multiple of 16, which cuBLASLt's FP8 "
                "GEMMs need: it runs in bfloat16 and gains nothing from FP8";
    SuggestedChange change;
    if (item->fp8_misaligned == "batch") {
      change = {Field::batch_size, -1, aligned};
      f.suggestion = "use batch " + std::to_string(aligned);
    } else if (item->fp8_misaligned == "units" &&
               d.input.spec.layers[static_cast<std::size_t>(li)].type == LayerType::Dense &&
               !output_layer(d, li)) {
      change = {Field::units, li, aligned};
      f.suggestion = "make it " + std::to_string(aligned) + " units";
    } else if (item->fp8_misaligned == "units") {
      f.severity = Severity::info;
      f.message += "; it is the model's output size, which the data fixes";
    }
    if (change) {
      const StepCost after = repredict(d, d.input.mixed, change);
      f.predicted_gain = change.field == Field::batch_size ? per_sample_gain(d.mixed, after)
                                                           : d.mixed.step_s() / after.step_s();
      f.change = change;
      if (f.predicted_gain >= 1.05) f.severity = Severity::medium;
    }
    out.push_back(std::move(f));
  }
  // Layers on the FP8 tensor cores slower than in bfloat16: too small to repay the casts. One
  // finding for them all (a transformer has many alike), its change the layer that loses most,
  // its gain that of keeping them all in bfloat16.
  if (d.baseline) {
    std::vector<int> small;
    int worst = -1;
    double worst_loss = 0.0, fp8_total = 0.0, bf16_total = 0.0;
    for (const int li : on_cores) {
      const double fp8_s = layer_s(d.mixed, li), bf16_s = layer_s(*d.baseline, li);
      if (fp8_s <= bf16_s || fp8_s <= 0.0) continue;
      small.push_back(li);
      fp8_total += fp8_s;
      bf16_total += bf16_s;
      if (fp8_s - bf16_s > worst_loss) {
        worst_loss = fp8_s - bf16_s;
        worst = li;
      }
    }
    if (!small.empty()) {
      const LayerInfo& info = table.layers[static_cast<std::size_t>(worst)];
      const double fp8_s = layer_s(d.mixed, worst), bf16_s = layer_s(*d.baseline, worst);
      Finding f;
      f.id = "fp8-too-small";
      f.layers = small;
      f.figures["layers"] = static_cast<double>(small.size());
      f.figures["fp8_ms"] = fp8_total * 1e3;
      f.figures["bfloat16_ms"] = bf16_total * 1e3;
      f.severity =
          fp8_total - bf16_total >= 0.02 * d.mixed.step_s() ? Severity::medium : Severity::low;
      const std::string gemm =
          std::to_string(info.output_shape.empty() ? 0 : info.output_shape.back()) + " outputs";
      f.message = small.size() == 1
                      ? title(d, worst) + " takes " + millis(fp8_s) + " in FP8 against " +
                            millis(bf16_s) + " in bfloat16: its GEMMs (" + gemm +
                            ") are too small for the FP8 rate to repay its casts, transposes "
                            "and amaxes"
                      : std::to_string(small.size()) + " FP8 layers take " + millis(fp8_total) +
                            " against " + millis(bf16_total) +
                            " in bfloat16: their GEMMs are too small for the FP8 rate to repay "
                            "their casts, transposes and amaxes (most: " +
                            title(d, worst) + ", " + millis(fp8_s) + " against " + millis(bf16_s) +
                            ")";
      f.change = {Field::layer_bfloat16, worst, 1};
      DiagnosisInput kept = d.input;
      for (const int li : small)
        kept.spec.layers[static_cast<std::size_t>(li)].force_bfloat16 = true;
      const StepCost after = predict_step(kept.spec, kept.mixed, kept.run, kept.device);
      f.predicted_gain = d.mixed.step_s() / after.step_s();
      f.suggestion = small.size() == 1
                         ? "keep it in bfloat16 (\"dtype\": \"bfloat16\")"
                         : "keep them in bfloat16 (\"dtype\": \"bfloat16\"; --what-if keeps " +
                               title(d, worst) + ")";
      out.push_back(std::move(f));
    }
  }
  // A GPU's prediction keeps Conv2D in bfloat16 but for the pointwise ones (a Dense over the
  // pixels: on the FP8 tensor cores, or named above by a dimension off 16).
  if (dev.is_gpu()) {
    std::vector<int> convs;
    for (int li = 0; li < layers; ++li) {
      const LayerSpec& l = d.input.spec.layers[static_cast<std::size_t>(li)];
      if (l.type == LayerType::Conv2D && !l.force_float32 && !l.force_bfloat16 &&
          !on_cores.contains(li) && !missed.contains(li)) {
        convs.push_back(li);
      }
    }
    if (!convs.empty() && has_fp8_roof(dev)) {
      Finding f;
      f.id = "fp8-convolutions";
      f.severity = Severity::info;
      f.layers = convs;
      const bool one = convs.size() == 1;
      f.message = std::to_string(convs.size()) +
                  (one ? " Conv2D layer with a window larger than 1x1 is predicted in bfloat16, "
                         "as MixLab's CUDA backend runs it"
                       : " Conv2D layers with windows larger than 1x1 are predicted in "
                         "bfloat16, as MixLab's CUDA backend runs them") +
                  ": cuBLASLt's FP8 matmuls are GEMMs, and as a GEMM over its windows (im2col) "
                  "a convolution moves its input once per tap (9 times for a 3x3), more than "
                  "twice the rate repays against cuDNN's bfloat16 kernels; pointwise (1x1) ones "
                  "run on the FP8 GEMMs as Dense layers (the CPU emulates every FP8 "
                  "convolution, as its runs show; Keras quantizes only Dense and EinsumDense)";
      out.push_back(std::move(f));
    }
  }
  // Measured saturation (any device: the CPU's emulation is the GPU's numerics).
  const std::vector<Fp8Saturation>* saturation = nullptr;
  std::string where;
  if (d.measured && !d.measured->mixed.fp8_saturation.empty()) {
    saturation = &d.measured->mixed.fp8_saturation;
    where = "the measured run";
  } else if (d.layer_times && !d.layer_times->mixed.fp8_saturation.empty()) {
    saturation = &d.layer_times->mixed.fp8_saturation;
    where = "the timing run";
  }
  if (saturation != nullptr) {
    for (const Fp8Saturation& s : *saturation) {
      if (s.share <= kFp8SaturationThreshold || s.layer < 0 || s.layer >= layers) continue;
      Finding f;
      f.id = "fp8-saturation";
      f.severity = Severity::medium;
      f.layers = {s.layer};
      f.figures["saturated_share"] = s.share;
      f.figures["step"] = static_cast<double>(s.step);
      f.figures["threshold"] = kFp8SaturationThreshold;
      const bool gradient = s.tensor == "gradient";
      f.message = title(d, s.layer) + ": " + percent(s.share) + " of its " + s.tensor +
                  "'s values saturated at " +
                  (gradient && d.input.run.fp8.formats == Fp8Formats::hybrid ? "E5M2's largest"
                                                                             : "E4M3's largest") +
                  " in step " + std::to_string(s.step) + " of " + where + " (over " +
                  percent(kFp8SaturationThreshold) +
                  "): delayed scaling does not follow its range, and FP8 clips it";
      f.change = {Field::layer_bfloat16, s.layer, 1};
      f.suggestion = "keep it in bfloat16 (\"dtype\": \"bfloat16\"), or raise --fp8-margin";
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace mixlab::doctor::rules
