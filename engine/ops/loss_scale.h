// Loss scaling, one type for every side: LossScaleConfig says what a run asks for (Keras's
// LossScaleOptimizer semantics), LossScaleState is where a run is, and update_loss_scale() is the
// state machine, written once for the CPU executor (double) and the CUDA device step (float, in
// device memory): both take the same steps, and with power-of-two factors their scales are the
// same numbers.
// - dynamic: initial scale 2^15; x2 after 2000 consecutive steps with finite gradients; x0.5 on
//   a non-finite gradient, whose update is skipped; never below 1;
// - fixed: one factor; a non-finite gradient still skips the update;
// - none: scale 1; a non-finite gradient skips the update too (the trainer then reports
//   divergence).
#pragma once

#include <cstdint>

#include <optional>
#include <string>
#include <string_view>

#include "engine/core/hd.h"
#include "engine/core/precision.h"

namespace mixlab {

// Trivially copyable: the CUDA step takes it by value.
// A run whose last this-many steps were all skipped for overflowing gradients ends `diverged`:
// no update is reaching the weights (a static scale far too large, or gradients that overflow
// even at the dynamic scale's floor). Keras would go on skipping for ever; 50 leaves a dynamic
// scale room to back off from 2^15 to 1 (15 steps) three times over.
inline constexpr int kSkippedStepsToDiverge = 50;

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

template <class Real>
struct LossScaleState {
  Real scale = 1;
  std::int64_t good_steps = 0;  // consecutive finite steps since the last change
};

template <class Real>
MIXLAB_HD LossScaleState<Real> initial_loss_scale(const LossScaleConfig& config) {
  LossScaleState<Real> state;
  state.scale = config.mode == LossScaleConfig::Mode::none ? Real(1) : Real(config.initial_scale);
  return state;
}

// Records one step's overflow check; returns whether its update is applied. Dynamic: x backoff
// (not below min_scale) on a non-finite gradient, x growth after growth_interval finite steps in
// a row. Fixed or none: the scale stays; a non-finite gradient still skips the update.
template <class Real>
MIXLAB_HD bool update_loss_scale(LossScaleState<Real>& state, const LossScaleConfig& config,
                                 bool gradients_finite) {
  if (config.mode != LossScaleConfig::Mode::dynamic) return gradients_finite;
  if (!gradients_finite) {
    const Real backed_off = state.scale * Real(config.backoff_factor);
    const Real floor = Real(config.min_scale);
    state.scale = backed_off < floor ? floor : backed_off;
    state.good_steps = 0;
    return false;
  }
  if (++state.good_steps >= config.growth_interval) {
    state.scale *= Real(config.growth_factor);
    state.good_steps = 0;
  }
  return true;
}

}  // namespace mixlab
