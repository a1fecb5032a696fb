// mixlab-cli train: one training run with a live progress bar and a summary (or --json).
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "app/cli/progress_sink.h"
#include "app/store/run_recorder.h"
#include "app/store/store_writer.h"
#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"

namespace mixlab::cli {

namespace {

// Set by SIGINT / SIGTERM; the trainer checks it between steps.
std::atomic<bool> g_cancel{false};

extern "C" void on_signal(int) {
  g_cancel.store(true);
}

constexpr const char* kUsage =
    "usage: mixlab-cli train [--model MODEL.json|BUILTIN] [--dataset fashion-mnist|mnist:DIR|"
    "cifar10:DIR|cifar100:DIR|synthetic:HxWxC:CLASSES[:N]] [--precision float32|mixed_float16|"
    "mixed_bfloat16] [--loss-scale auto|none|dynamic[:INITIAL]|NUMBER] [--batch-size N] [--epochs "
    "N | --steps N] "
    "[--optimizer sgd|adam] [--lr X] [--momentum X] [--nesterov] [--seed N] [--threads N] "
    "[--no-eval] [--db PATH | --no-store] [--json] [--quiet]\n"
    "Runs are recorded in the run database (--db PATH, else $MIXLAB_DB, else\n"
    "$XDG_DATA_HOME/mixlab/runs.sqlite) unless --no-store is given.";

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

RunConfig run_config_from(const Args& args) {
  RunConfig config;
  if (const auto p = args.get("precision")) {
    const auto parsed = parse_policy(*p);
    if (!parsed) {
      throw UsageError("unknown precision '" + *p + "' (float32, mixed_float16, mixed_bfloat16)");
    }
    config.precision = *parsed;
  }
  const std::string scale = args.get_or("loss-scale", "auto");
  if (scale == "auto") {
    // Keras wraps the optimizer in a dynamic LossScaleOptimizer under mixed_float16 only.
    config.loss_scale = config.precision == Policy::mixed_float16 ? LossScaleConfig::dynamic()
                                                                  : LossScaleConfig::none();
  } else if (const auto parsed = parse_loss_scale(scale)) {
    config.loss_scale = *parsed;
  } else {
    throw UsageError(
        "--loss-scale must be auto, none, dynamic, dynamic:INITIAL or a positive number, got '" +
        scale + "'");
  }
  if (auto v = args.get_int("batch-size", 1, 1 << 20)) config.batch_size = static_cast<int>(*v);
  if (args.has("epochs") && args.has("steps"))
    throw UsageError("give --epochs or --steps, not both");
  if (auto v = args.get_int("epochs", 1, 100000)) config.epochs = static_cast<int>(*v);
  if (auto v = args.get_int("steps", 1, std::int64_t{1} << 40)) config.steps = *v;
  OptimizerKind kind = OptimizerKind::adam;
  if (const auto o = args.get("optimizer")) {
    const auto parsed = parse_optimizer(*o);
    if (!parsed) throw UsageError("unknown optimizer '" + *o + "' (sgd, adam)");
    kind = *parsed;
  }
  config.optimizer = default_optimizer(kind);
  if (auto v = args.get_double("lr")) config.optimizer.learning_rate = *v;
  if (auto v = args.get_double("momentum")) {
    if (kind != OptimizerKind::sgd) throw UsageError("--momentum applies to --optimizer sgd");
    config.optimizer.momentum = *v;
  }
  if (args.has("nesterov")) {
    if (kind != OptimizerKind::sgd) throw UsageError("--nesterov applies to --optimizer sgd");
    config.optimizer.nesterov = true;
  }
  if (auto v = args.get_int("seed", 0, std::int64_t{1} << 62))
    config.seed = static_cast<std::uint64_t>(*v);
  if (auto v = args.get_int("threads", 0, 4096)) config.threads = static_cast<int>(*v);
  if (const auto d = args.get("device"); d && *d != "cpu") {
    throw UsageError("device '" + *d + "' is not available: this mixlab-cli runs on the cpu");
  }
  config.dataset = parse_dataset_spec(args.get_or("dataset", "fashion-mnist"));
  config.evaluate = !args.has("no-eval");
  return config;
}

}  // namespace

int run_train(const std::vector<std::string>& argv) {
  const Args args(argv,
                  {"model", "dataset", "precision", "loss-scale", "batch-size", "epochs", "steps",
                   "optimizer", "lr", "momentum", "seed", "threads", "device", "db"},
                  {"json", "quiet", "nesterov", "no-eval", "no-store", "help"});
  if (args.has("help")) {
    std::cout << kUsage << "\n";
    return kExitOk;
  }
  if (!args.positionals().empty())
    throw UsageError(std::string("unexpected argument '") + args.positionals()[0] + "'\n" + kUsage);
  const RunConfig config = run_config_from(args);
  const std::string model_argument = args.get_or("model", "fashion-mlp");
  const ModelSpec spec = load_model_argument(model_argument);
  if (args.has("no-store") && args.has("db")) throw UsageError("give --db or --no-store, not both");

  // The run is recorded from here on, so that one whose dataset cannot be read is kept too.
  std::optional<store::StoreWriter> writer;
  std::optional<store::RunRecorder> recorder;
  if (!args.has("no-store")) {
    writer.emplace(args.has("db") ? std::filesystem::path(*args.get("db"))
                                  : store::default_store_path());
    store::RunRecord record;
    record.model_name =
        spec.name.empty() ? std::filesystem::path(model_argument).stem().string() : spec.name;
    record.model_json = to_json(spec);
    record.config = config;
    record.device = "cpu";
    record.environment.mixlab_version = MIXLAB_VERSION;
    recorder.emplace(*writer, std::move(record));
  }
  const auto record_failure = [&](const std::exception& e) {
    if (!recorder) return;
    recorder->fail(e.what());
    writer->flush();
  };

  auto backend = make_cpu_backend(config.threads);
  const bool json = args.has("json");
  const bool interactive = !args.has("quiet") && isatty(STDERR_FILENO);
  ProgressSink progress(stderr, interactive, config.epochs);
  RunSink quiet_sink;
  RunSink& display = args.has("quiet") ? quiet_sink : progress;
  RunSink no_recorder;
  store::FanoutSink sink{&display, recorder ? static_cast<RunSink*>(&*recorder) : &no_recorder};

  g_cancel.store(false);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  RunSummary s;
  try {
    const DatasetPair data = load_dataset(config.dataset);
    s = train(spec, config, data, *backend, sink, g_cancel);
  } catch (const Error& e) {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    record_failure(e);
    throw;
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);

  // Everything the run produced is committed before the summary is shown.
  std::string store_error;
  if (writer) {
    try {
      writer->flush();
    } catch (const store::StoreError& e) {
      store_error = e.what();
    }
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
    out["threads"] = backend->device().threads;
    out["device"] = backend->device().name;
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
