// The trainer: runs a model spec on a backend over a dataset, step by step, timing each part,
// applying loss scaling and the optimizer, evaluating after each epoch, and handing every figure
// to a RunSink. Qt-free; the GUI runs it on a worker thread, mixlab-cli on its main thread.
#pragma once

#include <atomic>

#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/spec/model_spec.h"
#include "engine/spec/shape_inference.h"
#include "engine/train/run_types.h"

namespace mixlab {

// Checks that a run can start: the spec (SpecError), the configuration and that the model fits
// the dataset (ConfigError, naming both shapes). Returns the shape table under the run's policy.
ShapeTable validate_run(const ModelSpec& spec, const RunConfig& config, const DatasetPair& data);

// What a run's settings ask of the executor a backend compiles for it (trainer and predict).
ExecutorOptions executor_options(const RunConfig& config);

// Runs one training run to its end. Never throws for what happens during the run: a failed
// allocation, a library error or a non-finite loss end it with that status and a message.
// `cancel` is checked between steps: the run stops within one step as `stopped`.
// Throws only what validate_run() throws, before anything runs.
RunSummary train(const ModelSpec& spec, const RunConfig& config, const DatasetPair& data,
                 Backend& backend, RunSink& sink, const std::atomic<bool>& cancel);

}  // namespace mixlab
