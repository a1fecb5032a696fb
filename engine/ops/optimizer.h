// Optimizer settings and their update rules, written once for the CPU and CUDA. Keras's
// semantics and defaults: SGD(learning_rate=0.01, momentum=0, nesterov=False) and
// Adam(learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7). The state is float32 and
// so are the master weights; `grad_scale` multiplies the raw gradient first (1 / loss scale).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/core/hd.h"

namespace mixlab {

enum class OptimizerKind : std::uint8_t { sgd, adam };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adam;
  double learning_rate = 0.001;
  double momentum = 0.0;  // SGD
  bool nesterov = false;  // SGD
  double beta_1 = 0.9;    // Adam
  double beta_2 = 0.999;  // Adam
  double epsilon = 1e-7;  // Adam
};

// Keras's defaults for the optimizer kind.
OptimizerConfig default_optimizer(OptimizerKind kind);
std::string_view to_string(OptimizerKind kind);
std::optional<OptimizerKind> parse_optimizer(std::string_view name);
// State floats kept per parameter: SGD with momentum 1 (velocity), without 0; Adam 2 (m, v).
int optimizer_state_per_param(const OptimizerConfig& config);

// SGD, Keras's form: velocity = momentum * velocity - lr * g;
// w += velocity (or, Nesterov, w += momentum * velocity - lr * g). Without momentum: w -= lr * g.
struct SgdUpdate {
  float lr = 0.01f;
  float momentum = 0.0f;
  bool nesterov = false;
  float grad_scale = 1.0f;

  MIXLAB_HD void operator()(float& w, float g) const { w -= lr * (g * grad_scale); }
  MIXLAB_HD void operator()(float& w, float& velocity, float g) const {
    g *= grad_scale;
    velocity = momentum * velocity - lr * g;
    w += nesterov ? momentum * velocity - lr * g : velocity;
  }
};

// Adam, Keras's form, at (1-based) iteration t:
// lr_t = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t); m += (g - m)(1 - beta_1);
// v += (g^2 - v)(1 - beta_2); w -= lr_t * m / (sqrt(v) + epsilon).
struct AdamUpdate {
  float lr_t = 0.001f;
  float one_minus_beta_1 = 0.1f;
  float one_minus_beta_2 = 0.001f;
  float epsilon = 1e-7f;
  float grad_scale = 1.0f;

  MIXLAB_HD void operator()(float& w, float& m, float& v, float g) const {
    g *= grad_scale;
    m += (g - m) * one_minus_beta_1;
    v += (g * g - v) * one_minus_beta_2;
    w -= lr_t * m / (sqrtf(v) + epsilon);
  }
};

// Adam's bias-corrected learning rate at (1-based) iteration t, Keras's
// lr * sqrt(1 - beta_2^t) / (1 - beta_1^t), computed in double and rounded once to float32.
// Shared by make_adam_update (host) and the CUDA step's loss-scale kernel (device).
MIXLAB_HD float adam_learning_rate(double learning_rate, double beta_1, double beta_2,
                                   std::int64_t iteration) {
  const double t = static_cast<double>(iteration);
  return static_cast<float>(learning_rate * sqrt(1.0 - pow(beta_2, t)) / (1.0 - pow(beta_1, t)));
}

SgdUpdate make_sgd_update(const OptimizerConfig& config, float grad_scale);
// `iteration` counts applied (not skipped) updates from 1.
AdamUpdate make_adam_update(const OptimizerConfig& config, std::int64_t iteration,
                            float grad_scale);

}  // namespace mixlab
