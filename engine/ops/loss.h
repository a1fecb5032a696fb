// Losses and accuracy per sample (one row of the model's output), in float32, written once for
// the CPU and CUDA. Keras's semantics:
// - after a final softmax, (sparse_)categorical_crossentropy is computed from the logits z
//   (log-softmax), as TensorFlow does; the gradient w.r.t. z is p - t;
// - after a final sigmoid, binary_crossentropy is computed from the logits, stably;
// - otherwise the outputs are taken as probabilities (from_logits=False): categorical
//   crossentropy normalises the row to sum 1 and clips to [eps, 1 - eps], binary crossentropy
//   clips; the gradient is zero where a value was clipped.
// Each function returns the row's loss and how many of its predictions were right (sparse and
// categorical: 0 or 1 for argmax; binary: the fraction of outputs on the right side of 0.5), and
// writes the gradient of `grad_mul * loss` w.r.t. its input row. The gradient row may be the
// input row itself (the CUDA loss kernel computes in place in its float32 staging buffer).
#pragma once

#include <cmath>

#include "engine/core/hd.h"

namespace mixlab {

inline constexpr float kKerasEpsilon = 1e-7f;

struct RowLoss {
  float loss = 0.0f;
  float correct = 0.0f;
};

MIXLAB_HD int argmax_row(const float* y, int k) {
  int best = 0;
  for (int j = 1; j < k; ++j) {
    if (y[j] > y[best]) best = j;
  }
  return best;
}

// target: one-hot row for categorical, nullptr for sparse (then `label` is used).
MIXLAB_HD RowLoss softmax_crossentropy_row(const float* z, int k, int label, float grad_mul,
                                           float* dz) {
  float zmax = z[0];
  for (int j = 1; j < k; ++j) zmax = z[j] > zmax ? z[j] : zmax;
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) sum += expf(z[j] - zmax);
  const float log_sum = logf(sum);
  RowLoss r;
  r.loss = log_sum + zmax - z[label];
  r.correct = argmax_row(z, k) == label ? 1.0f : 0.0f;
  if (dz) {
    for (int j = 0; j < k; ++j) {
      const float p = expf(z[j] - zmax - log_sum);
      dz[j] = grad_mul * (p - (j == label ? 1.0f : 0.0f));
    }
  }
  return r;
}

MIXLAB_HD RowLoss sigmoid_binary_crossentropy_row(const float* z, int k, int label, float grad_mul,
                                                  float* dz) {
  // Targets: k == 1: t = label; k > 1: t_j = (j == label), multi-hot from the class label.
  RowLoss r;
  for (int j = 0; j < k; ++j) {
    const float t = k == 1 ? static_cast<float>(label) : (j == label ? 1.0f : 0.0f);
    const float x = z[j];
    // max(x, 0) - x t + log(1 + exp(-|x|))
    r.loss += (x > 0.0f ? x : 0.0f) - x * t + log1pf(expf(-fabsf(x)));
    const float p = x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
    r.correct += ((p > 0.5f) == (t > 0.5f)) ? 1.0f : 0.0f;
    if (dz) dz[j] = grad_mul * (p - t) / static_cast<float>(k);
  }
  r.loss /= static_cast<float>(k);
  r.correct /= static_cast<float>(k);
  return r;
}

MIXLAB_HD RowLoss crossentropy_probabilities_row(const float* y, int k, int label, float grad_mul,
                                                 float* dy) {
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) sum += y[j];
  RowLoss r;
  r.correct = argmax_row(y, k) == label ? 1.0f : 0.0f;
  const float p = sum > 0.0f ? y[label] / sum : 0.0f;
  const bool clipped = !(p > kKerasEpsilon && p < 1.0f - kKerasEpsilon);
  const float pc =
      p < kKerasEpsilon ? kKerasEpsilon : (p > 1.0f - kKerasEpsilon ? 1.0f - kKerasEpsilon : p);
  r.loss = -logf(pc);
  if (dy) {
    // d(-log(y_l / S)) / dy_j = 1/S - [j == l] / y_l (y_l read before dy may overwrite it)
    const float inv_label = 1.0f / y[label];
    for (int j = 0; j < k; ++j) {
      dy[j] = clipped ? 0.0f : grad_mul * (1.0f / sum - (j == label ? inv_label : 0.0f));
    }
  }
  return r;
}

MIXLAB_HD RowLoss binary_crossentropy_probabilities_row(const float* y, int k, int label,
                                                        float grad_mul, float* dy) {
  RowLoss r;
  for (int j = 0; j < k; ++j) {
    const float t = k == 1 ? static_cast<float>(label) : (j == label ? 1.0f : 0.0f);
    const float p = y[j];
    const bool clipped = !(p > kKerasEpsilon && p < 1.0f - kKerasEpsilon);
    const float pc =
        p < kKerasEpsilon ? kKerasEpsilon : (p > 1.0f - kKerasEpsilon ? 1.0f - kKerasEpsilon : p);
    r.loss += -(t * logf(pc) + (1.0f - t) * logf(1.0f - pc));
    r.correct += ((p > 0.5f) == (t > 0.5f)) ? 1.0f : 0.0f;
    if (dy)
      dy[j] = clipped ? 0.0f : grad_mul * (pc - t) / (pc * (1.0f - pc)) / static_cast<float>(k);
  }
  r.loss /= static_cast<float>(k);
  r.correct /= static_cast<float>(k);
  return r;
}

// How the loss meets the model's output (the execution plan decides it; both backends follow).
enum class LossHead : unsigned char {
  softmax_crossentropy,        // logits of a final softmax, (sparse_)categorical crossentropy
  sigmoid_binary,              // logits of a final sigmoid, binary crossentropy
  crossentropy_probabilities,  // the output as probabilities, (sparse_)categorical crossentropy
  binary_probabilities,        // the output as probabilities, binary crossentropy
};

// One row's loss under a head: the CPU loop and the CUDA loss kernel call this.
MIXLAB_HD RowLoss loss_row(LossHead head, const float* row, int k, int label, float grad_mul,
                           float* d_row) {
  switch (head) {
    case LossHead::softmax_crossentropy:
      return softmax_crossentropy_row(row, k, label, grad_mul, d_row);
    case LossHead::sigmoid_binary:
      return sigmoid_binary_crossentropy_row(row, k, label, grad_mul, d_row);
    case LossHead::binary_probabilities:
      return binary_crossentropy_probabilities_row(row, k, label, grad_mul, d_row);
    case LossHead::crossentropy_probabilities:
      break;
  }
  return crossentropy_probabilities_row(row, k, label, grad_mul, d_row);
}

// Softmax of one row and its backward (for a softmax that is not fused with the loss).
MIXLAB_HD void softmax_row(const float* x, int k, float* y) {
  float m = x[0];
  for (int j = 1; j < k; ++j) m = x[j] > m ? x[j] : m;
  float sum = 0.0f;
  for (int j = 0; j < k; ++j) {
    y[j] = expf(x[j] - m);
    sum += y[j];
  }
  for (int j = 0; j < k; ++j) y[j] /= sum;
}

MIXLAB_HD void softmax_backward_row(const float* y, const float* dy, int k, float* dx) {
  float dot = 0.0f;
  for (int j = 0; j < k; ++j) dot += dy[j] * y[j];
  for (int j = 0; j < k; ++j) dx[j] = y[j] * (dy[j] - dot);
}

}  // namespace mixlab
