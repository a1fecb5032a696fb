#include "engine/ops/optimizer.h"

namespace mixlab {

OptimizerConfig default_optimizer(OptimizerKind kind) {
  OptimizerConfig config;
  config.kind = kind;
  config.learning_rate = kind == OptimizerKind::sgd ? 0.01 : 0.001;
  return config;
}

std::string_view to_string(OptimizerKind kind) {
  return kind == OptimizerKind::sgd ? "sgd" : "adam";
}

std::optional<OptimizerKind> parse_optimizer(std::string_view name) {
  if (name == "sgd" || name == "SGD") return OptimizerKind::sgd;
  if (name == "adam" || name == "Adam") return OptimizerKind::adam;
  return std::nullopt;
}

int optimizer_state_per_param(const OptimizerConfig& config) {
  if (config.kind == OptimizerKind::adam) return 2;
  return config.momentum != 0.0 ? 1 : 0;
}

SgdUpdate make_sgd_update(const OptimizerConfig& config, float grad_scale) {
  SgdUpdate u;
  u.lr = static_cast<float>(config.learning_rate);
  u.momentum = static_cast<float>(config.momentum);
  u.nesterov = config.nesterov;
  u.grad_scale = grad_scale;
  return u;
}

AdamUpdate make_adam_update(const OptimizerConfig& config, std::int64_t iteration,
                            float grad_scale) {
  AdamUpdate u;
  u.lr_t = adam_learning_rate(config.learning_rate, config.beta_1, config.beta_2, iteration);
  u.one_minus_beta_1 = static_cast<float>(1.0 - config.beta_1);
  u.one_minus_beta_2 = static_cast<float>(1.0 - config.beta_2);
  u.epsilon = static_cast<float>(config.epsilon);
  u.grad_scale = grad_scale;
  return u;
}

}  // namespace mixlab
