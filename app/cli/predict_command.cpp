// mixlab-cli predict MODEL [--dataset D] [--count N] [--precision P] [--device D] [--json]: the
// model's outputs for the first N samples of the dataset's test split, in inference mode
// (dropout off), from the model's starting weights (a .keras archive's, or the seed's). What
// Keras's model.predict gives, for setting MixLab's numbers beside a framework's.
#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "engine/backend/op_access.h"
#include "engine/train/trainer.h"

namespace mixlab::cli {

int run_predict(const std::vector<std::string>& argv) {
  CommandLine command("mixlab-cli predict",
                      "The model's outputs for the first samples of the dataset's test split.");
  CLI::App& app = command.app();
  std::vector<std::string> models;
  std::string device = "cpu", count_text = "8";
  bool json = false;
  app.add_option("model", models,
                 "a model file (MixLab or Keras JSON, .keras) or a built-in model");
  const RunFieldOptions settings(command, {"precision", "dataset", "seed", "threads"});
  command.add_option(app, "--count", count_text, "how many test samples (default 8)")
      ->type_name("N");
  command.add_option(app, "--device", device, "cpu, cuda, cuda:N or auto (default cpu)")
      ->type_name("DEVICE");
  app.add_flag("--json", json, "one JSON object: {\"outputs\": [[...], ...], ...}");
  if (!command.parse(argv, &models)) return kExitOk;
  if (models.size() != 1) {
    throw UsageError(
        "usage: mixlab-cli predict MODEL [--dataset D] [--count N] [--precision P] "
        "[--device D] [--json]");
  }
  const int count = static_cast<int>(integer_option("--count", count_text, 1, 65536));
  check_device_option("--device", device);
  const ImportedModel model = load_model_input(models.front());
  RunConfig config;
  apply_model_settings(model, config);
  settings.apply(config);
  config.batch_size = count;
  const DatasetPair data = load_dataset(config.dataset);
  const ShapeTable table = validate_run(model.spec, config, data);
  const Dataset& test = data.test;
  if (test.size() < count) {
    throw ConfigError("the test split of " + config.dataset.to_string() + " has " +
                      std::to_string(test.size()) + " samples, --count asks for " +
                      std::to_string(count));
  }

  const BackendChoice choice = make_backend(device, config.threads, true);
  if (!choice.note.empty()) std::fprintf(stderr, "mixlab-cli: %s\n", choice.note.c_str());
  const ExecutorOptions options = executor_options(config);  // its batch: --count
  const auto executor = choice.backend->compile(model.spec, table, options);
  const std::size_t elements = static_cast<std::size_t>(test.sample_elements());
  std::vector<float> images(elements * static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = test.images[i];
  // A label per sample, or per step of a language model's samples.
  const auto labels =
      static_cast<std::size_t>(count) * static_cast<std::size_t>(std::max(1, test.label_positions));
  executor->load_batch(images, std::span(test.labels).first(labels), count);
  executor->ops().forward(Phase::eval, 0);
  const std::vector<float> outputs = executor->ops().read_output();
  const std::size_t width = outputs.size() / static_cast<std::size_t>(count);

  if (json) {
    nlohmann::ordered_json out;
    out["model"] = model.spec.name;
    out["format"] = model.format;
    out["dataset"] = config.dataset.to_string();
    out["precision"] = std::string(to_string(config.precision));
    out["device"] = choice.device;
    out["weights"] = model.weights ? nlohmann::json(model.weights->origin) : nlohmann::json();
    out["count"] = count;
    out["output_shape"] = table.output_shape;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (int i = 0; i < count; ++i) {
      const auto* row = outputs.data() + static_cast<std::size_t>(i) * width;
      rows.push_back(std::vector<float>(row, row + width));
    }
    out["outputs"] = std::move(rows);
    std::puts(out.dump().c_str());
    return kExitOk;
  }
  std::printf("%s on %s, %s, %s weights: outputs of the first %d test samples\n",
              model.spec.name.c_str(), config.dataset.to_string().c_str(),
              std::string(to_string(config.precision)).c_str(),
              model.weights ? model.weights->origin.c_str() : "seeded", count);
  for (int i = 0; i < count; ++i) {
    const auto* row = outputs.data() + static_cast<std::size_t>(i) * width;
    std::size_t best = 0;
    for (std::size_t j = 1; j < width; ++j) best = row[j] > row[best] ? j : best;
    std::printf("  %4d  label %3d  predicted %3zu (%.4f)\n", i,
                test.labels[static_cast<std::size_t>(i)], best, static_cast<double>(row[best]));
  }
  return kExitOk;
}

}  // namespace mixlab::cli
