// Elementwise activations, forward and backward, written once for the CPU and CUDA.
// Backward takes the layer's input x, its output y and the incoming gradient dy; each function
// uses what it needs (relu, sigmoid and tanh use y; gelu uses x).
#pragma once

#include <cmath>
#include <type_traits>

#include "engine/core/hd.h"
#include "engine/spec/model_spec.h"

namespace mixlab {

MIXLAB_HD float gelu_forward(float x) {  // Keras's default gelu (approximate=False)
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

MIXLAB_HD float gelu_backward(float x, float dy) {
  const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
  return dy * (cdf + x * pdf);
}

MIXLAB_HD float sigmoid_forward(float x) {
  return x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
}

// Elementwise activations only (softmax works on rows: see softmax.h).
MIXLAB_HD float activation_forward(ActivationFn fn, float x) {
  switch (fn) {
    case ActivationFn::relu:
      return x < 0.0f ? 0.0f : x;  // NaN stays NaN, as in TensorFlow
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

MIXLAB_HD float activation_backward(ActivationFn fn, float x, float y, float dy) {
  switch (fn) {
    case ActivationFn::relu:
      return y > 0.0f ? dy : 0.0f;
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
MIXLAB_HD bool activation_backward_needs_input(ActivationFn fn) {
  return fn == ActivationFn::gelu;
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
    case A::linear:
    case A::softmax:
      f(std::integral_constant<A, A::linear>{});
      return;
  }
}

}  // namespace mixlab
