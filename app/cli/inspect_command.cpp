// mixlab-cli inspect MODEL [--precision P] [--batch-size N] [--optimizer O] [--json]: the layer
// table and totals, and the memory training needs by part (the execution plan's, before any
// backend compiles: engine/plan).
#include <algorithm>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "app/cli/runs_support.h"
#include "engine/plan/execution_plan.h"
#include "engine/spec/model_graph.h"
#include "engine/spec/shape_inference.h"

namespace mixlab::cli {
namespace {

// How the inputs column names a layer: its name, else its index ("#3"); "input" is the model's.
std::string input_label(const ModelSpec& spec, int layer) {
  if (layer == kModelInput) return std::string(kModelInputName);
  const std::string& name = spec.layers[static_cast<std::size_t>(layer)].name;
  return name.empty() ? "#" + std::to_string(layer) : runs::one_line(name, 40);
}

// A layer's compute dtype; "fp8" for a layer whose matmuls mixed_float8 runs in FP8 (the rest
// of it in bfloat16).
std::string dtype_text(Policy policy, const ModelSpec& spec, const LayerInfo& l) {
  if (fp8_layer(policy, spec.layers[static_cast<std::size_t>(l.index)], l.compute)) return "fp8";
  return std::string(to_string(l.compute));
}

std::string inputs_text(const ModelSpec& spec, const LayerInfo& l) {
  std::string text;
  for (const int i : l.inputs) text += (text.empty() ? "" : ", ") + input_label(spec, i);
  return text;
}

}  // namespace

int run_inspect(const std::vector<std::string>& argv) {
  CommandLine command("mixlab-cli inspect",
                      "Each layer's output shape, parameters, forward FLOPs and activation bytes.");
  std::vector<std::string> models;
  bool json = false;
  command.app().add_option("model", models,
                           "a model file (MixLab or Keras JSON, .keras) or a built-in model");
  const RunFieldOptions settings(command, {"precision", "batch_size", "optimizer"});
  command.app().add_flag("--json", json, "one JSON object instead of the table");
  if (!command.parse(argv, &models)) return kExitOk;
  if (models.size() != 1) {
    throw UsageError(
        "usage: mixlab-cli inspect MODEL.json|BUILTIN [--precision P] [--batch-size N] "
        "[--optimizer O] [--json]");
  }
  const ImportedModel model = load_model_input(models[0]);
  const ModelSpec& spec = model.spec;
  RunConfig config;
  apply_model_settings(model, config);  // a Keras file's policy; --precision wins
  settings.apply(config);
  const Policy policy = config.precision;
  const ShapeTable table = infer_shapes(spec, policy);
  // A graph lists its layers in the order they run, with their names and what each reads.
  const bool graph = !resolve_graph(spec).is_chain();
  const MemoryPlan memory = build_plan(spec, table, config.batch_size, config.optimizer).memory();
  constexpr MemoryPurpose kParts[] = {MemoryPurpose::parameters,  MemoryPurpose::weight_copies,
                                      MemoryPurpose::gradients,   MemoryPurpose::optimizer,
                                      MemoryPurpose::activations, MemoryPurpose::workspace};
  const std::string optimizer(to_string(config.optimizer.kind));

  if (json) {
    nlohmann::ordered_json out;
    out["name"] = spec.name;
    out["input_shape"] = table.input_shape;
    out["output_shape"] = table.output_shape;
    out["precision"] = std::string(to_string(policy));
    out["params_total"] = table.params_total;
    // As Keras's summary splits them: BatchNormalization's moving statistics are not trained.
    out["trainable_params"] = table.params_total - table.non_trainable_total;
    out["non_trainable_params"] = table.non_trainable_total;
    out["flops_total"] = table.flops_total;
    out["activation_bytes_total"] = table.activation_bytes_total;
    nlohmann::ordered_json& m = out["training_memory"];
    m["batch_size"] = config.batch_size;
    m["optimizer"] = optimizer;
    m["total_bytes"] = memory.total();
    for (const MemoryPurpose p : kParts) {
      std::string key(to_string(p));
      for (char& c : key) c = c == ' ' ? '_' : c;
      m[key + "_bytes"] = memory.bytes(p);
    }
    auto& layers = out["layers"] = nlohmann::ordered_json::array();
    for (const LayerInfo& l : table.layers) {
      nlohmann::ordered_json row = {{"index", l.index},
                                    {"type", std::string(to_string(l.type))},
                                    {"name", spec.layers[static_cast<std::size_t>(l.index)].name},
                                    {"inputs", nlohmann::ordered_json::array()},
                                    {"output_shape", l.output_shape},
                                    {"params", l.param_count},
                                    {"flops", l.flops},
                                    {"activation_bytes", l.activation_bytes},
                                    {"dtype", dtype_text(policy, spec, l)}};
      for (const int i : l.inputs) {
        row["inputs"].push_back(i == kModelInput ? std::string(kModelInputName)
                                                 : spec.layers[static_cast<std::size_t>(i)].name);
      }
      layers.push_back(std::move(row));
    }
    out["order"] = table.order;
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }

  std::printf("model %s: input %s, loss %s, precision %s\n", runs::one_line(spec.name, 200).c_str(),
              format_shape(table.input_shape).c_str(), std::string(to_string(spec.loss)).c_str(),
              std::string(to_string(policy)).c_str());
  std::printf("%3s  %-18s %-14s %14s %16s %14s  %s\n", "#", "layer", "output", "params", "FLOPs",
              "act. bytes", graph ? "dtype     name <- inputs" : "dtype");
  for (const int index : table.order) {
    const LayerInfo& l = table.layers[static_cast<std::size_t>(index)];
    std::string dtype = dtype_text(policy, spec, l);
    if (graph) {
      dtype.resize(std::max<std::size_t>(dtype.size(), 8), ' ');
      dtype += "  " + input_label(spec, l.index) + " <- " + inputs_text(spec, l);
    }
    std::printf("%3d  %-18s %-14s %14s %16s %14s  %s\n", l.index,
                std::string(to_string(l.type)).c_str(), format_shape(l.output_shape).c_str(),
                group_digits(l.param_count).c_str(), group_digits(l.flops).c_str(),
                group_digits(l.activation_bytes).c_str(), dtype.c_str());
  }
  const std::string params =
      table.non_trainable_total == 0
          ? group_digits(table.params_total) + " parameters"
          : group_digits(table.params_total) + " parameters (" +
                group_digits(table.params_total - table.non_trainable_total) + " trainable, " +
                group_digits(table.non_trainable_total) + " non-trainable)";
  std::printf("total: %s, %s forward FLOPs and %s of activations per sample\n", params.c_str(),
              group_digits(table.flops_total).c_str(),
              format_bytes(table.activation_bytes_total).c_str());
  std::printf("memory for training at batch %d under %s (%s): %s\n", config.batch_size,
              std::string(to_string(policy)).c_str(), optimizer.c_str(),
              format_bytes(memory.total()).c_str());
  std::string parts;
  for (const MemoryPurpose p : kParts) {
    parts += (parts.empty() ? "  " : ", ") + std::string(to_string(p)) + " " +
             format_bytes(memory.bytes(p));
  }
  std::printf(
      "%s\n  (the plan's buffers; library workspaces and re-laid-out weights come on "
      "top)\n",
      parts.c_str());
  return kExitOk;
}

}  // namespace mixlab::cli
