#include "engine/doctor/report_json.h"

#include <cmath>

#include "engine/doctor/library_rules.h"
#include "engine/spec/layer_text.h"

namespace mixlab::doctor {

namespace {

using nlohmann::ordered_json;

double ms(double seconds) { return seconds * 1e3; }

ordered_json number_or_null(double value) {
  return std::isfinite(value) ? ordered_json(value) : ordered_json();
}

ordered_json items_json(const StepCost& cost) {
  ordered_json items = ordered_json::array();
  for (const CostItem& item : cost.items) {
    ordered_json j{{"label", item.label},
                   {"layer", item.layer >= 0 ? ordered_json(item.layer) : ordered_json()},
                   {"phase", std::string(to_string(item.phase))},
                   {"kind", std::string(to_string(item.kind))},
                   {"dtype", std::string(to_string(item.dtype))},
                   {"flops", item.flops},
                   {"bytes_f32", item.bytes_f32},
                   {"bytes_16", item.bytes_16},
                   {"bytes_8", item.bytes_8},
                   {"launches", item.launches},
                   {"intensity_flop_per_byte", item.intensity()},
                   {"peak_flops", item.peak_flops},
                   {"predicted_ms", ms(item.time_s())},
                   {"source", item.measured ? "measured" : "modelled"},
                   {"model_ms", ms(item.measured ? item.model_s : item.time_s())},
                   {"bound", item.memory_bound() ? "memory" : "compute"},
                   {"emulated", item.emulated},
                   {"fp8", item.fp8}};
    if (item.gemm) {
      j["gemm"] = {
          {"m", item.shape.m},
          {"n", item.shape.n},
          {"k", item.shape.k},
          {"tile", std::to_string(item.quantization.tile_m) + "x" +
                       std::to_string(item.quantization.tile_n)},
          {"tile_efficiency", item.quantization.tile_efficiency},
          {"wave_efficiency", item.quantization.wave_efficiency},
          {"misaligned", item.misaligned.empty() ? ordered_json() : ordered_json(item.misaligned)},
          {"fp8_misaligned",
           item.fp8_misaligned.empty() ? ordered_json() : ordered_json(item.fp8_misaligned)}};
    }
    items.push_back(std::move(j));
  }
  return items;
}

ordered_json breakdown_json(const StepCost& cost) {
  ordered_json j;
  for (int k = 0; k < kTimeKinds; ++k) {
    const auto kind = static_cast<TimeKind>(k);
    j[std::string(to_string(kind))] = ms(cost.seconds(kind));
  }
  return j;
}

}  // namespace

ordered_json to_json(const DeviceProfile& p) {
  ordered_json j{{"name", p.name}, {"kind", p.kind}, {"measured", p.measured}};
  if (p.is_gpu()) {
    j["compute_capability"] = p.compute_capability;
    j["tensor_cores"] = p.tensor_cores;
    j["sm_count"] = p.sm_count;
    j["boost_clock_mhz"] = p.boost_clock_mhz;
    j["memory_bytes"] = p.memory_bytes;
    j["l2_bytes"] = p.l2_bytes;
    j["host_link_gb_s"] = p.host_link_bytes_per_s / 1e9;
    j["libraries"] = {{"cublas", p.libraries.cublas}, {"cudnn", p.libraries.cudnn}};
    j["misaligned_matmul_efficiency"] = misaligned_efficiency(p);
  } else {
    j["threads"] = p.threads;
    j["isa"] = std::string(to_string(p.isa));
    j["convolution_efficiency"] = p.convolution_efficiency;
    const auto measured = [](double e) { return e > 0 ? ordered_json(e) : ordered_json(); };
    j["narrow_convolution_efficiency"] = measured(p.narrow_convolution_efficiency);
    j["bf16_convolution_efficiency"] = measured(p.bf16_convolution_efficiency);
    j["bf16_narrow_convolution_efficiency"] = measured(p.bf16_narrow_convolution_efficiency);
    j["bf16_weights_gradient_efficiency"] = measured(p.bf16_weights_gradient_efficiency);
    j["elementwise_efficiency"] = measured(p.elementwise_efficiency);
    j["bf16_elementwise_efficiency"] = measured(p.bf16_elementwise_efficiency);
    j["normalization_efficiency"] = measured(p.normalization_efficiency);
    j["bf16_normalization_efficiency"] = measured(p.bf16_normalization_efficiency);
    j["small_gemm_efficiency"] = p.small_gemm_efficiency;
    j["pooling_efficiency"] = p.pooling_efficiency;
  }
  j["memory_bandwidth_gb_s"] = p.bandwidth_bytes_per_s / 1e9;
  const auto tflops = [](double flops) {
    return flops > 0 ? ordered_json(flops / 1e12) : ordered_json();
  };
  j["peak_tflops"] = {{"float32", tflops(p.peak.float32)},
                      {"tf32", tflops(p.peak.tf32)},
                      {"float16_acc32", tflops(p.peak.float16_acc32)},
                      {"float16_acc16", tflops(p.peak.float16_acc16)},
                      {"bfloat16", tflops(p.peak.bfloat16)},
                      {"fp8", tflops(p.peak.fp8)}};
  j["launch_overhead_us"] = p.launch_overhead_s * 1e6;
  j["sources"] = p.sources;
  return j;
}

ordered_json to_json(const Finding& f) {
  ordered_json j{{"id", f.id},
                 {"severity", std::string(to_string(f.severity))},
                 {"layers", f.layers},
                 {"message", f.message},
                 {"suggestion", f.suggestion},
                 {"predicted_gain", f.predicted_gain > 0 ? ordered_json(f.predicted_gain)
                                                         : ordered_json()},
                 {"figures", f.figures}};
  if (f.change) {
    j["change"] = {{"field", std::string(to_string(f.change.field))},
                   {"layer", f.change.layer >= 0 ? ordered_json(f.change.layer) : ordered_json()},
                   {"value", f.change.value}};
  } else {
    j["change"] = nullptr;
  }
  return j;
}

ordered_json to_json(const Diagnosis& d) {
  const std::string f32(to_string(Policy::float32));
  const std::string mixed(to_string(d.input.mixed));
  ordered_json j;
  j["verdict"] = d.verdict;
  if (d.confidence) j["confidence"] = to_json(*d.confidence);
  j["model"] = d.input.spec.name;
  j["device"] = to_json(d.input.device);
  j["batch_size"] = d.input.run.batch_size;
  j["optimizer"] = std::string(to_string(d.input.run.optimizer.kind));
  j["mixed_policy"] = mixed;
  j["support"] = {{"level", std::string(to_string(d.mixed.support.level))},
                  {"reason", d.mixed.support.reason}};
  if (d.baseline) {
    // mixed_float8 set against mixed_bfloat16 too.
    const std::string bf16(to_string(d.baseline->policy));
    j["baseline"] = {{"policy", bf16},
                     {"predicted_step_ms", ms(d.baseline->step_s())},
                     {"predicted_speedup", number_or_null(d.predicted_fp8_speedup())},
                     {"layers_source", d.baseline->measured_source.empty()
                                           ? ordered_json("roofline model")
                                           : ordered_json(d.baseline->measured_source)},
                     {"time_breakdown_ms", breakdown_json(*d.baseline)}};
    if (d.measured && d.measured->baseline) {
      j["baseline"]["measured_step_ms"] = d.measured->baseline->step_ms;
      j["baseline"]["measured_speedup"] =
          number_or_null(d.measured->baseline->step_ms / d.measured->mixed.step_ms);
    }
  }
  j["predicted_step_ms"] = {{f32, ms(d.float32.step_s())}, {mixed, ms(d.mixed.step_s())}};
  j["predicted_speedup"] = number_or_null(d.predicted_speedup());
  const auto bound = [&](Policy p) {
    return ms(roofline_bound_s(d.input.spec, p, d.input.run, d.input.device));
  };
  j["roofline_bound_ms"] = {{f32, bound(Policy::float32)}, {mixed, bound(d.input.mixed)}};
  j["layers_source"] = !d.mixed.scaled_source.empty() ? ordered_json(d.mixed.scaled_source)
                       : d.float32.measured_source.empty()
                           ? ordered_json("roofline model")
                           : ordered_json(d.float32.measured_source);
  if (d.measured) {
    j["measured_step_ms"] = {{f32, d.measured->float32.step_ms},
                             {mixed, d.measured->mixed.step_ms}};
    j["measured_speedup"] = number_or_null(d.measured->speedup());
  }
  j["training_memory_bytes"] = {{f32, d.float32.memory.total()}, {mixed, d.mixed.memory.total()}};
  auto& findings = j["findings"] = ordered_json::array();
  for (const Finding& f : d.findings) findings.push_back(to_json(f));
  auto& layers = j["layers"] = ordered_json::array();
  for (std::size_t li = 0; li < d.input.spec.layers.size(); ++li) {
    const int l = static_cast<int>(li);
    ordered_json row{{"index", l}, {"title", layer_title(d.input.spec, l)}};
    for (const StepCost* c : {&d.float32, &d.mixed}) {
      // "measured": timed on this device (the micro-benchmark); "scaled": timed on another and
      // scaled here (--from); else the roofline model's, with why where a timing was not
      // scaled. roofline_ms is the model's either way, to set the other figures against.
      auto& p = row["predicted"][std::string(to_string(c->policy))] = {
          {"forward_ms", ms(c->layer_seconds(l, false))},
          {"backward_ms", ms(c->layer_seconds(l, true))},
          {"source", std::string(c->layer_source(l))},
          {"roofline_ms", ms(c->layer_model_seconds(l))}};
      if (const auto why = c->modelled_why.find(l); why != c->modelled_why.end())
        p["modelled_why"] = why->second;
    }
    if (d.measured) {
      for (const MeasuredRun* m : {&d.measured->float32, &d.measured->mixed}) {
        if (li < m->layer_forward_ms.size()) {
          row["measured"][std::string(to_string(m->policy))] = {
              {"forward_ms", m->layer_forward_ms[li]}, {"backward_ms", m->layer_backward_ms[li]}};
        }
      }
    }
    layers.push_back(std::move(row));
  }
  j["time_breakdown_ms"] = {{f32, breakdown_json(d.float32)}, {mixed, breakdown_json(d.mixed)}};
  j["items"] = {{f32, items_json(d.float32)}, {mixed, items_json(d.mixed)}};
  return j;
}

}  // namespace mixlab::doctor
