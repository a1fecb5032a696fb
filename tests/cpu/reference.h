// Straightforward float64 implementations of every layer's forward pass, in Keras's layouts
// (NHWC activations, kernels (in, units) and (kh, kw, in, filters)). The op tests compare the
// backend's forward with these and its backward with their finite differences.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/ops/dropout.h"
#include "engine/spec/model_spec.h"
#include "engine/spec/shape_inference.h"

namespace mixlab::reference {

using Vec = std::vector<double>;

// Keras's ReLU layer (keras/src/activations/activations.py, ReLU.static_call).
inline double relu(double x, double max_value, double negative_slope, double threshold) {
  if (x > threshold) return std::min(x, max_value);
  return negative_slope * (x - threshold);
}

inline double activation(ActivationFn fn, double x) {
  const auto relu6 = [](double v) { return std::min(std::max(v, 0.0), 6.0); };
  switch (fn) {
    case ActivationFn::relu:
      return x > 0 ? x : 0;
    case ActivationFn::relu6:
      return relu6(x);
    case ActivationFn::leaky_relu:
      return x > 0 ? x : 0.2 * x;
    case ActivationFn::silu:
      return x / (1.0 + std::exp(-x));
    case ActivationFn::hard_sigmoid:
      return relu6(x + 3.0) / 6.0;
    case ActivationFn::hard_silu:
      return x * relu6(x + 3.0) / 6.0;
    case ActivationFn::elu:
      return x > 0 ? x : std::expm1(x);
    case ActivationFn::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case ActivationFn::tanh:
      return std::tanh(x);
    case ActivationFn::gelu:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case ActivationFn::linear:
    case ActivationFn::softmax:
      return x;
  }
  return x;
}

// Applies an activation to rows of length k (softmax by rows, others elementwise).
inline Vec activate(ActivationFn fn, const Vec& x, std::int64_t k) {
  Vec y(x.size());
  if (fn != ActivationFn::softmax) {
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = activation(fn, x[i]);
    return y;
  }
  for (std::size_t r = 0; r < x.size() / k; ++r) {
    double m = x[r * k];
    for (std::int64_t j = 1; j < k; ++j) m = std::max(m, x[r * k + j]);
    double s = 0;
    for (std::int64_t j = 0; j < k; ++j) s += std::exp(x[r * k + j] - m);
    for (std::int64_t j = 0; j < k; ++j) y[r * k + j] = std::exp(x[r * k + j] - m) / s;
  }
  return y;
}

// x: (rows, in), kernel (in, out), bias (out)
inline Vec dense(const Vec& x, const Vec& kernel, const Vec& bias, std::int64_t in,
                 std::int64_t out, ActivationFn fn) {
  const std::int64_t rows = static_cast<std::int64_t>(x.size()) / in;
  Vec z(static_cast<std::size_t>(rows * out));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t o = 0; o < out; ++o) {
      double s = bias.empty() ? 0.0 : bias[o];
      for (std::int64_t i = 0; i < in; ++i) s += x[r * in + i] * kernel[i * out + o];
      z[r * out + o] = s;
    }
  }
  return activate(fn, z, out);
}

// x: (n, h, w, c) -> (n, oh, ow, filters), with the info's padding and the spec's strides.
inline Vec conv2d(const Vec& x, const Vec& kernel, const Vec& bias, std::int64_t n,
                  const LayerSpec& spec, const LayerInfo& info) {
  const auto h = info.input_shape[0], w = info.input_shape[1], c = info.input_shape[2];
  const auto oh = info.output_shape[0], ow = info.output_shape[1], f = info.output_shape[2];
  const int kh = spec.kernel_size.h, kw = spec.kernel_size.w;
  Vec z(static_cast<std::size_t>(n * oh * ow * f));
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox)
        for (std::int64_t o = 0; o < f; ++o) {
          double s = bias.empty() ? 0.0 : bias[o];
          for (int ky = 0; ky < kh; ++ky)
            for (int kx = 0; kx < kw; ++kx) {
              const std::int64_t iy = oy * spec.strides.h + ky - info.pad_top;
              const std::int64_t ix = ox * spec.strides.w + kx - info.pad_left;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              for (std::int64_t ci = 0; ci < c; ++ci) {
                s +=
                    x[((b * h + iy) * w + ix) * c + ci] * kernel[((ky * kw + kx) * c + ci) * f + o];
              }
            }
          z[((b * oh + oy) * ow + ox) * f + o] = s;
        }
  return activate(spec.activation, z, f);
}

