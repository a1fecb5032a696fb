// Scaled dot-product attention of one head, as both backends compute it (MultiHeadAttention's
// core; engine/plan/execution_plan.h's PlanOp::attention): the scores' softmax in float32 after
// the scale and the causal mask, as Keras 3's ops.dot_product_attention computes it.
#pragma once

#include <cmath>

#include "engine/core/hd.h"

namespace mixlab {

// Keras's (and JAX's, TensorFlow's) value for a masked score in float32: exp() of it is 0.
inline constexpr float kMaskedScore = -1e9f;

// Whether query step i may attend to key step j.
MIXLAB_HD bool attends(bool causal, int i, int j) {
  return !causal || j <= i;
}

// In place: the row's scores (unscaled, as the layer's dtype rounded them) become the softmax of
// scale * score over the steps it attends to (the others 0).
MIXLAB_HD void attention_softmax_row(float* row, int steps, int i, float scale, bool causal) {
  float m = kMaskedScore;
  for (int j = 0; j < steps; ++j) {
    row[j] = attends(causal, i, j) ? row[j] * scale : kMaskedScore;
    m = row[j] > m ? row[j] : m;
  }
  float sum = 0.0f;
  for (int j = 0; j < steps; ++j) {
    row[j] = expf(row[j] - m);
    sum += row[j];
  }
  for (int j = 0; j < steps; ++j) row[j] /= sum;
}

}  // namespace mixlab
