#include "engine/train/loss_scaler.h"

#include "engine/ops/loss_scale.h"

#include <charconv>
#include <cmath>
#include <string>

namespace mixlab {

LossScaleConfig LossScaleConfig::fixed(double factor) {
  LossScaleConfig c;
  c.mode = Mode::fixed;
  c.initial_scale = factor;
  return c;
}

LossScaleConfig LossScaleConfig::dynamic() {
  LossScaleConfig c;
  c.mode = Mode::dynamic;
  return c;
}

LossScaleConfig LossScaleConfig::keras_default(Policy policy) {
  return policy == Policy::mixed_float16 ? dynamic() : none();
}

std::string LossScaleConfig::to_string() const {
  switch (mode) {
    case Mode::none:
      return "none";
    case Mode::dynamic:
      if (initial_scale == 32768.0) return "dynamic";
      break;
    case Mode::fixed:
      break;
  }
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, initial_scale);  // shortest exact
  (void)ec;
  return (mode == Mode::dynamic ? "dynamic:" : "") + std::string(buf, end);
}

std::optional<LossScaleConfig> parse_loss_scale(std::string_view text) {
  if (text == "none") return LossScaleConfig::none();
  if (text == "dynamic") return LossScaleConfig::dynamic();
  if (text.rfind("dynamic:", 0) == 0) {  // dynamic with another initial scale
    auto initial = parse_loss_scale(text.substr(8));
    if (!initial || initial->mode != LossScaleConfig::Mode::fixed) return std::nullopt;
    LossScaleConfig c = LossScaleConfig::dynamic();
    c.initial_scale = initial->initial_scale;
    return c;
  }
  double value = 0.0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value) || value <= 0.0) {
    return std::nullopt;
  }
  return LossScaleConfig::fixed(value);
}

LossScaler::LossScaler(const LossScaleConfig& config)
    : config_(config),
      scale_(config.mode == LossScaleConfig::Mode::none ? 1.0 : config.initial_scale) {}

bool LossScaler::update(bool gradients_finite) {
  LossScaleState<double> state{scale_, good_steps_};
  LossScaleRule<double> rule;
  rule.dynamic = config_.mode == LossScaleConfig::Mode::dynamic;
  rule.growth_interval = config_.growth_interval;
  rule.growth_factor = config_.growth_factor;
  rule.backoff_factor = config_.backoff_factor;
  rule.min_scale = config_.min_scale;
  const bool applied = update_loss_scale(state, rule, gradients_finite);
  scale_ = state.scale;
  good_steps_ = state.good_steps;
  return applied;
}

}  // namespace mixlab
