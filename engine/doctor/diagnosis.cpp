#include "engine/doctor/diagnosis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/doctor/doctor_text.h"
#include "engine/doctor/scaling.h"

namespace mixlab::doctor {

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::info: return "info";
    case Severity::low: return "low";
    case Severity::medium: return "medium";
    case Severity::high: return "high";
  }
  return "?";
}

std::string speedup_words(double speedup) {
  if (!std::isfinite(speedup) || speedup <= 0) return "of unknown speed";
  if (std::abs(speedup - 1.0) < 0.005) return "as fast as";
  char text[48];
  if (speedup < 1.0) {
    std::snprintf(text, sizeof text, "%.2fx slower than", 1.0 / speedup);
  } else {
    std::snprintf(text, sizeof text, "%.2fx faster than", speedup);
  }
  return text;
}

std::string_view to_string(SuggestedChange::Field field) {
  using F = SuggestedChange::Field;
  switch (field) {
    case F::none: return "none";
    case F::batch_size: return "batch_size";
    case F::units: return "units";
    case F::filters: return "filters";
    case F::input_channels: return "input_channels";
    case F::cuda_graphs: return "cuda_graphs";
    case F::data_on_device: return "data_on_device";
    case F::layer_float32:
      return "layer_float32";
    case F::layer_bfloat16:
      return "layer_bfloat16";
    case F::key_dim:
      return "key_dim";
    case F::sequence_length:
      return "sequence_length";
  }
  return "?";
}

DiagnosisInput apply_change(const DiagnosisInput& input, const SuggestedChange& change) {
  using F = SuggestedChange::Field;
  DiagnosisInput out = input;
  const auto layer = [&](LayerType type) -> LayerSpec& {
    if (change.layer < 0 || change.layer >= static_cast<int>(out.spec.layers.size()) ||
        out.spec.layers[static_cast<std::size_t>(change.layer)].type != type) {
      throw ConfigError("layer " + std::to_string(change.layer) + " is not a " +
                        std::string(mixlab::to_string(type)) + " layer: cannot change its " +
                        std::string(to_string(change.field)));
    }
    return out.spec.layers[static_cast<std::size_t>(change.layer)];
  };
  switch (change.field) {
    case F::none: break;
    case F::batch_size: out.run.batch_size = static_cast<int>(change.value); break;
    case F::units: layer(LayerType::Dense).units = static_cast<int>(change.value); break;
    case F::filters: layer(LayerType::Conv2D).filters = static_cast<int>(change.value); break;
    case F::input_channels:
      if (out.spec.input_shape.empty()) throw ConfigError("the model has no input shape");
      out.spec.input_shape.back() = change.value;
      break;
    case F::cuda_graphs: out.run.cuda_graphs = change.value != 0; break;
    case F::data_on_device: out.run.data_on_device = change.value != 0; break;
    case F::layer_float32:
      if (change.layer < 0 || change.layer >= static_cast<int>(out.spec.layers.size())) {
        throw ConfigError("the model has no layer " + std::to_string(change.layer));
      }
      out.spec.layers[static_cast<std::size_t>(change.layer)].force_float32 = change.value != 0;
      break;
    case F::layer_bfloat16:
      if (change.layer < 0 || change.layer >= static_cast<int>(out.spec.layers.size())) {
        throw ConfigError("the model has no layer " + std::to_string(change.layer));
      }
      out.spec.layers[static_cast<std::size_t>(change.layer)].force_bfloat16 = change.value != 0;
      if (change.value != 0)
        out.spec.layers[static_cast<std::size_t>(change.layer)].force_float32 = false;
      break;
    case F::key_dim: {
      LayerSpec& l = layer(LayerType::MultiHeadAttention);
      // value_dim 0 follows key_dim, as in Keras; an explicit one keeps its size.
      l.key_dim = static_cast<int>(change.value);
      break;
    }
    case F::sequence_length:
      if (out.spec.input_shape.empty()) throw ConfigError("the model has no input shape");
      out.spec.input_shape.front() = change.value;
      break;
  }
  return out;
}

std::string describe(const SuggestedChange& change) {
  using F = SuggestedChange::Field;
  const std::string v = std::to_string(change.value);
  switch (change.field) {
    case F::none: return "no change";
    case F::batch_size: return "batch size " + v;
    case F::units: return "layer " + std::to_string(change.layer) + " units " + v;
    case F::filters: return "layer " + std::to_string(change.layer) + " filters " + v;
    case F::input_channels: return "input channels " + v;
    case F::cuda_graphs: return change.value != 0 ? "CUDA graphs on" : "CUDA graphs off";
    case F::data_on_device: return change.value != 0 ? "dataset on the device" : "dataset on the host";
    case F::layer_float32:
      return "layer " + std::to_string(change.layer) +
             (change.value != 0 ? " in float32" : " in the policy");
    case F::layer_bfloat16:
      return "layer " + std::to_string(change.layer) +
             (change.value != 0 ? " in bfloat16 (out of FP8)" : " in the policy");
    case F::key_dim:
      return "layer " + std::to_string(change.layer) + " key_dim " + v;
    case F::sequence_length:
      return "sequence length " + v;
  }
  return "?";
}

