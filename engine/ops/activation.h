// Elementwise activations, forward and backward, written once for the CPU and CUDA.
// Backward takes the layer's input x, its output y and the incoming gradient dy; each function
// uses what it needs (activation_backward_needs_input: gelu, silu and hard_silu use x, the
// others y). Keras 3's definitions (keras/src/activations, keras/src/layers/activations/relu.py).
#pragma once

#include <cmath>
#include <type_traits>

#include "engine/core/hd.h"
#include "engine/ops/fast_math.h"
#include "engine/spec/model_spec.h"

namespace mixlab {

// Keras's default gelu (approximate=False). On the CPU erf and exp are engine/ops/fast_math.h's,
// whose loops vectorise (TensorFlow's and JAX's CPU erf is the same rational approximation).
MIXLAB_HD float gelu_erf(float x) {
#ifdef __CUDA_ARCH__
  return erff(x);
#else
  return erf_rational(x);
#endif
}

MIXLAB_HD float gelu_forward(float x) {
  return 0.5f * x * (1.0f + gelu_erf(x * 0.70710678118654752f));
}

MIXLAB_HD float gelu_backward(float x, float dy) {
  const float cdf = 0.5f * (1.0f + gelu_erf(x * 0.70710678118654752f));
#ifdef __CUDA_ARCH__
  const float density = expf(-0.5f * x * x);
#else
  const float density = exp_nonpositive(-0.5f * x * x);
#endif
  const float pdf = 0.39894228040143268f * density;
  return dy * (cdf + x * pdf);
}

MIXLAB_HD float sigmoid_forward(float x) {
  return x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
}

MIXLAB_HD float silu_backward(float x, float dy) {
  const float s = sigmoid_forward(x);
  return dy * s * (1.0f + x * (1.0f - s));
}

// Keras's ReLU layer (and the relu activation at its defaults): x above the threshold, clipped
// at max_value; negative_slope * (x - threshold) at or below it. Keras requires max_value,
// negative_slope and threshold >= 0, so the output is positive exactly where the gradient is 1
// (below max_value) and negative exactly where it is negative_slope: backward reads only y.
struct ReluArgs {
  float negative_slope = 0.0f;
  float max_value = INFINITY;  // none
  float threshold = 0.0f;
  friend bool operator==(const ReluArgs&, const ReluArgs&) = default;
};

// Written as selects of values computed up front, without early returns: the loops vectorise
// (a data-dependent branch per element, mispredicted half the time on a ReLU's inputs, made the
// CPU's ReLU 8x slower).
MIXLAB_HD float relu_forward(float x, const ReluArgs& a) {
  const float clipped = x > a.max_value ? a.max_value : x;  // NaN stays NaN, as in TensorFlow
  const float below = a.negative_slope * (x - a.threshold);
  const float low = x != x ? x : (a.negative_slope == 0.0f ? 0.0f : below);  // +0 for relu
  return x > a.threshold ? clipped : low;
}

// dy times the slope (1, negative_slope or 0), as TensorFlow's ReluGrad multiplies by its mask:
// a select of constants, which the loops vectorise where a select of products stays a branch.
MIXLAB_HD float relu_backward(float y, float dy, const ReluArgs& a) {
  const float below = y < 0.0f ? a.negative_slope : 0.0f;
  const float slope = ((y > 0.0f) & (y < a.max_value)) ? 1.0f : below;
  return dy * slope;
}

// The ReluArgs of the named relu-family activations.
MIXLAB_HD ReluArgs relu_args_of(ActivationFn fn) {
  ReluArgs a;
  if (fn == ActivationFn::relu6) a.max_value = 6.0f;
  if (fn == ActivationFn::leaky_relu) a.negative_slope = 0.2f;  // Keras 3's default
  return a;
}

// Elementwise activations only (softmax works on rows: see softmax.h). `relu` (an activation
// node of Keras's ReLU layer) applies its arguments; the named functions their own.
MIXLAB_HD float activation_forward(ActivationFn fn, float x, const ReluArgs& relu = {}) {
  switch (fn) {
    case ActivationFn::relu:
      return relu_forward(x, relu);
    case ActivationFn::relu6:
    case ActivationFn::leaky_relu:
      return relu_forward(x, relu_args_of(fn));
    case ActivationFn::silu:
      return x * sigmoid_forward(x);
    case ActivationFn::hard_sigmoid:  // relu6(x + 3) / 6
      return fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
    case ActivationFn::hard_silu:
      return x * (fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f));
    case ActivationFn::elu:  // alpha = 1
      return x > 0.0f ? x : expm1f(x);
    case ActivationFn::sigmoid:
      return sigmoid_forward(x);
    case ActivationFn::tanh:
      return tanhf(x);
    case ActivationFn::gelu:
      return gelu_forward(x);
    case ActivationFn::linear:
    case ActivationFn::softmax:
      return x;
  }
  return x;
}