// DepthwiseConv2D: x (n, h, w, c) -> (n, oh, ow, c * multiplier); kernel (kh, kw, c, multiplier).
inline Vec depthwise_conv2d(const Vec& x, const Vec& kernel, const Vec& bias, std::int64_t n,
                            const LayerSpec& spec, const LayerInfo& info) {
  const auto h = info.input_shape[0], w = info.input_shape[1], c = info.input_shape[2];
  const auto oh = info.output_shape[0], ow = info.output_shape[1], f = info.output_shape[2];
  const int kh = spec.kernel_size.h, kw = spec.kernel_size.w, dm = spec.depth_multiplier;
  Vec z(static_cast<std::size_t>(n * oh * ow * f));
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox)
        for (std::int64_t ci = 0; ci < c; ++ci)
          for (int m = 0; m < dm; ++m) {
            const std::int64_t o = ci * dm + m;
            double s = bias.empty() ? 0.0 : bias[o];
            for (int ky = 0; ky < kh; ++ky)
              for (int kx = 0; kx < kw; ++kx) {
                const std::int64_t iy = oy * spec.strides.h + ky - info.pad_top;
                const std::int64_t ix = ox * spec.strides.w + kx - info.pad_left;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                s += x[((b * h + iy) * w + ix) * c + ci] *
                     kernel[((ky * kw + kx) * c + ci) * dm + m];
              }
            z[((b * oh + oy) * ow + ox) * f + o] = s;
          }
  return activate(spec.activation, z, f);
}

// SeparableConv2D: the depthwise convolution (no bias, no activation), then a 1x1 Conv2D of the
// pointwise kernel (c * multiplier, filters) with the bias and the activation.
inline Vec separable_conv2d(const Vec& x, const Vec& depthwise, const Vec& pointwise,
                            const Vec& bias, std::int64_t n, const LayerSpec& spec,
                            const LayerInfo& info) {
  LayerSpec dw = spec;
  dw.activation = ActivationFn::linear;
  LayerInfo dw_info = info;
  const std::int64_t depth = info.input_shape[2] * spec.depth_multiplier;
  dw_info.output_shape = {info.output_shape[0], info.output_shape[1], depth};
  const Vec z = depthwise_conv2d(x, depthwise, {}, n, dw, dw_info);
  return dense(z, pointwise, bias, depth, spec.filters, spec.activation);
}

// ZeroPadding2D: x (n, h, w, c) in the middle of zeros (n, h', w', c).
inline Vec zero_padding(const Vec& x, std::int64_t n, const LayerInfo& info) {
  const auto h = info.input_shape[0], w = info.input_shape[1], c = info.input_shape[2];
  const auto oh = info.output_shape[0], ow = info.output_shape[1];
  Vec y(static_cast<std::size_t>(n * oh * ow * c), 0.0);
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < h; ++i)
      for (std::int64_t j = 0; j < w; ++j)
        for (std::int64_t k = 0; k < c; ++k)
          y[((b * oh + i + info.pad_top) * ow + j + info.pad_left) * c + k] =
              x[((b * h + i) * w + j) * c + k];
  return y;
}

// BatchNormalization while training: each channel (the last axis) normalized by the batch's
// biased moments; gamma and beta empty when the layer has none. `mean` and `variance` (when
// given) receive the batch's statistics.
inline Vec batch_norm_train(const Vec& x, std::int64_t channels, const Vec& gamma, const Vec& beta,
                            double epsilon, Vec* mean = nullptr, Vec* variance = nullptr) {
  const auto rows = static_cast<std::int64_t>(x.size()) / channels;
  Vec mu(static_cast<std::size_t>(channels), 0.0), var(static_cast<std::size_t>(channels), 0.0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = 0; k < channels; ++k) mu[k] += x[r * channels + k] / rows;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = 0; k < channels; ++k) {
      const double d = x[r * channels + k] - mu[k];
      var[k] += d * d / rows;
    }
  Vec y(x.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t k = 0; k < channels; ++k) {
      const double g = gamma.empty() ? 1.0 : gamma[k];
      const double b = beta.empty() ? 0.0 : beta[k];
      y[r * channels + k] = (x[r * channels + k] - mu[k]) / std::sqrt(var[k] + epsilon) * g + b;
    }
  if (mean) *mean = mu;
  if (variance) *variance = var;
  return y;
}

// LayerNormalization over rows of `width`: each row by its own mean and (biased) variance.
inline Vec layer_norm(const Vec& x, std::int64_t width, const Vec& gamma, const Vec& beta,
                      double epsilon) {
  const auto rows = static_cast<std::int64_t>(x.size()) / width;
  Vec y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double mu = 0.0, var = 0.0;
    for (std::int64_t k = 0; k < width; ++k) mu += x[r * width + k] / width;
    for (std::int64_t k = 0; k < width; ++k) {
      const double d = x[r * width + k] - mu;
      var += d * d / width;
    }
    for (std::int64_t k = 0; k < width; ++k) {
      const double g = gamma.empty() ? 1.0 : gamma[k];
      const double b = beta.empty() ? 0.0 : beta[k];
      y[r * width + k] = (x[r * width + k] - mu) / std::sqrt(var + epsilon) * g + b;
    }
  }
  return y;
}

