#include "ui/history/compare_settings.h"

#include <cmath>
#include <exception>
#include <string>
#include <vector>

#include "app/store/csv_export.h"
#include "engine/spec/model_spec.h"
#include "engine/train/run_fields.h"

namespace mixlab::ui {

namespace {

using store::RunRecord;

std::string text(std::string_view value) {
  return std::string(value);
}
std::string number(double value) {
  return store::csv_number(value);
}

std::string size2(const Size2& s) {
  return std::to_string(s.h) + "x" + std::to_string(s.w);
}

// "Flatten → Dense(3000, relu) → Dense(10)": the stack in a table cell.
std::string describe_layers(const RunRecord& r) {
  ModelSpec spec;
  try {
    spec = parse_model_json(r.model_json);
  } catch (const std::exception&) {
    return "(unreadable model)";
  }
  std::string out;
  for (const LayerSpec& l : spec.layers) {
    std::vector<std::string> args;
    switch (l.type) {
      case LayerType::Dense:
        args.push_back(std::to_string(l.units));
        break;
      case LayerType::Conv2D:
        args.push_back(std::to_string(l.filters));
        args.push_back(size2(l.kernel_size));
        break;
      case LayerType::MaxPooling2D:
      case LayerType::AveragePooling2D:
        args.push_back(size2(l.pool_size));
        break;
      case LayerType::Dropout:
        args.push_back(number(l.rate));
        break;
      case LayerType::Rescaling:
        args.push_back(number(l.scale));
        break;
      case LayerType::Concatenate:
        if (l.axis != -1) args.push_back("axis " + std::to_string(l.axis));
        break;
      case LayerType::GlobalAveragePooling2D:
      case LayerType::GlobalMaxPooling2D:
      case LayerType::GlobalAveragePooling1D:
      case LayerType::GlobalMaxPooling1D:
        if (l.keepdims) args.emplace_back("keepdims");
        break;
      case LayerType::DepthwiseConv2D:
      case LayerType::SeparableConv2D:
        if (l.type == LayerType::SeparableConv2D) args.push_back(std::to_string(l.filters));
        args.push_back(size2(l.kernel_size));
        if (l.depth_multiplier != 1) {
          std::string times = "x";  // appended: GCC 12 warns on "x" + std::string here
          times += std::to_string(l.depth_multiplier);
          args.push_back(times);
        }
        break;
      case LayerType::ReLU:
        if (std::isfinite(l.max_value)) args.push_back("max " + number(l.max_value));
        if (l.negative_slope != 0.0) args.push_back("slope " + number(l.negative_slope));
        break;
      case LayerType::Embedding:
        args.push_back(std::to_string(l.input_dim) + " to " + std::to_string(l.output_dim));
        break;
      case LayerType::PositionEmbedding:
        args.push_back(std::to_string(l.sequence_length));
        break;
      case LayerType::MultiHeadAttention: {
        std::string heads = std::to_string(l.num_heads);
        heads += "x";  // appended: GCC 12 warns on "x" + std::string here
        heads += std::to_string(l.key_dim);
        args.push_back(heads);
        if (l.causal) args.emplace_back("causal");
        break;
      }
      case LayerType::BatchNormalization:
      case LayerType::LayerNormalization:
      case LayerType::Normalization:
      case LayerType::ZeroPadding2D:
      case LayerType::Reshape:
      case LayerType::Flatten:
      case LayerType::Activation:
      case LayerType::Add:
      case LayerType::Subtract:
      case LayerType::Multiply:
      case LayerType::Average:
      case LayerType::Maximum:
        break;
    }
    const bool has_activation = l.type == LayerType::Dense || l.type == LayerType::Conv2D ||
                                l.type == LayerType::DepthwiseConv2D ||
                                l.type == LayerType::SeparableConv2D ||
                                l.type == LayerType::Activation;
    if (has_activation && l.activation != ActivationFn::linear)
      args.push_back(text(to_string(l.activation)));
    if (l.force_float32) args.push_back("float32");
    if (l.force_bfloat16) args.push_back("bfloat16");
    if (!out.empty()) out += " \u2192 ";
    out += text(to_string(l.type));
    if (args.empty()) continue;
    out += '(';
    for (std::size_t i = 0; i < args.size(); ++i) out += (i > 0 ? ", " : "") + args[i];
    out += ')';
  }
  return out;
}

// The canonical form of the model, so that two files that differ only in spacing compare equal.
std::string canonical_model(const RunRecord& r) {
  try {
    return to_json(parse_model_json(r.model_json), 0);
  } catch (const std::exception&) {
    return r.model_json;
  }
}

struct Setting {
  const char* name;
  std::string (*value)(const RunRecord& r);              // compared
  std::string (*display)(const RunRecord& r) = nullptr;  // shown, when not `value`
};

// The model first, then the run's settings (the run-settings table, engine/train/run_fields.h),
// then what the run ran on.
const Setting kModelSettings[] = {
    {"model", [](const RunRecord& r) { return r.model_name; }},
    // Same model name, other layers: an edited model.
    {"layers", canonical_model, describe_layers},
};
const Setting kEnvironmentSettings[] = {
    {"steps planned", [](const RunRecord& r) { return std::to_string(r.total_steps); }},
    {"device", [](const RunRecord& r) { return r.device; }},
    {"device name", [](const RunRecord& r) { return r.environment.device_name; }},
    {"compute capability", [](const RunRecord& r) { return r.environment.compute_capability; }},
    {"CPU", [](const RunRecord& r) { return r.environment.cpu_model; }},
    {"threads used", [](const RunRecord& r) { return std::to_string(r.environment.threads); }},
    {"driver", [](const RunRecord& r) { return r.environment.driver_version; }},
    {"CUDA", [](const RunRecord& r) { return r.environment.cuda_version; }},
    {"cuDNN", [](const RunRecord& r) { return r.environment.cudnn_version; }},
    {"cuBLAS", [](const RunRecord& r) { return r.environment.cublas_version; }},
    {"oneDNN", [](const RunRecord& r) { return r.environment.onednn_version; }},
    {"MixLab", [](const RunRecord& r) { return r.environment.mixlab_version; }},
    {"host", [](const RunRecord& r) { return r.environment.hostname; }},
};

// Adds a row when `value` is not the same in every run, showing `shown` of each.
template <typename Value, typename Shown>
void add_if_different(std::vector<SettingDifference>& differences, std::string_view name,
                      std::span<const RunRecord> runs, Value value, Shown shown) {
  const std::string first = value(runs.front());
  bool differs = false;
  for (const RunRecord& r : runs.subspan(1)) differs = differs || value(r) != first;
  if (!differs) return;
  SettingDifference difference{QString::fromUtf8(name.data(), qsizetype(name.size())), {}};
  for (const RunRecord& r : runs) difference.values.append(QString::fromStdString(shown(r)));
  differences.push_back(std::move(difference));
}

void add_settings(std::vector<SettingDifference>& differences, std::span<const Setting> settings,
                  std::span<const RunRecord> runs) {
  for (const Setting& s : settings)
    add_if_different(differences, s.name, runs, s.value,
                     s.display != nullptr ? s.display : s.value);
}

}  // namespace

std::vector<SettingDifference> differing_settings(std::span<const RunRecord> runs) {
  std::vector<SettingDifference> differences;
  if (runs.size() < 2) return differences;
  add_settings(differences, kModelSettings, runs);
  for (const RunField& field : run_fields()) {
    add_if_different(
        differences, field.label, runs,
        [&](const RunRecord& r) { return field_text(field, r.config); },
        [&](const RunRecord& r) { return field_display(field, r.config); });
  }
  add_settings(differences, kEnvironmentSettings, runs);
  return differences;
}

}  // namespace mixlab::ui
