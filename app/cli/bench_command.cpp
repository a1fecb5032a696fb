// mixlab-cli bench: median step time and achieved GFLOP/s of the PRODUCT.md models on synthetic
// CIFAR-shaped data, per precision policy, with the thread count given. Figures, not a test.
// `--suite gpu` runs the CUDA backend's rows instead (issue 5; tests/gpu/check.sh compares them
// with tests/bench/pytorch_peer.py --device cuda): each in every policy, TF32 included, with the
// dataset kept on the device so that the input pipeline is not measured.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "engine/backend/backend.h"
#include "engine/train/stats.h"
#include "engine/train/trainer.h"

namespace mixlab::cli {

namespace {

struct BenchModel {
  std::string name;
  int batch;
  OptimizerKind optimizer;  // what the model's user trains it with (PRODUCT.md)
};

const std::vector<BenchModel>& default_models() {
  static const std::vector<BenchModel> models = {
      {"cifar10-mlp", 32, OptimizerKind::sgd},
      {"cifar100-convnet", 128, OptimizerKind::adam},
  };
  return models;
}

// Models --models may name beyond the defaults, at their users' settings: resnet20 as He et al.
// train it on CIFAR-10 (batch 128, SGD), issue 27's comparison with Keras; tiny-gpt at batch 32
// with Adam, issue 29's (scripts/bench-keras.sh --models tiny-gpt).
const std::vector<BenchModel>& other_models() {
  static const std::vector<BenchModel> models = {
      {"resnet20", 128, OptimizerKind::sgd},
      {"tiny-gpt", 32, OptimizerKind::adam},
  };
  return models;
}

// One benchmarked configuration: a model at a batch size under one precision setting.
struct BenchRow {
  BenchModel model;
  Policy policy = Policy::float32;
  bool tf32 = false;
  bool cuda_graphs = false;
  bool data_on_device = false;
};

// The GPU suite's extra model: 4 x Dense(4096, relu) on 4096 input features, matmul-bound, where
// 16-bit tensor cores should beat float32 several times over. SGD: the row measures the layers.
constexpr const char* kMlp4096Name = "mlp-4x4096";
constexpr const char* kMlp4096Json = R"({
  "name": "mlp-4x4096",
  "input": {"shape": [64, 64, 1]},
  "layers": [
    {"type": "Rescaling", "scale": 0.00392156862745098},
    {"type": "Flatten"},
    {"type": "Dense", "units": 4096, "activation": "relu"},
    {"type": "Dense", "units": 4096, "activation": "relu"},
    {"type": "Dense", "units": 4096, "activation": "relu"},
    {"type": "Dense", "units": 4096, "activation": "relu"},
    {"type": "Dense", "units": 10},
    {"type": "Activation", "activation": "softmax", "dtype": "float32"}
  ]
})";

ModelSpec load_bench_model(const std::string& name) {
  if (name == kMlp4096Name) return parse_model_json(kMlp4096Json, kMlp4096Name);
  return load_model_argument(name);
}

// Issue 5's rows: the PRODUCT.md models at their users' batch and at 1024, the 4096-wide MLP,
// each in float32, float32 with TF32, mixed_float16 and mixed_bfloat16 (the MLP in mixed_float8
// too); and the batch-32 MLP with CUDA graphs, where launch overhead dominates.
std::vector<BenchRow> gpu_suite_rows() {
  const std::vector<BenchModel> models = {
      {"cifar10-mlp", 32, OptimizerKind::sgd},
      {"cifar10-mlp", 1024, OptimizerKind::sgd},
      {"cifar100-convnet", 1020, OptimizerKind::adam},
      {"cifar100-convnet", 1024, OptimizerKind::adam},
      {kMlp4096Name, 4096, OptimizerKind::sgd},
  };
  std::vector<BenchRow> rows;
  const auto add_every_policy = [&rows](const BenchModel& m, bool cuda_graphs) {
    rows.push_back({m, Policy::float32, false, cuda_graphs, true});
    rows.push_back({m, Policy::float32, true, cuda_graphs, true});
    rows.push_back({m, Policy::mixed_float16, false, cuda_graphs, true});
    rows.push_back({m, Policy::mixed_bfloat16, false, cuda_graphs, true});
  };
  for (const BenchModel& m : models) {
    add_every_policy(m, false);
    // Issue 30: mixed_float8 against mixed_bfloat16 where FP8 tensor cores have the work (a GPU
    // without them drops the row, saying why).
    if (m.name == kMlp4096Name) rows.push_back({m, Policy::mixed_float8, false, false, true});
  }
  add_every_policy(models[0], true);
  return rows;
}