// Embedding: each id's row of the (vocabulary, width) table.
inline Vec embedding(const Vec& ids, const Vec& table, std::int64_t width) {
  Vec y;
  for (const double id : ids) {
    const auto row = static_cast<std::int64_t>(id);
    y.insert(y.end(), table.begin() + row * width, table.begin() + (row + 1) * width);
  }
  return y;
}

// PositionEmbedding: the table's first steps * features values for each of n samples.
inline Vec position_embedding(std::int64_t n, const Vec& table, std::int64_t per_sample) {
  Vec y;
  for (std::int64_t b = 0; b < n; ++b) y.insert(y.end(), table.begin(), table.begin() + per_sample);
  return y;
}

inline Vec pool(const Vec& x, std::int64_t n, const LayerSpec& spec, const LayerInfo& info) {
  const auto h = info.input_shape[0], w = info.input_shape[1], c = info.input_shape[2];
  const auto oh = info.output_shape[0], ow = info.output_shape[1];
  const bool max = spec.type == LayerType::MaxPooling2D;
  Vec y(static_cast<std::size_t>(n * oh * ow * c));
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox)
        for (std::int64_t ci = 0; ci < c; ++ci) {
          double acc = max ? -INFINITY : 0.0;
          int count = 0;
          for (int ky = 0; ky < spec.pool_size.h; ++ky)
            for (int kx = 0; kx < spec.pool_size.w; ++kx) {
              const std::int64_t iy = oy * spec.strides.h + ky - info.pad_top;
              const std::int64_t ix = ox * spec.strides.w + kx - info.pad_left;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              const double v = x[((b * h + iy) * w + ix) * c + ci];
              acc = max ? std::max(acc, v) : acc + v;
              ++count;
            }
          y[((b * oh + oy) * ow + ox) * c + ci] = max ? acc : acc / count;
        }
  return y;
}

// GlobalAveragePooling2D / GlobalMaxPooling2D: each channel's mean or maximum over the image;
// the 1D ones over a sequence's steps (keepdims changes only the shape, not the values).
inline Vec global_pool(const Vec& x, std::int64_t n, const LayerSpec& spec, const LayerInfo& info) {
  const bool sequence = info.input_shape.size() == 2;
  const auto h = info.input_shape[0], w = sequence ? 1 : info.input_shape[1],
             c = info.input_shape.back();
  const bool max =
      spec.type == LayerType::GlobalMaxPooling2D || spec.type == LayerType::GlobalMaxPooling1D;
  Vec y(static_cast<std::size_t>(n * c));
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t ci = 0; ci < c; ++ci) {
      double acc = max ? -INFINITY : 0.0;
      for (std::int64_t p = 0; p < h * w; ++p) {
        const double v = x[(b * h * w + p) * c + ci];
        acc = max ? std::max(acc, v) : acc + v;
      }
      y[b * c + ci] = max ? acc : acc / static_cast<double>(h * w);
    }
  return y;
}

// With Keras's noise_shape over a batch of `batch` samples of `shape`: the mask element of x[i]
// is its index in the noise shape (its coordinate 0 on the axes where noise_shape is 1).
inline Vec dropout(const Vec& x, double rate, std::uint64_t seed, int layer, std::uint64_t step,
                   const std::vector<std::int64_t>& noise_shape = {}, std::int64_t batch = 0,
                   const Shape& shape = {}) {
  const DropoutMask mask = make_dropout_mask(rate, seed, layer, step);
  Shape dims{batch};
  dims.insert(dims.end(), shape.begin(), shape.end());
  Vec y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::uint64_t m = i;
    if (!noise_shape.empty()) {
      // Coordinates, last axis fastest; then the index in the noise shape's own row-major order.
      std::vector<std::int64_t> coord(dims.size());
      std::int64_t rest = static_cast<std::int64_t>(i);
      for (std::size_t d = dims.size(); d-- > 0;) {
        coord[d] = rest % dims[d];
        rest /= dims[d];
      }
      m = 0;
      for (std::size_t d = 0; d < dims.size(); ++d) {
        const std::int64_t extent = noise_shape[d] == 1 ? 1 : dims[d];
        m = m * static_cast<std::uint64_t>(extent) +
            static_cast<std::uint64_t>(noise_shape[d] == 1 ? 0 : coord[d]);
      }
    }
    y[i] = x[i] * mask.factor(m);
  }
  return y;
}

}  // namespace mixlab::reference