namespace {

// "on an RTX 2060", "on this CPU (AMD EPYC ..., 2 threads)".
std::string on_device(const DeviceProfile& dev) {
  if (!dev.is_gpu()) {
    return "on this CPU (" + dev.name + ", " + std::to_string(dev.threads) + " threads)";
  }
  const char first = dev.name.empty() ? 'x' : dev.name.front();
  const bool vowel_sound = first == 'A' || first == 'H' || first == 'L' || first == 'R';
  return std::string(vowel_sound ? "on an " : "on a ") + dev.name;
}

std::string verdict(const Diagnosis& d) {
  const std::string policy(to_string(d.input.mixed));
  const std::string where = on_device(d.input.device);
  const std::string batch = " at batch " + std::to_string(d.input.run.batch_size);
  if (d.mixed.support.level == Support::unsupported) {
    return policy + " cannot run " + where + ": " + d.mixed.support.reason + ".";
  }
  std::string text =
      policy + " is predicted " + speedup_words(d.predicted_speedup()) + " float32" +
      (d.baseline ? " and " + speedup_words(d.predicted_fp8_speedup()) + " mixed_bfloat16"
                  : std::string()) +
      " " + where + " for this model" + batch;
  // The most severe finding that explains it, and its fix.
  const Finding* top = nullptr;
  for (const Finding& f : d.findings) {
    if (f.severity >= Severity::medium) {
      top = &f;
      break;
    }
  }
  if (top != nullptr) {
    text += ": " + top->message + ".";
    if (!top->suggestion.empty()) {
      const double gain = top->predicted_gain > 1.0 ? top->predicted_gain : 0.0;
      std::string s = with_gain(top->suggestion, gain);
      s.front() = static_cast<char>(std::toupper(static_cast<unsigned char>(s.front())));
      text += " " + s + ".";
    }
  } else {
    text += ".";
  }
  if (d.measured) {
    char ms[96];
    std::snprintf(ms, sizeof ms, " (median step %.2f ms against %.2f ms).",
                  d.measured->mixed.step_ms, d.measured->float32.step_ms);
    text += " Measured: " + speedup_words(d.measured->speedup()) + " float32" + ms;
    if (d.measured->baseline && d.measured->baseline->step_ms > 0) {
      std::snprintf(ms, sizeof ms, " (its median step %.2f ms).", d.measured->baseline->step_ms);
      text += " And " + speedup_words(d.measured->baseline->step_ms / d.measured->mixed.step_ms) +
              " mixed_bfloat16" + ms;
    }
  }
  return text;
}

}  // namespace

Diagnosis diagnose(const DiagnosisInput& input, const std::optional<Measurement>& measured,
                   const std::optional<Measurement>& layer_times,
                   const std::optional<ScaleFrom>& scale_from) {
  Diagnosis d;
  d.input = input;
  d.float32 = predict_step(input.spec, Policy::float32, input.run, input.device);
  d.mixed = predict_step(input.spec, input.mixed, input.run, input.device);
  if (input.mixed == Policy::mixed_float8) {
    d.baseline = predict_step(input.spec, Policy::mixed_bfloat16, input.run, input.device);
  }
  d.measured = measured;
  d.layer_times = layer_times;
  if (layer_times) {
    const auto apply = [](StepCost& cost, const MeasuredRun& run) {
      apply_layer_times(cost, run.layer_forward_ms, run.layer_backward_ms, run.optimizer_ms,
                        "each layer timed on this device (" + std::to_string(run.steps) +
                            " steps, the median after the warm-up" +
                            (run.cached.empty() ? std::string() : "; " + run.cached) + ")");
    };
    apply(d.float32, layer_times->float32);
    apply(d.mixed, layer_times->mixed);
    if (d.baseline && layer_times->baseline) apply(*d.baseline, *layer_times->baseline);
  }
  if (scale_from) {
    const auto scale = [&](StepCost& there, Policy policy, const MeasuredRun& run) {
      StepCost here = predict_step(input.spec, policy, input.run, scale_from->device);
      apply_layer_times(here, run.layer_forward_ms, run.layer_backward_ms, run.optimizer_ms,
                        "timed");
      scale_layer_times(there, here, scale_from->device, input.device);
    };
    scale(d.float32, Policy::float32, scale_from->times.float32);
    scale(d.mixed, input.mixed, scale_from->times.mixed);
    if (d.baseline && scale_from->times.baseline) {
      scale(*d.baseline, Policy::mixed_bfloat16, *scale_from->times.baseline);
    }
  }
  using Rule = std::vector<Finding> (*)(const Diagnosis&);
  for (const Rule rule :
       {rules::memory_fit, rules::capability, rules::weight_bound, rules::input_bound,
        rules::overhead_bound, rules::memory_bound, rules::normalization_bound,
        rules::attention_bound, rules::alignment, rules::quantization, rules::loss_scaling,
        rules::fp8, rules::mixed_no_gain, rules::measured_vs_predicted}) {
    for (Finding& f : rule(d)) d.findings.push_back(std::move(f));
  }
  std::stable_sort(d.findings.begin(), d.findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    return a.predicted_gain > b.predicted_gain;
  });
  d.verdict = verdict(d);
  return d;
}

}  // namespace mixlab::doctor
