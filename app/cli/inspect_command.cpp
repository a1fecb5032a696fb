// mixlab-cli inspect MODEL [--precision P] [--json]: the layer table and totals.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "engine/spec/shape_inference.h"

namespace mixlab::cli {

int run_inspect(const std::vector<std::string>& argv) {
  CommandLine command("mixlab-cli inspect",
                      "Each layer's output shape, parameters, forward FLOPs and activation bytes.");
  std::vector<std::string> models;
  bool json = false;
  command.app().add_option("model", models, "a model file (JSON) or a built-in model");
  const RunFieldOptions settings(command, {"precision"});
  command.app().add_flag("--json", json, "one JSON object instead of the table");
  if (!command.parse(argv)) return kExitOk;
  if (models.size() != 1) {
    throw UsageError("usage: mixlab-cli inspect MODEL.json|BUILTIN [--precision P] [--json]");
  }
  RunConfig config;
  settings.apply(config);
  const Policy policy = config.precision;
  const ModelSpec spec = load_model_argument(models[0]);
  const ShapeTable table = infer_shapes(spec, policy);

  if (json) {
    nlohmann::ordered_json out;
    out["name"] = spec.name;
    out["input_shape"] = table.input_shape;
    out["output_shape"] = table.output_shape;
    out["precision"] = std::string(to_string(policy));
    out["params_total"] = table.params_total;
    out["flops_total"] = table.flops_total;
    out["activation_bytes_total"] = table.activation_bytes_total;
    auto& layers = out["layers"] = nlohmann::ordered_json::array();
    for (const LayerInfo& l : table.layers) {
      layers.push_back({{"index", l.index},
                        {"type", std::string(to_string(l.type))},
                        {"output_shape", l.output_shape},
                        {"params", l.param_count},
                        {"flops", l.flops},
                        {"activation_bytes", l.activation_bytes},
                        {"dtype", std::string(to_string(l.compute))}});
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }

  std::printf("model %s: input %s, loss %s, precision %s\n", spec.name.c_str(),
              format_shape(table.input_shape).c_str(), std::string(to_string(spec.loss)).c_str(),
              std::string(to_string(policy)).c_str());
  std::printf("%3s  %-18s %-14s %14s %16s %14s  %s\n", "#", "layer", "output", "params", "FLOPs",
              "act. bytes", "dtype");
  for (const LayerInfo& l : table.layers) {
    std::printf("%3d  %-18s %-14s %14s %16s %14s  %s\n", l.index,
                std::string(to_string(l.type)).c_str(), format_shape(l.output_shape).c_str(),
                group_digits(l.param_count).c_str(), group_digits(l.flops).c_str(),
                group_digits(l.activation_bytes).c_str(),
                std::string(to_string(l.compute)).c_str());
  }
  std::printf("total: %s parameters, %s forward FLOPs and %s of activations per sample\n",
              group_digits(table.params_total).c_str(), group_digits(table.flops_total).c_str(),
              format_bytes(table.activation_bytes_total).c_str());
  return kExitOk;
}

}  // namespace mixlab::cli
