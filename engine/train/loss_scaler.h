// Loss scaling with Keras's LossScaleOptimizer semantics:
// - dynamic: initial scale 2^15; x2 after 2000 consecutive steps with finite gradients; x0.5 on a
//   non-finite gradient, whose update is skipped; never below 1;
// - static: one factor; a non-finite gradient still skips the update;
// - none: scale 1; a non-finite gradient skips the update too (the trainer then reports
//   divergence if the loss itself is not finite).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/core/precision.h"

namespace mixlab {

struct LossScaleConfig {
  enum class Mode : std::uint8_t { none, fixed, dynamic };
  Mode mode = Mode::none;
  double initial_scale = 32768.0;  // dynamic: 2^15; fixed: the factor
  std::int64_t growth_interval = 2000;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  double min_scale = 1.0;

  static LossScaleConfig none() { return {}; }
  static LossScaleConfig fixed(double factor);
  static LossScaleConfig dynamic();
  // What Keras does when nothing is said: a dynamic LossScaleOptimizer under mixed_float16 only
  // (bfloat16 has float32's range), no scaling otherwise.
  static LossScaleConfig keras_default(Policy policy);
  std::string to_string() const;  // "none", "dynamic", "dynamic:65536", or the factor
};

// Parses "none", "dynamic", "dynamic:INITIAL" or a positive number (a static scale); nullopt
// otherwise.
std::optional<LossScaleConfig> parse_loss_scale(std::string_view text);

class LossScaler {
 public:
  explicit LossScaler(const LossScaleConfig& config);

  double scale() const { return scale_; }
  // Records one step's overflow check; returns whether its update is applied.
  bool update(bool gradients_finite);
  std::int64_t good_steps() const { return good_steps_; }

 private:
  LossScaleConfig config_;
  double scale_;
  std::int64_t good_steps_ = 0;
};

}  // namespace mixlab