MIXLAB_HD float activation_backward(ActivationFn fn, float x, float y, float dy,
                                    const ReluArgs& relu = {}) {
  switch (fn) {
    case ActivationFn::relu:
      return relu_backward(y, dy, relu);
    case ActivationFn::relu6:
    case ActivationFn::leaky_relu:
      return relu_backward(y, dy, relu_args_of(fn));
    case ActivationFn::silu:
      return silu_backward(x, dy);
    case ActivationFn::hard_sigmoid:
      return y > 0.0f && y < 1.0f ? dy * (1.0f / 6.0f) : 0.0f;
    case ActivationFn::hard_silu:
      return x < -3.0f ? 0.0f : (x > 3.0f ? dy : dy * (2.0f * x + 3.0f) * (1.0f / 6.0f));
    case ActivationFn::elu:
      return y > 0.0f ? dy : dy * (y + 1.0f);
    case ActivationFn::sigmoid:
      return dy * y * (1.0f - y);
    case ActivationFn::tanh:
      return dy * (1.0f - y * y);
    case ActivationFn::gelu:
      return gelu_backward(x, dy);
    case ActivationFn::linear:
    case ActivationFn::softmax:
      return dy;
  }
  return dy;
}

// True when backward needs the layer's input (else the output suffices).
MIXLAB_HD constexpr bool activation_backward_needs_input(ActivationFn fn) {
  return fn == ActivationFn::gelu || fn == ActivationFn::silu || fn == ActivationFn::hard_silu;
}

// Host-side dispatch for the CPU loops and the CUDA launchers: calls
// f(std::integral_constant<ActivationFn, fn>{}) so that the activation is a compile-time
// constant inside the loop or kernel. Softmax is row-wise, not elementwise: it is dispatched as
// linear (the identity), which its callers handle separately.
template <class F>
void with_elementwise_activation(ActivationFn fn, F&& f) {
  using A = ActivationFn;
  switch (fn) {
    case A::relu:
      f(std::integral_constant<A, A::relu>{});
      return;
    case A::sigmoid:
      f(std::integral_constant<A, A::sigmoid>{});
      return;
    case A::tanh:
      f(std::integral_constant<A, A::tanh>{});
      return;
    case A::gelu:
      f(std::integral_constant<A, A::gelu>{});
      return;
    case A::silu:
      f(std::integral_constant<A, A::silu>{});
      return;
    case A::hard_sigmoid:
      f(std::integral_constant<A, A::hard_sigmoid>{});
      return;
    case A::hard_silu:
      f(std::integral_constant<A, A::hard_silu>{});
      return;
    case A::elu:
      f(std::integral_constant<A, A::elu>{});
      return;
    case A::relu6:
      f(std::integral_constant<A, A::relu6>{});
      return;
    case A::leaky_relu:
      f(std::integral_constant<A, A::leaky_relu>{});
      return;
    case A::linear:
    case A::softmax:
      f(std::integral_constant<A, A::linear>{});
      return;
  }
}

}  // namespace mixlab
