#include "engine/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"
#include "engine/data/batch_loader.h"
#include "engine/train/stats.h"

namespace mixlab {

std::string_view to_string(RunStatus status) {
  switch (status) {
    case RunStatus::running:
      return "running";
    case RunStatus::finished:
      return "finished";
    case RunStatus::stopped:
      return "stopped";
    case RunStatus::diverged:
      return "diverged";
    case RunStatus::failed:
      return "failed";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

void check_range(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

// Loss and accuracy over a whole split, in evaluation mode (no dropout, no update).
struct Evaluation {
  double loss = kNotMeasured;
  double accuracy = kNotMeasured;
  bool cancelled = false;
};

Evaluation evaluate(ModelExecutor& executor, const Dataset& data, const RunConfig& config,
                    const std::atomic<bool>& cancel) {
  BatchLoaderOptions options;
  options.batch_size = executor.batch_size();
  options.shuffle = false;
  options.epochs = 1;
  options.seed = config.seed;
  BatchLoader loader(data, options);
  Batch batch;
  double loss_sum = 0.0, correct = 0.0;
  std::int64_t samples = 0;
  while (loader.next(batch)) {
    if (cancel.load(std::memory_order_relaxed)) return {kNotMeasured, kNotMeasured, true};
    executor.load_batch(batch.images, batch.labels, batch.size);
    executor.launch_step(Phase::eval, 0);
    const BatchLoss l = executor.finish_step().batch;
    loss_sum += l.loss * l.samples;
    correct += l.correct;
    samples += l.samples;
  }
  if (samples == 0) return {};
  return {loss_sum / static_cast<double>(samples), correct / static_cast<double>(samples), false};
}

}  // namespace

ShapeTable validate_run(const ModelSpec& spec, const RunConfig& config, const DatasetPair& data) {
  ShapeTable table = infer_shapes(spec, config.precision);
  check_range(config.batch_size >= 1,
              "batch size must be at least 1, got " + std::to_string(config.batch_size));
  check_range(config.epochs >= 1,
              "epochs must be at least 1, got " + std::to_string(config.epochs));
  check_range(config.steps >= 0, "steps must not be negative, got " + std::to_string(config.steps));
  check_range(config.threads >= 0,
              "threads must not be negative, got " + std::to_string(config.threads));
  const auto& opt = config.optimizer;
  check_range(std::isfinite(opt.learning_rate) && opt.learning_rate > 0.0,
              "learning rate must be a positive number, got " + std::to_string(opt.learning_rate));
  check_range(opt.momentum >= 0.0 && opt.momentum < 1.0,
              "momentum must be in [0, 1), got " + std::to_string(opt.momentum));
  check_range(opt.beta_1 >= 0.0 && opt.beta_1 < 1.0 && opt.beta_2 >= 0.0 && opt.beta_2 < 1.0,
              "Adam's beta_1 and beta_2 must be in [0, 1)");
  check_range(opt.epsilon > 0.0, "Adam's epsilon must be positive");
  const auto& ls = config.loss_scale;
  check_range(ls.mode == LossScaleConfig::Mode::none ||
                  (std::isfinite(ls.initial_scale) && ls.initial_scale > 0.0),
              "the loss scale must be a positive number");

  const Dataset& train = data.train;
  check_range(train.size() > 0, "dataset " + quote(train.name) + " has no samples");
  // Images of one channel also read as sequences of their rows (Keras's MNIST arrays are
  // (28, 28): an Input((28, 28)) model reads 28 steps of 28 features), the same bytes in order.
  Shape channel_dropped = train.sample_shape;
  if (channel_dropped.size() == 3 && channel_dropped.back() == 1) channel_dropped.pop_back();
  if (table.input_shape != train.sample_shape && table.input_shape != channel_dropped) {
    throw ConfigError("model " + quote(spec.name) + " takes input " +
                      format_shape(table.input_shape) + " but dataset " + quote(train.name) +
                      " has samples of " + format_shape(train.sample_shape));
  }
  // A label per step (a language model) or per sample, as the model's output has them.
  const std::int64_t positions = table.label_positions();
  if (positions != std::max(1, train.label_positions)) {
    const bool model_per_step = positions > 1;
    throw ConfigError(
        "model " + quote(spec.name) + " predicts " +
        (model_per_step ? "a label at each of " + std::to_string(positions) + " steps"
                        : std::string("one label per sample")) +
        " but dataset " + quote(train.name) + " has " +
        (train.label_positions > 1
             ? "a label at each of " + std::to_string(train.label_positions) +
                   " steps (a language model's next token): end the model with a Dense of the "
                   "vocabulary on every step, without pooling or Flatten"
             : std::string("one label per sample: pool the steps (GlobalAveragePooling1D) or "
                           "Flatten before the last Dense")));
  }
  // Token ids must have a row in the Embedding that reads them.
  if (train.vocabulary > 0) {
    for (std::size_t i = 0; i < spec.layers.size(); ++i) {
      const LayerSpec& layer = spec.layers[i];
      if (layer.type == LayerType::Embedding && layer.input_dim < train.vocabulary) {
        throw ConfigError("layer " + std::to_string(i) + " (Embedding): input_dim " +
                          std::to_string(layer.input_dim) + " has no row for token ids up to " +
                          std::to_string(train.vocabulary - 1) + " of dataset " +
                          quote(train.name) + ": set input_dim to " +
                          std::to_string(train.vocabulary) + " at least");
      }
    }
  }
  const std::int64_t outputs = table.classes();
  const std::int64_t classes = train.num_classes;
  if (spec.loss == LossKind::binary_crossentropy) {
    if (!(outputs == classes || (outputs == 1 && classes == 2))) {
      throw ConfigError("binary_crossentropy: the model has " + std::to_string(outputs) +
                        " outputs but dataset " + quote(train.name) + " has " +
                        std::to_string(classes) +
                        " classes (use 1 output for 2 classes, or one per class)");
    }
  } else if (outputs != classes) {
    throw ConfigError(std::string(to_string(spec.loss)) + ": the model has " +
                      std::to_string(outputs) + " outputs but dataset " + quote(train.name) +
                      " has " + std::to_string(classes) + " classes");
  }
  return table;
}

ExecutorOptions executor_options(const RunConfig& config) {
  ExecutorOptions options;
  options.policy = config.precision;
  options.batch_size = config.batch_size;
  options.optimizer = config.optimizer;
  options.seed = config.seed;
  options.tf32 = config.tf32;
  options.cuda_graphs = config.cuda_graphs;
  options.attention = config.attention;
  options.fp8 = config.fp8;
  options.layer_timing = config.layer_timing;
  options.initial_weights = config.initial_weights;
  return options;
}

RunSummary train(const ModelSpec& spec, const RunConfig& config, const DatasetPair& data,
                 Backend& backend, RunSink& sink, const std::atomic<bool>& cancel) {
  const ShapeTable table = validate_run(spec, config, data);
  const auto run_start = Clock::now();
  RunSummary summary;
  std::vector<double> step_ms;
  std::vector<int> step_samples;

  const auto finish = [&](RunStatus status, std::string message) -> RunSummary {
    summary.status = status;
    summary.message = std::move(message);
    summary.wall_s = ms_between(run_start, Clock::now()) / 1000.0;
    summarize_step_times(step_ms, step_samples, config.warmup_steps, summary);
    sink.on_finish(summary);
    return summary;
  };

  std::unique_ptr<ModelExecutor> executor;
  const ExecutorOptions options = executor_options(config);
  const DeviceInfo device = backend.device();
  bool data_on_device = false;
  try {
    executor = backend.compile(spec, table, options);
    executor->set_loss_scaling(config.loss_scale);
    // A GPU keeps the training split when asked and it fits; the CPU's batches are in its
    // memory already.
    if (config.data_on_device && device.is_gpu()) {
      data_on_device = executor->upload_dataset(data.train.images, data.train.labels);
    }
  } catch (const AllocationError& e) {
    summary.failed_allocation_bytes = static_cast<std::int64_t>(e.bytes());
    return finish(RunStatus::failed, e.what());
  } catch (const std::bad_alloc&) {
    return finish(RunStatus::failed, "out of memory while preparing the model");
  } catch (const Error& e) {
    return finish(RunStatus::failed, e.what());
  }
  summary.peak_memory_bytes =
      std::max(executor->memory_plan().total(), executor->device_memory_bytes());

  const Dataset& train_set = data.train;
  const std::int64_t steps_per_epoch =
      (train_set.size() + config.batch_size - 1) / config.batch_size;
  const std::int64_t total_steps =
      config.steps > 0 ? config.steps : steps_per_epoch * config.epochs;
  const int epochs = static_cast<int>((total_steps + steps_per_epoch - 1) / steps_per_epoch);

  RunInfo info;
  info.model_name = spec.name;
  info.device = device;
  info.memory = executor->memory_plan();
  info.table = table;
  info.total_steps = total_steps;
  info.steps_per_epoch = steps_per_epoch;
  info.train_samples = train_set.size();
  info.test_samples = data.test.size();
  // How this device runs the policy, when there is something to say (emulated, no tensor cores).
  const PolicySupport support = policy_support(info.device, config.precision);
  if (!support.reason.empty()) info.notes.push_back(support.reason);
  if (config.data_on_device && device.is_gpu()) {
    info.notes.push_back(data_on_device ? "the training split is kept on the device"
                                        : "the training split does not fit on the device: "
                                          "batches are copied from the host");
  }
  if (config.initial_weights) {
    info.notes.push_back("starting weights from " + config.initial_weights->origin);
  }
  for (std::string& note : executor->notes()) info.notes.push_back(std::move(note));
  sink.on_start(info);

  const bool unscaled = config.loss_scale.mode == LossScaleConfig::Mode::none;
  summary.final_loss_scale = initial_loss_scale<double>(config.loss_scale).scale;
  // The step times are kept for the run's statistics: a step count whose times alone cannot be
  // held fails now, saying so, rather than running out of memory days later.
  {
    const auto per_step = static_cast<std::uint64_t>(sizeof(double) + sizeof(int));
    const std::uint64_t need = static_cast<std::uint64_t>(total_steps) * per_step;
    const MemoryBudget budget = memory_budget();
    if (budget.refuses(need)) {
      summary.failed_allocation_bytes = static_cast<std::int64_t>(need);
      return finish(RunStatus::failed,
                    std::to_string(total_steps) + " steps need " + format_memory(need) +
                        " to keep their step times; " + format_memory(budget.bytes) +
                        " are available (" + budget.source + "): run fewer steps");
    }
  }
  std::int64_t skipped_in_a_row = 0;

  try {
    step_ms.reserve(static_cast<std::size_t>(total_steps));
    step_samples.reserve(static_cast<std::size_t>(total_steps));
    BatchLoaderOptions loader_options;
    loader_options.batch_size = config.batch_size;
    loader_options.seed = config.seed;
    loader_options.epochs = epochs;
    loader_options.indices_only = data_on_device;
    BatchLoader loader(train_set, loader_options);
    Batch batch;
    // Fetches the next batch and hands it to the executor; returns the ms spent waiting.
    const auto load_next = [&]() -> double {
      const auto w0 = Clock::now();
      if (!loader.next(batch)) throw Error("the batch loader ended early");
      const double wait_ms = ms_between(w0, Clock::now());
      if (data_on_device) {
        executor->load_batch_indices(batch.indices, batch.size);
      } else {
        executor->load_batch(batch.images, batch.labels, batch.size);
      }
      return wait_ms;
    };
    bool batch_loaded = false;  // the next step's batch is already loaded
    std::int64_t step = 0;
    for (int epoch = 0; epoch < epochs; ++epoch) {
      const auto epoch_start = Clock::now();
      double loss_sum = 0.0, correct = 0.0, samples = 0.0;
      std::int64_t epoch_steps = 0, epoch_samples = 0;
      for (std::int64_t i = 0; i < steps_per_epoch && step < total_steps; ++i, ++step) {
        if (cancel.load(std::memory_order_relaxed)) {
          return finish(RunStatus::stopped, "stopped at step " + std::to_string(step));
        }
        const auto t0 = Clock::now();
        StepMetrics m;
        if (!batch_loaded) m.data_wait_ms += load_next();
        executor->launch_step(Phase::train, static_cast<std::uint64_t>(step));
        // While a device runs this step, the next one's batch (within the epoch, so that
        // evaluation's batches do not get in between) is fetched and its copy queued.
        batch_loaded = i + 1 < steps_per_epoch && step + 1 < total_steps;
        if (batch_loaded) m.data_wait_ms += load_next();
        const StepResult r = executor->finish_step();
        const BatchLoss& l = r.batch;
        const bool loss_finite = std::isfinite(l.loss);
        m.forward_ms = r.forward_ms;
        m.backward_ms = r.backward_ms;
        m.optimizer_ms = r.optimizer_ms;
        m.device_ms = r.device_ms;
        if (config.layer_timing) sink.on_layer_timings(step, executor->layer_timings());
        if (!r.overflows.empty()) sink.on_layer_overflows(step, r.overflows);
        if (!r.fp8.empty()) sink.on_fp8_tensors(step, r.fp8);
        const auto t_end = Clock::now();
        m.step = step;
        m.epoch = epoch;
        m.wall_offset_s = ms_between(run_start, t_end) / 1000.0;
        m.step_ms = ms_between(t0, t_end);
        m.loss = l.loss;
        m.accuracy = l.samples > 0 ? l.correct / l.samples : 0.0;
        m.loss_scale = r.loss_scale;
        m.skipped = !r.applied;
        m.samples = l.samples;
        step_ms.push_back(m.step_ms);
        step_samples.push_back(l.samples);
        summary.steps = step + 1;
        if (!r.applied) ++summary.skipped_steps;
        summary.final_loss_scale = r.next_loss_scale;
        sink.on_step(m);

        if (!loss_finite) {
          summary.diverged_at_step = step;
          return finish(
              RunStatus::diverged,
              "the loss became " + std::string(std::isnan(l.loss) ? "NaN" : "infinite") +
                  " at step " + std::to_string(step) +
                  (unscaled ? "" : " (in the forward pass: loss scaling cannot recover it)"));
        }
        skipped_in_a_row = r.applied ? 0 : skipped_in_a_row + 1;
        if (skipped_in_a_row >= kSkippedStepsToDiverge) {
          summary.diverged_at_step = step;
          const bool fixed = config.loss_scale.mode == LossScaleConfig::Mode::fixed;
          char scale[32];
          std::snprintf(scale, sizeof scale, "%g", r.loss_scale);
          return finish(RunStatus::diverged,
                        "the last " + std::to_string(kSkippedStepsToDiverge) +
                            " steps were all skipped: their gradients overflowed at loss scale " +
                            scale +
                            (fixed ? " (a static scale: lower it, or use dynamic loss scaling)"
                                   : " (the dynamic scale's floor: the gradients overflow "
                                     "unscaled)"));
        }
        if (!r.gradients_finite && unscaled) {
          // Without loss scaling nothing recovers from this: Keras would write NaN into the
          // weights.
          summary.diverged_at_step = step;
          return finish(RunStatus::diverged, "the gradients became NaN or infinite at step " +
                                                 std::to_string(step) + " (no loss scaling)");
        }
        loss_sum += l.loss * l.samples;
        correct += l.correct;
        samples += l.samples;
        ++epoch_steps;
        epoch_samples += l.samples;
      }
      const double epoch_s = ms_between(epoch_start, Clock::now()) / 1000.0;
      EpochMetrics em;
      em.epoch = epoch;
      em.steps = epoch_steps;
      em.train_loss = samples > 0 ? loss_sum / samples : kNotMeasured;
      em.train_accuracy = samples > 0 ? correct / samples : kNotMeasured;
      em.time_s = epoch_s;
      em.samples_per_s = epoch_s > 0 ? static_cast<double>(epoch_samples) / epoch_s : kNotMeasured;
      if (config.evaluate && data.test.size() > 0) {
        const Evaluation ev = evaluate(*executor, data.test, config, cancel);
        if (ev.cancelled) return finish(RunStatus::stopped, "stopped while evaluating");
        em.test_loss = ev.loss;
        em.test_accuracy = ev.accuracy;
      }
      summary.epochs_completed = epoch + 1;
      summary.final_loss = em.train_loss;
      summary.final_accuracy = em.train_accuracy;
      summary.test_loss = em.test_loss;
      summary.test_accuracy = em.test_accuracy;
      sink.on_epoch(em);
    }
  } catch (const AllocationError& e) {
    summary.failed_allocation_bytes = static_cast<std::int64_t>(e.bytes());
    return finish(RunStatus::failed, e.what());
  } catch (const std::bad_alloc&) {
    return finish(RunStatus::failed, "out of memory during the run");
  } catch (const std::exception& e) {
    return finish(RunStatus::failed, e.what());
  }
  return finish(RunStatus::finished, {});
}

}  // namespace mixlab
