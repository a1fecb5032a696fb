// mixlab-cli train: one training run with a live progress bar and a summary (or --json).
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "app/cli/progress_sink.h"
#include "app/store/run_recorder.h"
#include "app/store/store_writer.h"
#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/train/run_fields.h"
#include "engine/train/trainer.h"

namespace mixlab::cli {

namespace {

// Set by SIGINT / SIGTERM; the trainer checks it between steps.
std::atomic<bool> g_cancel{false};

extern "C" void on_signal(int) {
  g_cancel.store(true);
}

// Sets g_cancel on SIGINT / SIGTERM while it lives; then the previous handlers are back.
class CancelOnSignal {
 public:
  CancelOnSignal()
      : previous_int_(std::signal(SIGINT, on_signal)),
        previous_term_(std::signal(SIGTERM, on_signal)) {}
  ~CancelOnSignal() {
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
  }
  CancelOnSignal(const CancelOnSignal&) = delete;
  CancelOnSignal& operator=(const CancelOnSignal&) = delete;

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
};

// "--tf32, --cuda-graphs": the fields' flags.
std::string flags_of(const std::vector<const RunField*>& fields) {
  std::string text;
  for (const RunField* field : fields) {
    text += (text.empty() ? "--" : ", --") + std::string(field->cli_flag);
  }
  return text;
}

std::string footer() {
  std::vector<const RunField*> gpu_options;
  for (const RunField& field : run_fields()) {
    if (field.gpu_only) gpu_options.push_back(&field);
  }
  return "--device: auto (the default) trains on the GPU when the CUDA backend can, else on the\n"
         "CPU; cuda or cuda:N asks for a GPU and, when it cannot be used, trains on the CPU and\n"
         "says why on stderr. The GPU options (" +
         flags_of(gpu_options) +
         ") apply to GPU runs:\n"
         "a run on the CPU runs and is recorded with them off, as the GUI records it, and says so\n"
         "on stderr. --layer-timing times every layer's forward and backward (the device's clock\n"
         "on a GPU, the host's on the CPU) and prints a table.\n"
         "Runs are recorded in the run database (--db PATH, else $MIXLAB_DB, else\n"
         "$XDG_DATA_HOME/mixlab/runs.sqlite) unless --no-store is given.";
}

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

// Mean per-layer device times over the steps after warm-up (all steps when there are none).
class LayerTimingSink final : public RunSink {
 public:
  explicit LayerTimingSink(std::int64_t warmup_steps) : warmup_steps_(warmup_steps) {}

  void on_layer_timings(std::int64_t step, const std::vector<LayerTiming>& layers) override {
    Sums& sums = step >= warmup_steps_ ? measured_ : all_;
    ++sums.steps;
    for (const LayerTiming& t : layers) {
      if (t.layer < 0) continue;
      const auto i = static_cast<std::size_t>(t.layer);
      if (sums.forward_ms.size() <= i) {
        sums.forward_ms.resize(i + 1, 0.0);
        sums.backward_ms.resize(i + 1, 0.0);
      }
      sums.forward_ms[i] += t.forward_ms;
      sums.backward_ms[i] += t.backward_ms;
    }
  }

  struct Sums {
    std::int64_t steps = 0;
    std::vector<double> forward_ms, backward_ms;  // summed over `steps`
  };
  // The figures to report: after warm-up when measured, else every step's.
  const Sums& sums() const { return measured_.steps > 0 ? measured_ : all_; }

 private:
  std::int64_t warmup_steps_;
  Sums measured_, all_;
};

// Per layer, the steps whose overflow check failed with inf/NaN gradients in it (issue 29).
class OverflowSink final : public RunSink {
 public:
  struct Layer {
    std::int64_t steps = 0, nonfinite = 0, values = 0, last_step = -1;
  };
  void on_layer_overflows(std::int64_t step, const std::vector<LayerOverflow>& layers) override {
    for (const LayerOverflow& o : layers) {
      Layer& l = layers_[o.layer];
      ++l.steps;
      l.nonfinite += o.nonfinite;
      l.values = o.values;
      l.last_step = step;
    }
  }
  const std::map<int, Layer>& layers() const { return layers_; }

