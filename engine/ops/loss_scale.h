// The dynamic loss-scale state machine (Keras's LossScaleOptimizer), written once for the host's
// LossScaler (double) and the CUDA device step (float, in device memory): both take the same
// steps, and with power-of-two factors their scales are the same numbers.
#pragma once

#include <cstdint>

#include "engine/core/hd.h"

namespace mixlab {

template <class Real>
struct LossScaleState {
  Real scale = 1;
  std::int64_t good_steps = 0;  // consecutive finite steps since the last change
};

template <class Real>
struct LossScaleRule {
  bool dynamic = false;
  std::int64_t growth_interval = 2000;
  Real growth_factor = 2;
  Real backoff_factor = 0.5;
  Real min_scale = 1;
};

// Records one step's overflow check; returns whether its update is applied. Dynamic: x backoff
// (not below min_scale) on a non-finite gradient, x growth after growth_interval finite steps in
// a row. Fixed or none: the scale stays; a non-finite gradient still skips the update.
template <class Real>
MIXLAB_HD bool update_loss_scale(LossScaleState<Real>& state, const LossScaleRule<Real>& rule,
                                 bool gradients_finite) {
  if (!rule.dynamic) return gradients_finite;
  if (!gradients_finite) {
    const Real backed_off = state.scale * rule.backoff_factor;
    state.scale = backed_off < rule.min_scale ? rule.min_scale : backed_off;
    state.good_steps = 0;
    return false;
  }
  if (++state.good_steps >= rule.growth_interval) {
    state.scale *= rule.growth_factor;
    state.good_steps = 0;
  }
  return true;
}

}  // namespace mixlab
