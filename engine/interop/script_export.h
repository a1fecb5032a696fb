// Runnable Python scripts out of MixLab: a model spec and a run's settings become a Keras 3 or a
// PyTorch script that rebuilds the model, loads the same dataset the same way (raw 0..255 pixels
// as float32 HWC; the model rescales), trains for a number of steps with the same loss,
// optimizer, hyperparameters, batch size, seed and precision policy (a Keras dtype policy with
// its LossScaleOptimizer, or torch.autocast with a GradScaler), and prints ms/step as Keras does
// ("N/N - Xs Yms/step") and a final "median step ms: M" line, so that a user can set their
// framework's step times beside MixLab's. Qt-free; mixlab-cli's `export --to keras|pytorch`.
//
// What a script cannot reproduce is said in its comments: the starting weights (the same
// glorot-uniform / zero distributions, not the same draws), the shuffling order, MixLab's
// synthetic generator (random data of the same shape instead).
#pragma once

#include <cstdint>
#include <string>

#include "engine/spec/model_spec.h"
#include "engine/train/run_types.h"

namespace mixlab {

enum class ScriptKind : std::uint8_t { keras, pytorch };

struct ScriptOptions {
  std::int64_t steps = 100;  // training steps the script runs (> 0)
};

// A runnable Python script that rebuilds `spec` and `config`'s settings (policy, loss scaling,
// optimizer and its hyperparameters, batch size, seed, dataset) and prints ms/step.
// Throws SpecError for a spec that does not validate, ConfigError for options.steps < 1.
std::string export_script(ScriptKind kind, const ModelSpec& spec, const RunConfig& config,
                          const ScriptOptions& options);

}  // namespace mixlab
