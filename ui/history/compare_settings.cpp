#include "ui/history/compare_settings.h"

#include <exception>
#include <string>
#include <vector>

#include "app/store/csv_export.h"
#include "engine/spec/model_spec.h"

namespace mixlab::ui {

namespace {

using store::RunRecord;

std::string text(std::string_view value) {
  return std::string(value);
}
std::string number(double value) {
  return store::csv_number(value);
}

std::string optimizer_details(const OptimizerConfig& o) {
  if (o.kind == OptimizerKind::sgd) {
    return "momentum " + number(o.momentum) + (o.nesterov ? ", nesterov" : "");
  }
  return "beta_1 " + number(o.beta_1) + ", beta_2 " + number(o.beta_2) + ", epsilon " +
         number(o.epsilon);
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
      case LayerType::Flatten:
      case LayerType::Activation:
        break;
    }
    const bool has_activation = l.type == LayerType::Dense || l.type == LayerType::Conv2D ||
                                l.type == LayerType::Activation;
    if (has_activation && l.activation != ActivationFn::linear)
      args.push_back(text(to_string(l.activation)));
    if (l.force_float32) args.push_back("float32");
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

// Configuration first (what the user chose), then the environment (what the run ran on).
const Setting kSettings[] = {
    {"model", [](const RunRecord& r) { return r.model_name; }},
    // Same model name, other layers: an edited model.
    {"layers", canonical_model, describe_layers},
    {"dataset", [](const RunRecord& r) { return r.config.dataset.to_string(); }},
    {"precision", [](const RunRecord& r) { return text(to_string(r.config.precision)); }},
    {"loss scaling", [](const RunRecord& r) { return r.config.loss_scale.to_string(); }},
    {"batch size", [](const RunRecord& r) { return std::to_string(r.config.batch_size); }},
    {"optimizer", [](const RunRecord& r) { return text(to_string(r.config.optimizer.kind)); }},
    {"learning rate", [](const RunRecord& r) { return number(r.config.optimizer.learning_rate); }},
    {"optimizer settings",
     [](const RunRecord& r) { return optimizer_details(r.config.optimizer); }},
    {"epochs", [](const RunRecord& r) { return std::to_string(r.config.epochs); }},
    {"steps planned", [](const RunRecord& r) { return std::to_string(r.total_steps); }},
    {"warm-up steps", [](const RunRecord& r) { return std::to_string(r.config.warmup_steps); }},
    {"seed", [](const RunRecord& r) { return std::to_string(r.config.seed); }},
    {"threads",
     [](const RunRecord& r) {
       return r.config.threads == 0 ? std::string("all cores") : std::to_string(r.config.threads);
     }},
    {"evaluation", [](const RunRecord& r) { return text(r.config.evaluate ? "on" : "off"); }},
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

}  // namespace

std::vector<SettingDifference> differing_settings(std::span<const RunRecord> runs) {
  std::vector<SettingDifference> differences;
  if (runs.size() < 2) return differences;
  for (const Setting& setting : kSettings) {
    const std::string first = setting.value(runs.front());
    bool differs = false;
    for (const RunRecord& r : runs.subspan(1)) differs = differs || setting.value(r) != first;
    if (!differs) continue;
    SettingDifference difference{QString::fromUtf8(setting.name), {}};
    const auto shown = setting.display != nullptr ? setting.display : setting.value;
    for (const RunRecord& r : runs) difference.values.append(QString::fromStdString(shown(r)));
    differences.push_back(std::move(difference));
  }
  return differences;
}

}  // namespace mixlab::ui
