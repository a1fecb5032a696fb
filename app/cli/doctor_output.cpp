#include "app/cli/doctor_output.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

#include "engine/doctor/doctor_text.h"
#include "engine/doctor/library_rules.h"
#include "engine/doctor/report_json.h"
#include "engine/spec/layer_text.h"

namespace mixlab::cli {

using doctor::Diagnosis;
using doctor::Finding;
using nlohmann::ordered_json;

void print_profiles(std::span<const doctor::DeviceProfile> profiles, bool json) {
  if (json) {
    ordered_json list = ordered_json::array();
    for (const auto& p : profiles) list.push_back(doctor::to_json(p));
    std::cout << list.dump(2) << "\n";
    return;
  }
  std::printf("%-16s %4s %4s %8s %8s %8s %8s %8s %8s\n", "profile", "cc", "SMs", "GB/s",
              "fp32", "tf32", "fp16", "bf16", "fp8");
  const auto t = [](double flops) {
    char text[16];
    if (flops <= 0) return std::string("-");
    std::snprintf(text, sizeof text, "%.1f", flops / 1e12);
    return std::string(text);
  };
  for (const auto& p : profiles) {
    std::printf("%-16s %4s %4d %8.0f %8s %8s %8s %8s %8s\n", p.name.c_str(),
                p.compute_capability.c_str(), p.sm_count, p.bandwidth_bytes_per_s / 1e9,
                t(p.peak.float32).c_str(), t(p.peak.tf32).c_str(),
                t(p.peak.float16_acc32).c_str(), t(p.peak.bfloat16).c_str(),
                t(p.peak.fp8).c_str());
  }
  std::printf("dense peak TFLOP/s; fp16 with float32 accumulation (mixed_float16 as Keras runs "
              "it); sources: mixlab-cli doctor --list-profiles --json\n");
}

void print_diagnosis(const Diagnosis& d) {
  const doctor::DeviceProfile& dev = d.input.device;
  const std::string f32 = "float32";
  const std::string mixed(to_string(d.input.mixed));
  std::printf("%s\n", d.verdict.c_str());
  if (d.confidence) std::printf("%s\n", d.confidence->line.c_str());
  std::printf("\n");
  std::printf("device: %s (%s), model %s, batch %d, %s\n", dev.name.c_str(),
              dev.measured ? "roofs measured on this machine"
                           : (dev.is_gpu() ? "published figures: a prediction" : "profile"),
              d.input.spec.name.c_str(), d.input.run.batch_size,
              std::string(to_string(d.input.run.optimizer.kind)).c_str());
  if (dev.is_gpu() && !dev.libraries.cublas.empty()) {
    const auto source = dev.sources.find("libraries");
    const bool attention =
        std::any_of(d.input.spec.layers.begin(), d.input.spec.layers.end(),
                    [](const LayerSpec& l) { return l.type == LayerType::MultiHeadAttention; });
    if (attention) {
      const bool fused = d.input.run.attention != AttentionKernels::unfused;
      std::printf("attention: %s (--attention %s)\n",
                  fused ? "cuDNN 9's fused scaled dot-product attention where it applies"
                        : "MixLab's unfused kernels (cuBLASLt and a float32 softmax)",
                  std::string(to_string(d.input.run.attention)).c_str());
    }
    std::printf("libraries: %s (%s)\n", doctor::describe_gpu_libraries(dev.libraries).c_str(),
                source == dev.sources.end() ? "" : source->second.c_str());
  }
  std::printf("layers: %s\n",
              !d.mixed.scaled_source.empty() ? d.mixed.scaled_source.c_str()
              : d.float32.measured_source.empty()
                  ? "the roofline model's predictions (not timed on this device)"
                  : (d.float32.measured_source + "; the loss and the data modelled").c_str());
  std::printf("%-22s %14s %16s\n", "", f32.c_str(), mixed.c_str());
  std::printf("%-22s %14s %16s   %s float32\n", "predicted step",
              doctor::millis(d.float32.step_s()).c_str(), doctor::millis(d.mixed.step_s()).c_str(),
              doctor::speedup_words(d.predicted_speedup()).c_str());
  if (d.measured) {
    std::printf("%-22s %14s %16s   %s float32\n", "measured step (median)",
                doctor::millis(d.measured->float32.step_ms / 1e3).c_str(),
                doctor::millis(d.measured->mixed.step_ms / 1e3).c_str(),
                doctor::speedup_words(d.measured->speedup()).c_str());
  }
  if (d.baseline) {
    // mixed_float8: the gain FP8 promises is over bfloat16.
    std::printf("%-22s %14s   %s is %s mixed_bfloat16\n", "predicted bf16 step",
                doctor::millis(d.baseline->step_s()).c_str(), mixed.c_str(),
                doctor::speedup_words(d.predicted_fp8_speedup()).c_str());
    if (d.measured && d.measured->baseline) {
      std::printf(
          "%-22s %14s   %s is %s mixed_bfloat16\n", "measured bf16 step",
          doctor::millis(d.measured->baseline->step_ms / 1e3).c_str(), mixed.c_str(),
          doctor::speedup_words(d.measured->baseline->step_ms / d.measured->mixed.step_ms).c_str());
    }
  }
  std::printf("%-22s %14s %16s\n", "training memory", doctor::megabytes(d.float32.memory.total()).c_str(),
              doctor::megabytes(d.mixed.memory.total()).c_str());
  std::printf("\nwhere the time goes (predicted):\n");
  for (int k = 0; k < doctor::kTimeKinds; ++k) {
    const auto kind = static_cast<doctor::TimeKind>(k);
    const double a = d.float32.seconds(kind), b = d.mixed.seconds(kind);
    if (a <= 0 && b <= 0) continue;
    std::printf("  %-20s %14s %16s\n", std::string(to_string(kind)).c_str(),
                doctor::millis(a).c_str(), doctor::millis(b).c_str());
  }
  std::printf("\nfindings:%s\n", d.findings.empty() ? " none" : "");
  for (const Finding& f : d.findings) {
    std::string layers;
    for (const int l : f.layers) layers += (layers.empty() ? "" : ", ") + std::to_string(l);
    const char* noun = f.layers.size() == 1 ? " (layer " : " (layers ";
    std::printf("  [%s] %s%s: %s\n", std::string(to_string(f.severity)).c_str(), f.id.c_str(),
                layers.empty() ? "" : (noun + layers + ")").c_str(), f.message.c_str());
    if (!f.suggestion.empty()) {
      std::printf("      fix: %s\n", doctor::with_gain(f.suggestion, f.predicted_gain).c_str());
    }
  }
  // The layer's title begins with its index ("1 Dense 3000, relu"): no column of its own.
  std::printf("\n%-34s %21s %21s", "layer", ("predicted " + f32 + " ms").c_str(),
              ("predicted " + mixed + " ms").c_str());
  if (d.measured) std::printf(" %21s %21s", "measured float32", ("measured " + mixed).c_str());
  std::printf("\n%-34s %21s %21s", "", "fwd / bwd", "fwd / bwd");
  if (d.measured) std::printf(" %21s %21s", "fwd / bwd", "fwd / bwd");
  std::printf("\n");
  const auto pair = [](double fwd_ms, double bwd_ms) {
    char text[48];
    std::snprintf(text, sizeof text, "%9.3f / %9.3f", fwd_ms, bwd_ms);
    return std::string(text);
  };
  for (std::size_t li = 0; li < d.input.spec.layers.size(); ++li) {
    const int l = static_cast<int>(li);
    std::string title = layer_title(d.input.spec, l);
    if (title.size() > 34) title = title.substr(0, 33) + "~";
    std::printf("%-34s %21s %21s", title.c_str(),
                pair(d.float32.layer_seconds(l, false) * 1e3, d.float32.layer_seconds(l, true) * 1e3).c_str(),
                pair(d.mixed.layer_seconds(l, false) * 1e3, d.mixed.layer_seconds(l, true) * 1e3).c_str());
    if (d.measured) {
      for (const doctor::MeasuredRun* m : {&d.measured->float32, &d.measured->mixed}) {
        std::printf(" %21s", li < m->layer_forward_ms.size()
                                 ? pair(m->layer_forward_ms[li], m->layer_backward_ms[li]).c_str()
                                 : "-");
      }
    }
    if (!d.mixed.scaled_source.empty()) {  // which figures were scaled from the timing
      const auto source = [l](const doctor::StepCost& c) {
        const auto why = c.modelled_why.find(l);
        return std::string(c.layer_source(l)) +
               (why != c.modelled_why.end() ? " (" + why->second + ")" : "");
      };
      const std::string f = source(d.float32), m = source(d.mixed);
      std::printf("  %s", f == m ? f.c_str() : (f + " / " + m).c_str());
    }
    std::printf("\n");
  }
  if (d.measured) {
    std::printf("\nsteps (median ms)      data    forward   backward  optimizer\n");
    for (const doctor::MeasuredRun* m : {&d.measured->float32, &d.measured->mixed}) {
      const doctor::StepCost& c = m == &d.measured->float32 ? d.float32 : d.mixed;
      std::printf("%-15s pred %8.3f %10.3f %10.3f %10.3f\n", std::string(to_string(m->policy)).c_str(),
                  c.seconds(doctor::CostPhase::data) * 1e3, c.seconds(doctor::CostPhase::forward) * 1e3,
                  (c.seconds(doctor::CostPhase::loss) + c.seconds(doctor::CostPhase::backward_data) +
                   c.seconds(doctor::CostPhase::backward_weights)) * 1e3,
                  (c.seconds(doctor::CostPhase::optimizer) + c.seconds(doctor::CostPhase::loss_scaling)) * 1e3);
      std::printf("%-15s meas %8.3f %10.3f %10.3f %10.3f\n", "", m->data_wait_ms, m->forward_ms,
                  m->backward_ms, m->optimizer_ms);
    }
  }
}

ordered_json sweep_json(const std::vector<SweepRow>& rows) {
  ordered_json out = ordered_json::array();
  for (const SweepRow& r : rows) {
    const ordered_json full = doctor::to_json(r.diagnosis);
    ordered_json row{{"batch_size", r.batch},
                     {"predicted_step_ms", full["predicted_step_ms"]},
                     {"predicted_speedup", full["predicted_speedup"]}};
    if (r.diagnosis.measured) {
      row["measured_step_ms"] = full["measured_step_ms"];
      row["measured_speedup"] = full["measured_speedup"];
    }
    if (r.report_id != 0) {
      row["report_id"] = r.report_id;
      row["run_ids"] = r.run_ids;
    }
    out.push_back(std::move(row));
  }
  return out;
}

void print_sweep(const std::vector<SweepRow>& rows) {
  if (rows.empty()) return;
  const std::string mixed(to_string(rows.front().diagnosis.input.mixed));
  std::printf("\nsweep: %s over float32 by batch size (above 1: mixed is faster)\n", mixed.c_str());
  std::printf("%6s %14s %16s %10s", "batch", "float32 ms", (mixed + " ms").c_str(), "predicted");
  const bool measured = rows.front().diagnosis.measured.has_value();
  if (measured) std::printf(" %14s %16s %10s", "float32 ms", (mixed + " ms").c_str(), "measured");
  std::printf("\n");
  for (const SweepRow& r : rows) {
    const Diagnosis& d = r.diagnosis;
    std::printf("%6d %14.3f %16.3f %9.2fx", r.batch, d.float32.step_s() * 1e3,
                d.mixed.step_s() * 1e3, d.predicted_speedup());
    if (d.measured) {
      std::printf(" %14.3f %16.3f %9.2fx", d.measured->float32.step_ms, d.measured->mixed.step_ms,
                  d.measured->speedup());
    }
    std::printf("\n");
  }
}

WhatIf what_if_of(const Diagnosis& d) {
  WhatIf w;
  for (const Finding& f : d.findings) {
    if (f.change && f.predicted_gain > 0) {
      w.finding = &f;
      break;
    }
  }
  return w;
}

ordered_json what_if_json(const WhatIf& w, const doctor::DiagnosisInput& input) {
  (void)input;
  if (w.finding == nullptr) return nullptr;
  const auto num = [](double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(); };
  ordered_json j{{"finding", w.finding->id},
                 {"change", doctor::to_json(*w.finding)["change"]},
                 {"description", doctor::describe(w.finding->change)},
                 {"predicted_gain", w.finding->predicted_gain},
                 {"measured_gain", num(w.measured_gain)},
                 {"before_step_ms", num(w.before_ms)},
                 {"after_step_ms", num(w.after_ms)}};
  if (!w.run_ids.empty()) j["run_ids"] = w.run_ids;
  return j;
}

void print_what_if(const WhatIf& w, const doctor::DiagnosisInput& input, bool predict_only) {
  std::printf("\nwhat if: ");
  if (w.finding == nullptr) {
    std::printf("no finding suggests a change the doctor can make\n");
    return;
  }
  std::printf("%s (%s): predicted %s faster", doctor::describe(w.finding->change).c_str(),
              w.finding->id.c_str(), doctor::ratio(w.finding->predicted_gain).c_str());
  if (predict_only || !std::isfinite(w.measured_gain)) {
    std::printf("; not measured (a profile, not this machine's device)\n");
    return;
  }
  std::printf("; measured %s (%s step %.3f ms at batch %d, then %.3f ms)\n",
              doctor::ratio(w.measured_gain).c_str(), std::string(to_string(input.mixed)).c_str(),
              w.before_ms, input.run.batch_size, w.after_ms);
}

}  // namespace mixlab::cli
