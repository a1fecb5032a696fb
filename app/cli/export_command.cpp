// mixlab-cli export MODEL --to keras-json|keras|pytorch|mixlab [--run ID] [train options]
// [-o FILE]:
// a model out to another framework: Keras 3 JSON, a runnable Keras or PyTorch script with a
// run's settings (a recorded run's, or the train options given here), or MixLab's own JSON (of
// an imported Keras model, say).
#include <cstdio>
#include <iostream>
#include <optional>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "app/cli/runs_support.h"
#include "app/store/run_store.h"
#include "app/store/safe_file.h"
#include "engine/core/error.h"
#include "engine/interop/keras_model.h"
#include "engine/interop/script_export.h"
#include "engine/train/run_fields.h"

namespace mixlab::cli {

int run_export(const std::vector<std::string>& argv) {
  CommandLine command("mixlab-cli export",
                      "Writes a model as Keras 3 JSON, as a runnable Keras or PyTorch script "
                      "with a run's settings, or as MixLab JSON.");
  CLI::App& app = command.app();
  std::vector<std::string> models;
  std::string to, output, db;
  std::int64_t run_id = 0;
  app.add_option("model", models,
                 "a model file (MixLab or Keras JSON, .keras) or a built-in model; with --run, "
                 "the run's model when left out");
  command.add_option(app, "--to", to, "keras-json, keras, pytorch or mixlab")
      ->type_name("FORMAT")
      ->required();
  CLI::Option* run_option =
      app.add_option("--run", run_id, "scripts: take the settings of this recorded run")
          ->type_name("ID");
  command.add_database_option(app, db, "the run database (with --run)")->type_name("PATH");
  command.add_path_option(app, "-o,--output", output, "the file to write (default: stdout)")
      ->type_name("FILE");
  // A script's run settings, over the run's or the model's (train's options; --steps: the steps
  // the script trains, 100 when not given).
  const RunFieldOptions settings(command);
  if (!command.parse(argv, &models)) return kExitOk;

  const bool script = to == "keras" || to == "pytorch";
  if (!script && to != "keras-json" && to != "mixlab") {
    throw UsageError("--to must be keras-json, keras, pytorch or mixlab, got " + quote(to));
  }
  if (models.size() > 1) throw UsageError("give one model, got " + std::to_string(models.size()));
  // Keras JSON carries a dtype policy (--precision); the other settings are a script's.
  bool any_setting = run_option->count() > 0;
  for (const RunField& field : run_fields()) {
    const bool allowed = to == "keras-json" && field.name == "precision";
    any_setting = any_setting || (settings.given(field.name) && !allowed);
  }
  if (!script && any_setting) {
    throw UsageError(
        "--run and the run settings apply to --to keras and --to pytorch (--to "
        "keras-json takes --precision)");
  }

  // The model, and the run settings it brings (a Keras file's policy).
  std::optional<ImportedModel> model;
  RunConfig config;
  if (run_option->count() > 0) {
    const std::filesystem::path path =
        db.empty() ? store::default_store_path() : std::filesystem::path(db);
    const std::int64_t ids[] = {run_id};
    runs::OpenRuns open = runs::open_runs(path, ids, runs::Access::read);
    const store::RunRecord& record = open.records.front();
    runs::require_sound(record, path);  // a script with defaults for what could not be read
    config = record.config;
    if (models.empty()) {
      model.emplace();
      model->spec = parse_model_json(record.model_json, "run " + std::to_string(run_id));
    }
  }
  if (models.empty() && !model) throw UsageError("give a model (or --run ID for a script)");
  if (!model) {
    model = load_model_input(models.front());
    if (run_option->count() == 0) apply_model_settings(*model, config);
  }
  settings.apply(config);

  std::string text;
  if (to == "keras-json") {
    text = export_keras_json(model->spec, config.precision);
  } else if (to == "mixlab") {
    text = to_json(model->spec) + "\n";
  } else {
    text = export_script(to == "keras" ? ScriptKind::keras : ScriptKind::pytorch, model->spec,
                         config, ScriptOptions{.steps = config.steps > 0 ? config.steps : 100});
  }
  if (output.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    store::write_file_atomically(output, [&](std::ostream& out) { out << text; });
    std::fprintf(stderr, "mixlab-cli: wrote %s\n", output.c_str());
  }
  return kExitOk;
}

}  // namespace mixlab::cli
