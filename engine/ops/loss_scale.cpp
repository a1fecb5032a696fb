#include "engine/ops/loss_scale.h"

#include <charconv>
#include <cmath>

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

}  // namespace mixlab