 private:
  std::map<int, Layer> layers_;
};

// The run's notes (how the device runs it, where its starting weights and FP8 states came from,
// which attention kernels ran), for --json.
class NotesSink final : public RunSink {
 public:
  void on_start(const RunInfo& info) override { notes = info.notes; }
  std::vector<std::string> notes;
};

// mixed_float8 (issue 30): each FP8 tensor's last figures, and its saturated and flushed values
// summed over the run's training steps.
class Fp8Sink final : public RunSink {
 public:
  struct Tensor {
    Fp8TensorStep last;
    std::int64_t values = 0, saturated = 0, flushed = 0;
  };
  void on_fp8_tensors(std::int64_t, const std::vector<Fp8TensorStep>& tensors) override {
    for (const Fp8TensorStep& t : tensors) {
      Tensor& k = tensors_[{t.layer, t.part, static_cast<int>(t.role)}];
      k.last = t;
      k.values += t.values;
      k.saturated += t.saturated;
      k.flushed += t.flushed;
    }
  }
  const std::map<std::tuple<int, int, int>, Tensor>& tensors() const { return tensors_; }

 private:
  std::map<std::tuple<int, int, int>, Tensor> tensors_;
};

double fraction(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string layer_label(const ModelSpec& spec, std::size_t layer) {
  if (layer >= spec.layers.size()) return "layer " + std::to_string(layer);
  const LayerSpec& l = spec.layers[layer];
  return std::string(to_string(l.type)) + (l.name.empty() ? "" : " " + l.name);
}

void print_layer_timings(const ModelSpec& spec, const LayerTimingSink::Sums& t,
                         const std::string& device) {
  if (t.steps == 0) {
    std::printf("layer times: none reported (the backend on %s does not time layers)\n",
                device.c_str());
    return;
  }
  std::printf("layer times: mean ms over %lld steps on %s\n", static_cast<long long>(t.steps),
              device.c_str());
  std::printf("  %5s  %-28s %12s %12s\n", "layer", "", "forward ms", "backward ms");
  double forward = 0.0, backward = 0.0;
  const double n = static_cast<double>(t.steps);
  for (std::size_t i = 0; i < t.forward_ms.size(); ++i) {
    std::printf("  %5zu  %-28s %12s %12s\n", i, layer_label(spec, i).c_str(),
                format_fixed(t.forward_ms[i] / n, 3).c_str(),
                format_fixed(t.backward_ms[i] / n, 3).c_str());
    forward += t.forward_ms[i] / n;
    backward += t.backward_ms[i] / n;
  }
  std::printf("  %5s  %-28s %12s %12s\n", "", "total", format_fixed(forward, 3).c_str(),
              format_fixed(backward, 3).c_str());
}

}  // namespace

int run_train(const std::vector<std::string>& argv) {
  CommandLine command("mixlab-cli train", "Trains a model, records the run and prints a summary.");
  CLI::App& app = command.app();
  std::string model_argument = "fashion-mlp", device = "auto", db;
  std::vector<std::string> models;  // MODEL given as an argument, as inspect, doctor and export take it
  bool json = false, quiet = false, no_store = false;
  app.add_option("model", models,
                 "a model file (MixLab or Keras JSON, .keras) or a built-in model (or --model)");
  CLI::Option* model_option =
      command
          .add_option(app, "--model", model_argument,
                      "a model file (MixLab or Keras JSON, .keras) or a built-in model")
          ->type_name("MODEL")
          ->default_str(model_argument);
  const RunFieldOptions settings(command);
  command.add_option(app, "--device", device, "cpu, cuda, cuda:N or auto")
      ->type_name("DEVICE")
      ->default_str(device);
  CLI::Option* db_option =
      command.add_database_option(app, db, "the run database")->type_name("PATH");
  app.add_flag("--no-store", no_store, "do not record the run");
  app.add_flag("--json", json, "print one JSON object at the end instead of the summary");
  app.add_flag("--quiet", quiet, "no progress bar");
  // For sweeps: the uid the run is recorded under, so that the sweep finds it (32 hex digits).
  std::string run_uid;
  command.add_option(app, "--run-uid", run_uid, "")->group("");
  app.footer(footer());
  if (!command.parse(argv, &models)) return kExitOk;
  if (models.size() > 1) throw UsageError("give one model, got " + std::to_string(models.size()));
  if (!models.empty() && model_option->count() > 0) {
    throw UsageError("give the model once: as MODEL or as --model, not both");
  }
  if (!models.empty()) model_argument = models.front();
  check_device_option("--device", device);
  // From here a Ctrl+C stops the run (recorded `stopped`) rather than the process, also while
  // the backend starts and the dataset loads; the caller's handlers come back afterwards (a
  // sweep running members has its own).
  g_cancel.store(false);
  const CancelOnSignal cancel_on_signal;

  if (settings.given("epochs") && settings.given("steps"))
    throw UsageError("give --epochs or --steps, not both");
  const ImportedModel model = load_model_input(model_argument);
  const ModelSpec& spec = model.spec;
  RunConfig config;
  apply_model_settings(model, config);  // the file's policy and weights; the options win
  settings.apply(config);
  if (no_store && db_option->count() > 0) throw UsageError("give --db or --no-store, not both");
  if (!run_uid.empty() &&
      (run_uid.size() != 32 || run_uid.find_first_not_of("0123456789abcdef") != std::string::npos))
    throw UsageError("--run-uid must be 32 lower-case hex digits, got " + quote(run_uid));

  // The device: a GPU asked for that cannot be used trains on the CPU, saying why.
  const BackendChoice choice = make_backend(device, config.threads, true);
  Backend& backend = *choice.backend;
  if (!choice.note.empty()) std::fprintf(stderr, "mixlab-cli: %s\n", choice.note.c_str());
  // The engine's one rule for options that do not apply to the device: a run on the CPU is
  // recorded without the GPU options, as the GUI records it.
  std::vector<const RunField*> reset;
  config = applicable_config(std::move(config), backend.device(), &reset);
  if (!reset.empty()) {
    std::fprintf(stderr,
                 "mixlab-cli: GPU options apply to GPU runs; this run is on the %s and is "
                 "recorded without %s\n",
                 choice.device.c_str(), flags_of(reset).c_str());
  }

  // The run is recorded from here on, so that one whose dataset cannot be read is kept too.
  std::optional<store::StoreWriter> writer;
  std::optional<store::RunRecorder> recorder;
  if (!no_store) {
    writer.emplace(db_option->count() > 0 ? std::filesystem::path(db)
                                          : store::default_store_path());
    store::RunRecord record;
    record.model_name =
        spec.name.empty() ? std::filesystem::path(model_argument).stem().string() : spec.name;
    record.model_json = to_json(spec);
    record.config = config;
    record.device = choice.device;
    record.environment.mixlab_version = MIXLAB_VERSION;
    record.uid = run_uid;
    // Not a setting but part of what the run was: the history says where its weights came from.
    if (config.initial_weights) {
      record.note = "starting weights from " + config.initial_weights->origin;
    }
    recorder.emplace(*writer, std::move(record));
  }
  const auto record_failure = [&](const std::exception& e) {
    if (!recorder) return;
    recorder->fail(e.what());
    writer->flush();
  };

  const bool interactive = !quiet && isatty(STDERR_FILENO);
  ProgressSink progress(stderr, interactive, config.epochs);
  RunSink quiet_sink;
  RunSink& display = quiet ? quiet_sink : progress;
  RunSink no_recorder;
  LayerTimingSink layer_timing(config.warmup_steps);
  OverflowSink overflows;
  Fp8Sink fp8;
  NotesSink notes;
  store::FanoutSink sink{&display,      recorder ? static_cast<RunSink*>(&*recorder) : &no_recorder,
                         &layer_timing, &overflows,
                         &fp8,          &notes};

  RunSummary s;
  try {
    const DatasetPair data = load_dataset(config.dataset);
    s = train(spec, config, data, backend, sink, g_cancel);
  } catch (const Error& e) {
    record_failure(e);
    throw;
  } catch (const std::bad_alloc&) {
    // The trainer turns its own allocation failures into a failed run; this is the dataset's.
    const Error e("out of memory while loading the dataset " + config.dataset.to_string());
    record_failure(e);
    throw e;
  }

  // Everything the run produced is committed before the summary is shown.
  std::string store_error;
  if (writer) {
    try {
      writer->flush();
    } catch (const store::StoreError& e) {
      store_error = e.what();
    }
  }
  if (!store_error.empty() && s.status == RunStatus::finished) {
    // Trained, but not kept: the run did not finish as the user asked (its record says
    // `running` until the store can be written, then `interrupted`).
    s.status = RunStatus::failed;
    s.message = "the run store could not record the run: " + store_error;
  }

  if (json) {
    nlohmann::ordered_json out;
    out["status"] = std::string(to_string(s.status));
    out["message"] = s.message;
    out["model"] = spec.name;
    out["dataset"] = config.dataset.to_string();
    out["precision"] = std::string(to_string(config.precision));
    out["loss_scaling"] = config.loss_scale.to_string();
    out["optimizer"] = std::string(to_string(config.optimizer.kind));
    out["learning_rate"] = config.optimizer.learning_rate;
    out["batch_size"] = config.batch_size;
    out["seed"] = config.seed;
    out["threads"] = backend.device().threads;
    out["device"] = backend.device().name;
    out["device_id"] = choice.device;
    if (!choice.note.empty()) out["device_note"] = choice.note;
    out["notes"] = notes.notes;
    if (config.tf32) out["tf32"] = true;
    if (config.cuda_graphs) out["cuda_graphs"] = true;
    if (config.data_on_device) out["data_on_device"] = true;
    // Every setting, as runs show --json has it; the keys above stay for scripts that read them.
    out["config"] = run_config_json(config);
    out["steps"] = s.steps;
    out["skipped_steps"] = s.skipped_steps;
    out["epochs_completed"] = s.epochs_completed;
    out["final_loss_scale"] = s.final_loss_scale;
    out["warmup_steps"] = s.warmup_steps;
    out["median_step_ms"] = number_or_null(s.median_step_ms);
    out["p5_step_ms"] = number_or_null(s.p5_step_ms);
    out["p95_step_ms"] = number_or_null(s.p95_step_ms);
    out["samples_per_s"] = number_or_null(s.samples_per_s);
    out["final_loss"] = number_or_null(s.final_loss);
    out["final_accuracy"] = number_or_null(s.final_accuracy);
    out["test_loss"] = number_or_null(s.test_loss);
    out["test_accuracy"] = number_or_null(s.test_accuracy);
    out["peak_memory_bytes"] = s.peak_memory_bytes;
    out["wall_s"] = s.wall_s;
    out["run_id"] = recorder ? nlohmann::json(recorder->run_id()) : nlohmann::json();
    if (writer) out["db"] = writer->path().string();
    if (s.diverged_at_step >= 0) out["diverged_at_step"] = s.diverged_at_step;
    if (s.failed_allocation_bytes > 0) out["failed_allocation_bytes"] = s.failed_allocation_bytes;
    if (config.layer_timing) {
      const auto& t = layer_timing.sums();
      nlohmann::ordered_json layers = nlohmann::ordered_json::array();
      for (std::size_t i = 0; t.steps > 0 && i < t.forward_ms.size(); ++i) {
        layers.push_back({{"layer", i},
                          {"label", layer_label(spec, i)},
                          {"forward_ms", t.forward_ms[i] / static_cast<double>(t.steps)},
                          {"backward_ms", t.backward_ms[i] / static_cast<double>(t.steps)}});
      }
      out["layer_timings"] = layers;
    }
    nlohmann::ordered_json overflow_rows = nlohmann::ordered_json::array();
    for (const auto& [layer, l] : overflows.layers()) {
      overflow_rows.push_back({{"layer", layer},
                               {"label", layer_label(spec, static_cast<std::size_t>(layer))},
                               {"steps", l.steps},
                               {"nonfinite", l.nonfinite},
                               {"values", l.values},
                               {"last_step", l.last_step}});
    }
    out["layer_overflows"] = overflow_rows;
    if (config.precision == Policy::mixed_float8) {
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (const auto& [key, t] : fp8.tensors()) {
        rows.push_back({{"layer", t.last.layer},
                        {"label", layer_label(spec, static_cast<std::size_t>(t.last.layer))},
                        {"part", t.last.part},
                        {"role", to_string(t.last.role)},
                        {"amax", t.last.amax},
                        {"scale", t.last.next_scale},
                        {"saturated_fraction", fraction(t.saturated, t.values)},
                        {"flushed_fraction", fraction(t.flushed, t.values)}});
      }
      out["fp8_tensors"] = rows;
    }
    std::cout << out.dump(2) << std::endl;
  } else {
    std::printf("status:      %s%s%s\n", std::string(to_string(s.status)).c_str(),
                s.message.empty() ? "" : ": ", s.message.c_str());
    std::printf("steps:       %s (%s skipped), final loss scale %g\n",
                group_digits(s.steps).c_str(), group_digits(s.skipped_steps).c_str(),
                s.final_loss_scale);
    std::printf(
        "step time:   median %s ms, p5 %s ms, p95 %s ms (first %lld steps left out as warm-up)\n",
        format_fixed(s.median_step_ms, 3).c_str(), format_fixed(s.p5_step_ms, 3).c_str(),
        format_fixed(s.p95_step_ms, 3).c_str(), static_cast<long long>(s.warmup_steps));
    std::printf(
        "throughput:  %s samples/s\n",
        std::isfinite(s.samples_per_s) ? group_digits(std::llround(s.samples_per_s)).c_str() : "-");
    std::printf("train:       loss %s, accuracy %s\n", format_fixed(s.final_loss, 4).c_str(),
                format_fixed(s.final_accuracy, 4).c_str());
    std::printf("test:        loss %s, accuracy %s\n", format_fixed(s.test_loss, 4).c_str(),
                format_fixed(s.test_accuracy, 4).c_str());
    std::printf("memory:      %s, wall time %.1f s\n", format_bytes(s.peak_memory_bytes).c_str(),
                s.wall_s);
    if (config.layer_timing) print_layer_timings(spec, layer_timing.sums(), choice.device);
    if (!overflows.layers().empty()) {
      std::printf("overflow:    inf/NaN gradients by layer on the skipped steps\n");
      std::printf("  %5s  %-28s %7s %14s %14s %10s\n", "layer", "", "steps", "inf/NaN values",
                  "of values", "last step");
      for (const auto& [layer, l] : overflows.layers()) {
        std::printf("  %5d  %-28s %7s %14s %14s %10s\n", layer,
                    layer_label(spec, static_cast<std::size_t>(layer)).c_str(),
                    group_digits(l.steps).c_str(), group_digits(l.nonfinite).c_str(),
                    group_digits(l.values).c_str(), group_digits(l.last_step + 1).c_str());
      }
    }
    if (!fp8.tensors().empty()) {
      std::printf(
          "fp8:         each FP8 tensor after the last step (its next scale); values "
          "saturated and flushed to zero over the run\n");
      std::printf("  %5s  %-28s %4s  %-8s %12s %12s %10s %10s\n", "layer", "", "part", "tensor",
                  "amax", "scale", "saturated", "flushed");
      for (const auto& [key, t] : fp8.tensors()) {
        std::printf("  %5d  %-28s %4d  %-8s %12.4g %12.4g %9.4f%% %9.4f%%\n", t.last.layer,
                    layer_label(spec, static_cast<std::size_t>(t.last.layer)).c_str(), t.last.part,
                    std::string(to_string(t.last.role)).c_str(), t.last.amax, t.last.next_scale,
                    100.0 * fraction(t.saturated, t.values), 100.0 * fraction(t.flushed, t.values));
      }
    }
    if (recorder) {
      std::printf("run id:      %lld (in %s)\n", static_cast<long long>(recorder->run_id()),
                  writer->path().c_str());
    }
  }
  if (!store_error.empty()) {
    std::fprintf(stderr, "mixlab-cli: run store: the run was not fully recorded: %s\n",
                 store_error.c_str());
    return kExitRunFailed;
  }
  switch (s.status) {
    case RunStatus::finished:
      return kExitOk;
    case RunStatus::stopped:
      return kExitStopped;
    default:
      return kExitRunFailed;
  }
}

}  // namespace mixlab::cli
