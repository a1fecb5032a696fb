// BatchNormalization's per-channel math, written once for the CPU and CUDA (Keras 3's
// layers/normalization/batch_normalization.py on TensorFlow's tf.nn.batch_normalization), all in
// float32 whatever the tensors' dtype, as Keras computes it under the mixed policies:
//   training:   mean, variance = the batch's (biased) moments over every axis but the last;
//               moving = moving * momentum + batch * (1 - momentum)
//   inference:  mean, variance = the moving ones
//   y = x * a + b, a = gamma / sqrt(variance + epsilon), b = beta - mean * a
// Backward (training: through the batch's statistics), with xhat = (x - mean) / sqrt(var + eps)
// over the m rows of real samples:
//   dgamma = sum(dy * xhat), dbeta = sum(dy),
//   dx = gamma / sqrt(var + eps) / m * (m * dy - dbeta - xhat * dgamma).
#pragma once

#include <cmath>

#include "engine/core/hd.h"

namespace mixlab {

struct BatchNormArgs {
  float momentum = 0.99f;
  float epsilon = 1e-3f;
  bool has_gamma = true;  // Keras's scale
  bool has_beta = true;   // Keras's center
};

// The affine transform y = x * a + b of one channel, and its 1/sqrt(var + eps).
struct ChannelAffine {
  float a = 1.0f;
  float b = 0.0f;
  float inv_std = 1.0f;
};

MIXLAB_HD ChannelAffine channel_affine(float mean, float variance, float gamma, float beta,
                                       float epsilon) {
  ChannelAffine t;
  t.inv_std = 1.0f / sqrtf(variance + epsilon);
  t.a = t.inv_std * gamma;
  t.b = beta - mean * t.a;
  return t;
}

MIXLAB_HD float moving_update(float moving, float batch, float momentum) {
  return moving * momentum + batch * (1.0f - momentum);
}

// dx of one element from the channel's sums (dbeta = sum dy, dgamma = sum dy * xhat).
MIXLAB_HD float batch_norm_dx(float dy, float xhat, float gamma_inv_std, float rows, float dbeta,
                              float dgamma) {
  return gamma_inv_std / rows * (rows * dy - dbeta - xhat * dgamma);
}

}  // namespace mixlab
