// mixlab-cli doctor MODEL [--device D | --profile NAME] [--precision P] [--batch-size N]
//   [--measure] [--sweep batch=...] [--what-if] [--json]: why a mixed policy is slower or faster
// than float32 on a device, from the roofline cost model (engine/doctor) and, with --measure, from
// an A/B run on this machine's device set beside the prediction. The verdict comes first.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "app/cli/doctor_output.h"
#include "app/store/doctor_export.h"
#include "app/store/doctor_keeper.h"
#include "app/store/run_store.h"
#include "app/store/safe_file.h"
#include "engine/doctor/layer_cache.h"
#include "engine/doctor/library_rules.h"
#include "engine/doctor/local_profile.h"
#include "engine/doctor/measure.h"
#include "engine/doctor/report_json.h"

namespace mixlab::cli {

namespace {

using doctor::Diagnosis;
using doctor::DiagnosisInput;

std::vector<int> parse_sweep(const std::string& text) {
  const std::string prefix = "batch=";
  if (text.rfind(prefix, 0) != 0) {
    throw UsageError("--sweep takes batch=N,N,... (e.g. batch=32,64,128), not " + quote(text));
  }
  std::vector<int> batches;
  std::stringstream in(text.substr(prefix.size()));
  std::string part;
  while (std::getline(in, part, ',')) {
    batches.push_back(static_cast<int>(integer_option("--sweep batch", part, 1, 1 << 20)));
  }
  if (batches.empty()) throw UsageError("--sweep batch= names no batch size");
  return batches;
}

}  // namespace

int run_doctor(const std::vector<std::string>& argv) {
  CommandLine command("mixlab-cli doctor",
                      "Why mixed precision is slower or faster than float32 for a model on a "
                      "device: a roofline prediction per layer and phase, findings with fixes, "
                      "and (--measure) an A/B run set beside it.");
  CLI::App& app = command.app();
  std::vector<std::string> models;
  std::string device_name = "auto", profile_name, profiles_file, sweep_text, steps_text,
              warmup_text;
  bool json = false, measure_flag = false, what_if = false, recalibrate = false,
       list_profiles = false;
  app.add_option("model", models, "a model file (MixLab or Keras JSON, .keras) or a built-in model");
  command.add_option(app, "--device", device_name,
                     "this machine's device to diagnose (and measure): cpu, cuda, cuda:N, auto")
      ->type_name("DEVICE")
      ->default_str(device_name);
  command.add_option(app, "--profile", profile_name,
                     "predict for a GPU you need not have: a profile name (--list-profiles)")
      ->type_name("NAME");
  command.add_path_option(app, "--profiles", profiles_file,
                     "read GPU profiles from this file instead of the built-in ones")
      ->type_name("FILE");
  app.add_flag("--list-profiles", list_profiles, "list the GPU profiles and exit");
  std::string from_name;
  command
      .add_option(app, "--from", from_name,
                  "with --profile: time the layers on this machine's DEVICE (cpu, cuda, "
                  "cuda:N) and scale them to the profile's GPU where the kernels match")
      ->type_name("DEVICE");
  std::string libraries_text;
  command
      .add_option(app, "--libraries", libraries_text,
                  "predict a GPU with these library versions (a what-if on your stack; "
                  "default: the present GPU's, or MixLab's own for a profile)")
      ->type_name("cublas=11.2,cudnn=8.1");
  const RunFieldOptions settings(command, {"precision", "batch_size", "optimizer", "threads",
                                           "tf32", "cuda_graphs", "data_on_device", "attention"});
  app.get_option("--precision")
      ->description("the mixed policy set against float32 (default: the best the device runs)")
      ->default_str("");
  app.add_flag("--measure", measure_flag,
               "also run both policies on the device and set measured beside predicted");
  command.add_option(app, "--sweep", sweep_text,
                     "predict (and with --measure, measure) the speed-up at each batch size")
      ->type_name("batch=N,N,...");
  app.add_flag("--what-if", what_if,
               "apply the top suggestion, predict it and (on this machine) measure the gain");
  command.add_option(app, "--steps", steps_text, "measured steps per policy (default 30)")
      ->type_name("N");
  command.add_option(app, "--warmup", warmup_text, "steps left out of the figures (default 5)")
      ->type_name("N");
  bool roofline_only = false;
  app.add_flag("--roofline-only", roofline_only,
               "predict from the roofline model alone, without timing each layer on this "
               "machine's device first (seconds)");
  app.add_flag("--recalibrate", recalibrate,
               "measure this device's roofs and time the layers again (both cached otherwise)");
  bool retime = false;
  app.add_flag("--retime", retime, "time the layers again, not reading them from the cache");
  std::string html_file, findings_csv, layers_csv;
  command.add_path_option(app, "--html", html_file,
                     "also write a self-contained HTML report (charts inline) to FILE")
      ->type_name("FILE");
  command.add_path_option(app, "--findings-csv", findings_csv, "also write the findings as CSV")
      ->type_name("FILE");
  command.add_path_option(app, "--layers-csv", layers_csv,
                     "also write each layer's predicted (and measured) times as CSV")
      ->type_name("FILE");
  std::string db;
  bool no_store = false;
  CLI::Option* db_option =
      command.add_database_option(app, db, "the run database (--measure keeps its runs and the "
                                          "report there)")
          ->type_name("PATH");
  app.add_flag("--no-store", no_store, "with --measure: keep neither the runs nor the report");
  app.add_flag("--json", json, "one JSON object instead of the report");
  if (!command.parse(argv, &models)) return kExitOk;
  // Every option is checked before anything is measured (this device's roofs, the policies)
  // or printed.
  const std::vector<int> sweep_batches =
      sweep_text.empty() ? std::vector<int>() : parse_sweep(sweep_text);
  doctor::MeasureOptions measure_options;
  if (!steps_text.empty()) measure_options.steps = integer_option("--steps", steps_text, 2, 100000);
  if (!warmup_text.empty()) {
    measure_options.warmup = static_cast<int>(integer_option("--warmup", warmup_text, 0, 100000));
  }
  if (no_store && db_option->count() > 0) throw UsageError("give --db or --no-store, not both");
  check_device_option("--device", device_name);
  if (app.get_option("--libraries")->count() > 0) doctor::parse_library_versions(libraries_text);

  std::vector<doctor::DeviceProfile> file_profiles;
  std::span<const doctor::DeviceProfile> profiles = doctor::builtin_gpu_profiles();
  if (!profiles_file.empty()) {
    file_profiles = doctor::load_gpu_profiles(profiles_file);
    profiles = file_profiles;
  }
  if (list_profiles) {
    print_profiles(profiles, json);
    return kExitOk;
  }
  if (models.size() != 1) {
    throw UsageError("usage: mixlab-cli doctor MODEL [--device D | --profile NAME] "
                     "[--precision P] [--batch-size N] [--measure] [--sweep batch=N,...] "
                     "[--what-if] [--json]");
  }
  if (!profile_name.empty() && app.get_option("--device")->count() > 0) {
    throw UsageError("--device and --profile both name the device: give one");
  }
  const bool predict_only = !profile_name.empty();
  if (!from_name.empty()) {
    if (!predict_only) {
      throw UsageError(
          "--from scales the layers timed on this machine's device to a --profile "
          "GPU: give --profile NAME too");
    }
    check_device_option("--from", from_name);
    if (roofline_only) throw UsageError("--from times the layers; --roofline-only does not");
  }
  if (predict_only && measure_flag) {
    throw UsageError("--measure runs on this machine's device; --profile " + quote(profile_name) +
                     " can only be predicted");
  }
  DiagnosisInput input;
  settings.apply(input.run);
  const RunConfig& config = input.run;
  if (settings.given("precision") && config.precision == Policy::float32) {
    throw UsageError(
        "--precision names the mixed policy to set against float32: "
        "mixed_float16, mixed_bfloat16 or mixed_float8");
  }
  input.spec = load_model_argument(models[0]);

  std::unique_ptr<Backend> backend;
  std::string device_used;
  // This machine's device `name` (its backend, and its profile measured or read from the cache).
  const auto local_device = [&](const std::string& name, bool fallback) {
    BackendChoice choice = make_backend(name, config.threads, fallback);
    if (!choice.note.empty()) std::fprintf(stderr, "mixlab-cli doctor: %s\n", choice.note.c_str());
    const DeviceInfo info = choice.backend->device();
    doctor::DeviceProfile profile;
    bool calibrated = false;
    const bool tty = !json && isatty(STDERR_FILENO);
    const std::string what = info.is_gpu() ? "this GPU's" : "this CPU's";
    if (tty) std::fprintf(stderr, "mixlab-cli doctor: measuring %s roofs...\r", what.c_str());
    std::filesystem::path cache;
    if (info.is_gpu()) {
      cache = doctor::default_gpu_profile_cache();
      const int gpu = std::stoi(choice.device.substr(choice.device.find(':') + 1));
      std::string not_measured;
      profile =
          doctor::local_gpu_profile(gpu, info, cache, recalibrate, &calibrated, &not_measured);
      if (!not_measured.empty()) {
        std::fprintf(stderr,
                     "mixlab-cli doctor: the roofs of %s could not be measured (%s); predicting "
                     "from its published profile\n",
                     info.name.c_str(), not_measured.c_str());
      }
    } else {
      cache = doctor::default_cpu_profile_cache();
      profile = doctor::local_cpu_profile(info.threads, cache, recalibrate, &calibrated);
    }
    if (tty) std::fprintf(stderr, "%60s\r", "");
    if (const auto note = profile.sources.find(doctor::kCacheNoteSource);
        note != profile.sources.end()) {
      std::fprintf(stderr, "mixlab-cli doctor: %s\n", note->second.c_str());
    }
    if (calibrated && !json) {
      std::fprintf(stderr, "mixlab-cli doctor: measured %s roofs (kept in %s)\n", what.c_str(),
                   cache.c_str());
    }
    return std::pair{std::move(choice), std::move(profile)};
  };
  // --from: the layers timed on this machine's device, to scale to the --profile GPU.
  std::unique_ptr<Backend> from_backend;
  std::optional<doctor::DeviceProfile> from_profile;
  if (predict_only) {
    input.device = doctor::find_profile(profiles, profile_name);
    if (!from_name.empty()) {
      auto [choice, profile] = local_device(from_name, false);
      from_backend = std::move(choice.backend);
      from_profile = std::move(profile);
    }
  } else {
    auto [choice, profile] = local_device(device_name, true);
    device_used = choice.device;
    input.device = std::move(profile);
    backend = std::move(choice.backend);
  }
  if (app.get_option("--libraries")->count() > 0) {
    if (!input.device.is_gpu()) {
      throw UsageError("--libraries names a GPU's cuBLAS and cuDNN; " + input.device.name +
                       " is a CPU (predict a GPU with --profile NAME)");
    }
    input.device.libraries = doctor::parse_library_versions(libraries_text, input.device.libraries);
    input.device.sources["libraries"] = "--libraries " + libraries_text;
  }
  // --attention: the kernels a run would take (auto: cuDNN's fused attention where it applies).
  if (settings.given("attention")) {
    if (config.attention == AttentionKernels::fused && !input.device.is_gpu()) {
      throw UsageError("--attention fused predicts cuDNN's fused attention on a GPU; " +
                       input.device.name + " is a CPU (predict a GPU with --profile NAME)");
    }
    input.device.sources["attention"] = "--attention " + std::string(to_string(config.attention));
  }
  if (settings.given("precision")) {
    input.mixed = config.precision;
  } else {
    input.mixed = comparison_mixed_policy(input.device.device_info());
  }

  const std::atomic<bool> cancel{false};
  const auto measure = [&](const DiagnosisInput& in) {
    if (!json) std::fprintf(stderr, "mixlab-cli doctor: measuring batch %d...\n", in.run.batch_size);
    return doctor::measure(in, *backend, measure_options, cancel);
  };

  // Every run measured is kept in the run store, tagged "doctor": --measure's two with its
  // report, each measured sweep point's two with a report of their own (also tagged "sweep"),
  // and a what-if's (tagged "what-if").
  std::optional<store::DoctorKeeper> keeper;
  const std::filesystem::path db_path =
      db_option->count() > 0 ? std::filesystem::path(db) : store::default_store_path();
  const bool measures = measure_flag || (what_if && !predict_only);
  if (measures && !no_store) {
    keeper.emplace(db_path, input,
                   input.spec.name.empty() ? std::filesystem::path(models[0]).stem().string()
                                           : input.spec.name,
                   device_used);
    measure_options.also_to = [&](const RunConfig& run_config) {
      return keeper->begin_run(run_config);
    };
  }
  const auto keep_as = [&](std::string tag, std::string note, const ModelSpec* spec) {
    if (!keeper) return;
    measure_options.also_to = [&keeper, tag, note, spec](const RunConfig& run_config) {
      return keeper->begin_run(run_config, tag, note, spec);
    };
  };
  // On this machine's device, each policy's layers are timed first and set over the roofline's
  // predictions (a device named by --profile is predicted only).
  const auto timed_on = [&](const DiagnosisInput& in, Backend& on) {
    const std::filesystem::path layer_cache = doctor::default_layer_cache();
    if (!json) {
      std::fprintf(stderr,
                   "mixlab-cli doctor: timing each layer at batch %d (%lld steps a policy, "
                   "unless kept in %s)...\n",
                   in.run.batch_size, static_cast<long long>(doctor::kLayerBenchSteps),
                   layer_cache.c_str());
    }
    doctor::LayerCacheUse use;
    doctor::Measurement m =
        doctor::cached_bench_layers(in, on, layer_cache, recalibrate || retime, cancel, &use);
    if (!use.note.empty()) std::fprintf(stderr, "mixlab-cli doctor: %s\n", use.note.c_str());
    if (!json && use.cached > 0) {
      std::fprintf(stderr, "mixlab-cli doctor: the layer times of %s read from %s (%s)\n",
                   use.cached == 3   ? "the three policies"
                   : use.cached == 1 ? "one policy"
                   : use.timed == 0  ? "both policies"
                                     : "two policies",
                   layer_cache.c_str(),
                   use.timed == 0   ? "no step run; --retime times them again"
                   : use.timed == 1 ? "the other's timed now"
                                    : "the others timed now");
    }
    return m;
  };
  const auto time_layers = [&](const DiagnosisInput& in) -> std::optional<doctor::Measurement> {
    if (predict_only || roofline_only) return std::nullopt;
    return timed_on(in, *backend);
  };
  // --from: the same model timed on this machine's device, scaled to the profile's GPU.
  const auto scale_from = [&](const DiagnosisInput& in) -> std::optional<doctor::ScaleFrom> {
    if (!from_profile) return std::nullopt;
    DiagnosisInput here = in;
    here.device = *from_profile;
    return doctor::ScaleFrom{*from_profile, timed_on(here, *from_backend)};
  };
  std::optional<doctor::Measurement> measured;
  if (measure_flag) measured = measure(input);
  const auto confident = [](Diagnosis d) {
    d.confidence = doctor::zoo_confidence(d.input.device, d.layer_times.has_value(),
                                          doctor::default_zoo_file());
    return d;
  };
  const Diagnosis diagnosis =
      confident(doctor::diagnose(input, measured, time_layers(input), scale_from(input)));
  nlohmann::ordered_json out = doctor::to_json(diagnosis);
  if (keeper && measured) {
    const std::int64_t id = keeper->keep_report(diagnosis, out.dump());
    const std::vector<std::int64_t> run_ids = keeper->run_ids();
    out["report_id"] = id;
    out["run_ids"] = run_ids;
    if (!json) {
      std::fprintf(stderr, "mixlab-cli doctor: kept as report %lld with runs %lld and %lld in %s\n",
                   static_cast<long long>(id), static_cast<long long>(run_ids.at(0)),
                   static_cast<long long>(run_ids.at(1)), db_path.c_str());
    }
  }
  if (!json) print_diagnosis(diagnosis);

  if (!sweep_batches.empty()) {
    std::vector<SweepRow> rows;
    for (const int batch : sweep_batches) {
      DiagnosisInput at = input;
      at.run.batch_size = batch;
      SweepRow row;
      row.batch = batch;
      keep_as("sweep", "doctor --sweep: batch " + std::to_string(batch), nullptr);
      const std::optional<doctor::Measurement> m =
          measure_flag ? std::optional(measure(at)) : std::nullopt;
      row.diagnosis = confident(doctor::diagnose(at, m, time_layers(at), scale_from(at)));
      if (keeper && m) {
        row.report_id =
            keeper->keep_report(row.diagnosis, doctor::to_json(row.diagnosis).dump());
        row.run_ids = keeper->run_ids();
      }
      rows.push_back(std::move(row));
    }
    out["sweep"] = sweep_json(rows);
    if (!json) print_sweep(rows);
    if (!json && keeper && measure_flag) {
      std::fprintf(stderr, "mixlab-cli doctor: kept the sweep as reports %lld to %lld in %s\n",
                   static_cast<long long>(rows.front().report_id),
                   static_cast<long long>(rows.back().report_id), db_path.c_str());
    }
  }

  if (what_if) {
    WhatIf w = what_if_of(diagnosis);
    if (w.finding != nullptr && !predict_only) {
      const DiagnosisInput changed = doctor::apply_change(input, w.finding->change);
      keep_as("what-if", "doctor --what-if: before, as the model is", nullptr);
      const doctor::MeasuredRun before =
          measured ? measured->mixed
                   : doctor::measure_policy(input, input.mixed, *backend, measure_options, cancel);
      keep_as("what-if", "doctor --what-if: after " + doctor::describe(w.finding->change),
              &changed.spec);
      const doctor::MeasuredRun after =
          doctor::measure_policy(changed, input.mixed, *backend, measure_options, cancel);
      if (keeper) {
        w.run_ids = keeper->keep_runs();
        if (!json) {
          std::string ids;
          for (const std::int64_t id : w.run_ids) {
            ids += (ids.empty() ? "" : " and ") + std::to_string(id);
          }
          std::fprintf(stderr, "mixlab-cli doctor: kept the what-if's %s %s in %s\n",
                       w.run_ids.size() == 1 ? "run" : "runs", ids.c_str(), db_path.c_str());
        }
      }
      w.measured_gain = (before.step_ms / input.run.batch_size) /
                      (after.step_ms / changed.run.batch_size);
      w.before_ms = before.step_ms;
      w.after_ms = after.step_ms;
    }
    out["what_if"] = what_if_json(w, input);
    if (!json) print_what_if(w, input, predict_only);
  }
  const auto write = [](const std::string& file, const auto& writer, const Diagnosis& d) {
    if (file.empty()) return;
    store::write_file_atomically(file, [&](std::ostream& o) { writer(o, d); });
  };
  write(html_file, store::write_doctor_html, diagnosis);
  write(findings_csv, store::write_doctor_findings_csv, diagnosis);
  write(layers_csv, store::write_doctor_layers_csv, diagnosis);
  if (json) std::cout << out.dump(2) << "\n";
  return kExitOk;
}

}  // namespace mixlab::cli