// "float32", "float32+tf32", "mixed_float16", ...; "+graphs" with CUDA graphs.
std::string row_precision(const BenchRow& row) {
  return std::string(to_string(row.policy)) + (row.tf32 ? "+tf32" : "");
}

// Keeps each step's parts for their medians.
struct PartsSink : RunSink {
  std::vector<double> data_ms, forward_ms, backward_ms, optimizer_ms;
  void on_step(const StepMetrics& s) override {
    data_ms.push_back(s.data_wait_ms);
    forward_ms.push_back(s.forward_ms);
    backward_ms.push_back(s.backward_ms);
    optimizer_ms.push_back(s.optimizer_ms);
  }
  static double median_after(const std::vector<double>& v, std::int64_t warmup) {
    return quantile(
        std::vector<double>(
            v.begin() + std::min<std::int64_t>(warmup, static_cast<std::int64_t>(v.size())),
            v.end()),
        0.5);
  }
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

}  // namespace

int run_bench(const std::vector<std::string>& argv) {
  CommandLine command("mixlab-cli bench",
                      "Median step time and GFLOP/s of the reference models on synthetic data, "
                      "per precision policy.");
  CLI::App& app = command.app();
  std::string suite = "cpu", models_list, precisions_list = "float32,mixed_bfloat16", steps_text,
              warmup_text, device_name = "auto";
  bool json = false;
  command.add_option(app, "--suite", suite, "cpu, or gpu: the CUDA backend's rows (issue 5)")
      ->default_str(suite);
  CLI::Option* models_option =
      command.add_option(app, "--models", models_list,
                         "comma-separated models (default: cifar10-mlp,cifar100-convnet)");
  CLI::Option* precisions_option =
      command.add_option(app, "--precisions", precisions_list, "comma-separated policies")
          ->default_str(precisions_list);
  command.add_option(app, "--steps", steps_text, "steps per row (default: 30, gpu suite 40)")
      ->type_name("N");
  command
      .add_option(app, "--warmup", warmup_text,
                  "steps left out of the figures (default: 5, gpu suite 10)")
      ->type_name("N");
  // The run settings bench takes: the table's options. The batch size and the optimizer, when
  // given, replace each model's own (PRODUCT.md's users'), so they show no one default.
  const RunFieldOptions settings(command, {"threads", "batch_size", "optimizer"});
  for (const char* each_model : {"--batch-size", "--optimizer"}) {
    CLI::Option* option = app.get_option(each_model);
    option->default_str("");
    option->description(option->get_description() + " (default: each model's)");
  }
  command.add_option(app, "--device", device_name, "cpu, cuda, cuda:N or auto")
      ->type_name("DEVICE")
      ->default_str(device_name);
  app.add_flag("--json", json, "one JSON array instead of the table");
  if (!command.parse(argv)) return kExitOk;
  check_device_option("--device", device_name);

  if (suite != "cpu" && suite != "gpu") {
    throw UsageError("option '--suite': unknown suite " + quote(suite) + " (cpu, gpu)");
  }
  const bool gpu_suite = suite == "gpu";
  if (gpu_suite && (models_option->count() > 0 || precisions_option->count() > 0 ||
                    settings.given("batch_size"))) {
    throw UsageError("--suite gpu runs its own models, batch sizes and precisions");
  }
  std::vector<BenchModel> models;
  if (models_option->count() > 0) {
    for (const auto& name : split(models_list)) {
      BenchModel m{name, 32, OptimizerKind::adam};
      for (const auto* known : {&default_models(), &other_models()}) {
        for (const auto& d : *known) {
          if (d.name == name) m = d;
        }
      }
      models.push_back(m);
    }
    if (models.empty()) throw UsageError("option '--models' names no model");
  } else {
    models = default_models();
  }
  std::vector<Policy> policies;
  for (const auto& p : split(precisions_list)) {
    const auto parsed = parse_policy(p);
    if (!parsed) throw UsageError("option '--precisions': unknown precision " + quote(p));
    policies.push_back(*parsed);
  }
  if (policies.empty()) throw UsageError("option '--precisions' names no precision");
  RunConfig overrides;
  settings.apply(overrides);
  const int threads = overrides.threads;
  const std::int64_t steps = steps_text.empty() ? (gpu_suite ? 40 : 30)
                                                : integer_option("--steps", steps_text, 2, 1000000);
  const int warmup =
      static_cast<int>(warmup_text.empty() ? (gpu_suite ? 10 : 5)
                                           : integer_option("--warmup", warmup_text, 0, 1000000));
  std::optional<int> batch_override;
  if (settings.given("batch_size")) batch_override = overrides.batch_size;
  std::optional<OptimizerKind> optimizer_override;
  if (settings.given("optimizer")) optimizer_override = overrides.optimizer.kind;
  std::vector<BenchRow> rows;
  if (gpu_suite) {
    rows = gpu_suite_rows();
  } else {
    for (const BenchModel& m : models) {
      for (Policy policy : policies) rows.push_back({m, policy});
    }
  }
  // Every model is read before anything runs: a typo fails now, not after the rows before it.
  std::map<std::string, ModelSpec> specs;
  for (BenchRow& row : rows) {
    if (batch_override) row.model.batch = *batch_override;
    row.model.optimizer = optimizer_override.value_or(row.model.optimizer);
    if (!specs.contains(row.model.name))
      specs.emplace(row.model.name, load_bench_model(row.model.name));
  }

  // auto: the GPU when the CUDA backend can train on it; a GPU asked for that cannot be used
  // benchmarks the CPU, saying why.
  const BackendChoice choice = make_backend(device_name, threads, true);
  if (!choice.note.empty()) std::fprintf(stderr, "mixlab-cli bench: %s\n", choice.note.c_str());
  Backend* backend = choice.backend.get();
  const DeviceInfo device = backend->device();
  // A policy the device cannot run (mixed_float8 below compute capability 8.9) leaves its rows.
  std::erase_if(rows, [&](const BenchRow& row) {
    const PolicySupport support = policy_support(device, row.policy);
    if (support.level != Support::unsupported) return false;
    std::fprintf(stderr, "mixlab-cli bench: %s batch %d %s left out: %s\n", row.model.name.c_str(),
                 row.model.batch, std::string(to_string(row.policy)).c_str(),
                 support.reason.c_str());
    return true;
  });
  if (!json) {
    if (device.kind == "cpu") {
      std::printf("device: %s, %d threads, %s\n", device.name.c_str(), device.threads,
                  device.library_versions().c_str());
    } else {
      std::printf("device: %s, %s (compute capability %s), %s\n", choice.device.c_str(),
                  device.name.c_str(), device.compute_capability.c_str(),
                  device.library_versions().c_str());
    }
    std::printf("%-18s %-22s %-9s %6s %10s %8s %8s %11s %8s  %s\n", "model", "precision",
                "optimizer", "batch", "median ms", "p5 ms", "p95 ms", "samples/s", "GFLOP/s",
                "fwd / bwd / opt ms");
  }
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  std::atomic<bool> cancel{false};
  // The dataset and float32 median of the model and batch of the rows before (rows come grouped).
  std::string data_key;
  DatasetPair data;
  double f32_median = NAN;
  for (const BenchRow& row : rows) {
    const BenchModel& bm = row.model;
    const ModelSpec& spec = specs.at(bm.name);
    const ShapeTable table = infer_shapes(spec);
    const int batch = bm.batch;
    const DatasetSpec ds = synthetic_for_model(
        spec, table,
        std::max<std::int64_t>(batch, std::min<std::int64_t>(steps * batch, 8 * batch)));
    if (ds.to_string() != data_key) {
      data = load_dataset(ds);
      data_key = ds.to_string();
      f32_median = NAN;
    }
    const Policy policy = row.policy;
    RunConfig config;
    config.precision = policy;
    // mixed_float16 as its users run it (Keras's LossScaleOptimizer, PyTorch's GradScaler).
    if (gpu_suite && policy == Policy::mixed_float16)
      config.loss_scale = LossScaleConfig::dynamic();
    config.tf32 = row.tf32;
    config.cuda_graphs = row.cuda_graphs;
    config.data_on_device = row.data_on_device;
    config.batch_size = batch;
    config.steps = steps;
    config.epochs = 1;
    config.optimizer = default_optimizer(bm.optimizer);
    config.threads = threads;
    config.dataset = ds;
    config.evaluate = false;
    config.warmup_steps = warmup;
    PartsSink sink;
    const RunSummary s = train(spec, config, data, *backend, sink, cancel);
    const double fwd = PartsSink::median_after(sink.forward_ms, s.warmup_steps);
    const double bwd = PartsSink::median_after(sink.backward_ms, s.warmup_steps);
    const double opt = PartsSink::median_after(sink.optimizer_ms, s.warmup_steps);
    const double wait = PartsSink::median_after(sink.data_ms, s.warmup_steps);
    const std::string precision = row_precision(row);
    if (s.status != RunStatus::finished) {
      std::fprintf(stderr, "mixlab-cli bench: %s batch %d %s%s: %s: %s\n", bm.name.c_str(), batch,
                   precision.c_str(), row.cuda_graphs ? " (CUDA graphs)" : "",
                   std::string(to_string(s.status)).c_str(), s.message.c_str());
      return kExitRunFailed;
    }
    // Training FLOPs taken as 3x forward (forward, backward data, backward weights).
    const double gflops =
        3.0 * static_cast<double>(table.flops_total) * batch / (s.median_step_ms / 1000.0) / 1e9;
    const bool strict_float32 = policy == Policy::float32 && !row.tf32 && !row.cuda_graphs;
    if (strict_float32) f32_median = s.median_step_ms;
    const double speedup = f32_median / s.median_step_ms;
    results.push_back({{"model", bm.name},
                       {"precision", std::string(to_string(policy))},
                       {"tf32", row.tf32},
                       {"cuda_graphs", row.cuda_graphs},
                       {"data_on_device", row.data_on_device},
                       {"optimizer", std::string(to_string(bm.optimizer))},
                       {"batch_size", batch},
                       {"device", choice.device},
                       {"threads", device.threads},
                       {"steps", s.steps},
                       {"warmup_steps", s.warmup_steps},
                       {"median_step_ms", s.median_step_ms},
                       {"p5_step_ms", s.p5_step_ms},
                       {"p95_step_ms", s.p95_step_ms},
                       {"samples_per_s", s.samples_per_s},
                       {"gflops_per_s", gflops},
                       {"median_data_wait_ms", wait},
                       {"median_forward_ms", fwd},
                       {"median_backward_ms", bwd},
                       {"median_optimizer_ms", opt},
                       {"skipped_steps", s.skipped_steps},
                       {"speedup_vs_float32",
                        std::isfinite(speedup) ? nlohmann::json(speedup) : nlohmann::json()}});
    if (!json) {
      std::printf("%-18s %-22s %-9s %6d %10.2f %8.2f %8.2f %11s %8.1f  %.1f / %.1f / %.1f",
                  bm.name.c_str(), (precision + (row.cuda_graphs ? "+graphs" : "")).c_str(),
                  std::string(to_string(bm.optimizer)).c_str(), batch, s.median_step_ms,
                  s.p5_step_ms, s.p95_step_ms, group_digits(std::llround(s.samples_per_s)).c_str(),
                  gflops, fwd, bwd, opt);
      if (!strict_float32 && std::isfinite(speedup)) std::printf("  %.2fx float32", speedup);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  if (json) std::cout << results.dump(2) << std::endl;
  return kExitOk;
}

}  // namespace mixlab::cli
