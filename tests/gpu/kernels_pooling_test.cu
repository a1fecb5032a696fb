// MixLab's CUDA padding, pooling and loss kernels (kernels_pooling.cu, kernels_rows.cu) against
// host loops of the same shared math (engine/ops/loss.h), per dtype, on random data.
// Tolerances: exact where both sides do the same IEEE operations (casts, copies, pooling's max,
// the optimizer with --fmad=false), a few float32 ulps where the device's expf/erff/tanhf/logf
// differ from glibc's, and one rounding step of the 16-bit type on top. Skipped without a CUDA
// device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/cuda/kernels.h"
#include "engine/core/half.h"
#include "engine/ops/activation.h"
#include "engine/ops/dropout.h"
#include "engine/ops/loss.h"
#include "engine/ops/loss_scale.h"
#include "engine/ops/optimizer.h"

#include "tests/gpu/kernels_test_support.h"

namespace mixlab::cuda {
namespace {

namespace k = kernels;
using namespace test;

TEST_F(Kernels, PadAndCropNhwc) {
  const int n = 2, h = 5, w = 6, c = 3, top = 1, left = 2, hp = 7, wp = 9;
  for (DType dt : kDTypes) {
    const std::size_t count = static_cast<std::size_t>(n) * h * w * c;
    const std::size_t padded = static_cast<std::size_t>(n) * hp * wp * c;
    const auto x = random_values(count, dt, -2.0f, 2.0f, 9);
    const DeviceBuffer d_x = to_device(x, dt);
    DeviceBuffer d_xp(padded * dtype_bytes(dt)), d_back(count * dtype_bytes(dt));
    CUDA_OK(cudaMemset(d_xp.as(), 0, padded * dtype_bytes(dt)));
    k::pad_nhwc(d_x.as(), d_xp.as(), dt, n, h, w, c, top, left, hp, wp, nullptr);
    k::crop_nhwc(d_xp.as(), d_back.as(), dt, n, h, w, c, top, left, hp, wp, nullptr);
    std::vector<float> want(padded, 0.0f);
    for (int b = 0; b < n; ++b)
      for (int y = 0; y < h; ++y)
        for (int xx = 0; xx < w; ++xx)
          for (int ch = 0; ch < c; ++ch)
            want[((b * hp + y + top) * wp + xx + left) * c + ch] =
                x[((b * h + y) * w + xx) * c + ch];
    expect_close(from_device(d_xp, dt), want, dt, 0.0f, 0.0f, "pad");
    expect_close(from_device(d_back, dt), x, dt, 0.0f, 0.0f, "crop");
  }
}

// The CPU backend's semantics (oneDNN): max over the inside of the window, gradient to the first
// maximum in window order; average over the inside only.
void pool_reference(bool max, const std::vector<float>& x, const std::vector<float>& dy,
                    const k::PoolShape& s, DType dt, std::vector<float>& y,
                    std::vector<float>& dx) {
  y.assign(static_cast<std::size_t>(s.n) * s.oh * s.ow * s.c, 0.0f);
  std::vector<float> acc(static_cast<std::size_t>(s.n) * s.h * s.w * s.c, 0.0f);
  for (int b = 0; b < s.n; ++b)
    for (int oy = 0; oy < s.oh; ++oy)
      for (int ox = 0; ox < s.ow; ++ox)
        for (int ch = 0; ch < s.c; ++ch) {
          float best = -INFINITY, sum = 0.0f;
          int best_at = -1, count = 0;
          for (int ky = 0; ky < s.kh; ++ky)
            for (int kx = 0; kx < s.kw; ++kx) {
              const int iy = oy * s.sh + ky - s.pad_top, ix = ox * s.sw + kx - s.pad_left;
              if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
              const int at = ((b * s.h + iy) * s.w + ix) * s.c + ch;
              if (best_at < 0 || x[at] > best) {
                best = x[at];
                best_at = at;
              }
              sum += x[at];
              ++count;
            }
          const int o = ((b * s.oh + oy) * s.ow + ox) * s.c + ch;
          y[o] = round_to(dt, max ? best : sum / static_cast<float>(count));
          if (max) {
            acc[best_at] += dy[o];
          } else {
            for (int ky = 0; ky < s.kh; ++ky)
              for (int kx = 0; kx < s.kw; ++kx) {
                const int iy = oy * s.sh + ky - s.pad_top, ix = ox * s.sw + kx - s.pad_left;
                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                acc[((b * s.h + iy) * s.w + ix) * s.c + ch] += dy[o] / static_cast<float>(count);
              }
          }
        }
  dx.resize(acc.size());
  for (std::size_t i = 0; i < acc.size(); ++i) dx[i] = round_to(dt, acc[i]);
}

TEST_F(Kernels, PoolingForwardAndBackward) {
  struct Case {
    const char* name;
    k::PoolShape s;
  };
  auto shape = [](int h, int w, int k, int stride, int pad_top, int pad_bottom, int pad_left,
                  int pad_right) {
    k::PoolShape s;
    s.n = 3;
    s.h = h;
    s.w = w;
    s.c = 5;
    s.kh = s.kw = k;
    s.sh = s.sw = stride;
    s.pad_top = pad_top;
    s.pad_left = pad_left;
    s.oh = (h + pad_top + pad_bottom - k) / stride + 1;
    s.ow = (w + pad_left + pad_right - k) / stride + 1;
    return s;
  };
  const Case cases[] = {
      {"2x2 stride 2 valid", shape(8, 6, 2, 2, 0, 0, 0, 0)},
      {"3x3 stride 2 same (asymmetric)", shape(7, 8, 3, 2, 1, 1, 0, 1)},
      {"3x3 stride 1 same", shape(6, 5, 3, 1, 1, 1, 1, 1)},
      {"2x2 stride 1 same (bottom/right only)", shape(5, 7, 2, 1, 0, 1, 0, 1)},
  };
  for (DType dt : kDTypes) {
    for (const Case& c : cases) {
      const k::PoolShape& s = c.s;
      const std::size_t n_in = static_cast<std::size_t>(s.n) * s.h * s.w * s.c;
      const std::size_t n_out = static_cast<std::size_t>(s.n) * s.oh * s.ow * s.c;
      // Distinct values (no ties), exact in every dtype: multiples of 1/16 below 8.
      std::vector<float> x(n_in);
      for (std::size_t i = 0; i < n_in; ++i)
        x[i] = static_cast<float>(static_cast<int>(i % 255) - 127) / 16.0f;
      std::shuffle(x.begin(), x.end(), std::mt19937(10));
      const auto dy = random_values(n_out, dt, -1.0f, 1.0f, 11);
      const DeviceBuffer d_x = to_device(x, dt), d_dy = to_device(dy, dt);
      for (const bool max : {true, false}) {
        DeviceBuffer d_y(n_out * dtype_bytes(dt)), d_dx(n_in * dtype_bytes(dt));
        CUDA_OK(cudaMemset(d_dx.as(), 0x7f, n_in * dtype_bytes(dt)));  // must be overwritten
        k::pool_forward(max, d_x.as(), d_y.as(), dt, s, nullptr);
        k::pool_backward(max, d_x.as(), d_dy.as(), d_dx.as(), dt, s, nullptr);
        std::vector<float> want_y, want_dx;
        pool_reference(max, x, dy, s, dt, want_y, want_dx);
        const std::string what = std::string(max ? "max " : "average ") + c.name;
        expect_close(from_device(d_y, dt), want_y, dt, 1e-6f, 0.0f, what + " forward");
        expect_close(from_device(d_dx, dt), want_dx, dt, 1e-6f, 1e-7f, what + " backward");
      }
    }
  }
}

RowLoss host_row(LossHead head, const float* z, int kk, int label, float grad_mul, float* dz) {
  switch (head) {
    case LossHead::softmax_crossentropy:
      return softmax_crossentropy_row(z, kk, label, grad_mul, dz);
    case LossHead::sigmoid_binary:
      return sigmoid_binary_crossentropy_row(z, kk, label, grad_mul, dz);
    case LossHead::crossentropy_probabilities:
      return crossentropy_probabilities_row(z, kk, label, grad_mul, dz);
    case LossHead::binary_probabilities:
      break;
  }
  return binary_crossentropy_probabilities_row(z, kk, label, grad_mul, dz);
}

TEST_F(Kernels, LossOfEachHead) {
  const int batch = 300, real = 290;
  const float scale = 1024.0f;
  for (DType dt : kDTypes) {
    for (const LossHead head :
         {LossHead::softmax_crossentropy, LossHead::sigmoid_binary,
          LossHead::crossentropy_probabilities, LossHead::binary_probabilities}) {
      const bool binary =
          head == LossHead::sigmoid_binary || head == LossHead::binary_probabilities;
      const bool probabilities =
          head == LossHead::crossentropy_probabilities || head == LossHead::binary_probabilities;
      for (const int kk : binary ? std::vector<int>{1, 4} : std::vector<int>{10, 200}) {
        const std::size_t n = static_cast<std::size_t>(batch) * kk;
        const auto src = probabilities ? random_values(n, dt, 0.02f, 0.98f, 12)
                                       : random_values(n, dt, -4.0f, 4.0f, 12);
        std::vector<std::int32_t> labels(batch);
        for (int r = 0; r < batch; ++r) labels[r] = kk == 1 ? r % 2 : (r * 7) % kk;
        StepParams params;
        params.real_samples = real;
        DeviceState state;
        state.scaler.scale = scale;
        const DeviceBuffer d_src = to_device(src, dt), d_labels(labels);
        const DeviceBuffer d_params = device_value(params);
        DeviceBuffer d_state = device_value(state);
        DeviceBuffer d_scratch(n * sizeof(float)), d_grad(n * dtype_bytes(dt));
        k::begin_step(d_state.as<DeviceState>(), true, nullptr);
        k::loss(head, d_src.as(), dt, d_labels.as<std::int32_t>(), batch, 1, kk,
                d_params.as<StepParams>(), d_state.as<DeviceState>(), d_scratch.as<float>(),
                d_grad.as(), nullptr);
        const auto got_state = host_value<DeviceState>(d_state);
        std::vector<float> want_grad(n, 0.0f);
        double loss_sum = 0.0, correct = 0.0;
        const float grad_mul = scale / static_cast<float>(real);
        for (int r = 0; r < real; ++r) {
          const RowLoss rl = host_row(head, src.data() + r * kk, kk, labels[r], grad_mul,
                                      want_grad.data() + r * kk);
          loss_sum += rl.loss;
          correct += rl.correct;
        }
        for (auto& g : want_grad) g = round_to(dt, g);
        const std::string what =
            "loss head " + std::to_string(static_cast<int>(head)) + " k=" + std::to_string(kk);
        EXPECT_EQ(got_state.step_scale, scale) << what;
        EXPECT_NEAR(got_state.loss_sum, loss_sum, 1e-5 * std::fabs(loss_sum) + 1e-5) << what;
        EXPECT_NEAR(got_state.correct, correct, 1e-3) << what;
        expect_close(from_device(d_grad, dt), want_grad, dt, 2e-5f, grad_mul * 1e-6f,
                     what + " gradient");
      }
    }
  }
}


}  // namespace
}  // namespace mixlab::cuda
