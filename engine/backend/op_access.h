// Op-level access to an executor, for tests only: a model (usually one layer) run forward and
// backward by hand with a chosen output gradient, and its activations, parameters and gradients
// read and written as float32 in Keras's layouts. The CUDA backend's ops are checked against the
// CPU's through it. Training never uses it: ModelExecutor's step protocol is the one path.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/backend/backend.h"

namespace mixlab {

class OpAccess {
 public:
  virtual ~OpAccess() = default;

  // Forward over the batch loaded last (ModelExecutor::load_batch).
  virtual void forward(Phase phase, std::uint64_t step) = 0;
  // Seeds backward with dLoss/dOutput, (batch, output shape), instead of a loss.
  virtual void set_output_gradient(std::span<const float> dy) = 0;
  virtual void backward() = 0;

  virtual std::vector<float> read_output() = 0;               // (batch, output shape)
  // Layer i's output; ConfigError where the backend does not keep it (ExecutionPlan::layer_fused).
  virtual std::vector<float> read_activation(int layer) = 0;
  // (batch, input shape); needs ExecutorOptions::input_gradient.
  virtual std::vector<float> read_input_gradient() = 0;
  virtual std::vector<float> read_parameter(int layer, ParamKind kind) = 0;
  virtual void write_parameter(int layer, ParamKind kind, std::span<const float> values) = 0;
  virtual std::vector<float> read_gradient(int layer, ParamKind kind) = 0;
};

}  // namespace mixlab
