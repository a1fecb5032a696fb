// MixLab's CUDA kernels of data and elementwise ops (kernels_data.cu, kernels_elementwise.cu,
// softmax in kernels_rows.cu) against host loops of the same shared math (engine/core/half.h,
// engine/ops/*.h), per dtype, on random data.
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

TEST_F(Kernels, CastBetweenAllTypes) {
  std::vector<float> base = random_values(4099, DType::f32, -3.0f, 3.0f, 1);
  base[0] = 70000.0f;  // past float16's range
  base[1] = 3e-6f;     // float16 subnormal
  base[2] = -0.0f;
  base[3] = std::numeric_limits<float>::infinity();
  for (DType from : kDTypes) {
    std::vector<float> src = base;
    for (auto& v : src) v = round_to(from, v);
    const DeviceBuffer d_src = to_device(src, from);
    for (DType to : kDTypes) {
      DeviceBuffer d_dst(src.size() * dtype_bytes(to));
      k::cast(d_src.as(), from, d_dst.as(), to, static_cast<std::int64_t>(src.size()), nullptr);
      std::vector<float> want(src.size());
      for (std::size_t i = 0; i < src.size(); ++i) want[i] = round_to(to, src[i]);
      expect_close(from_device(d_dst, to), want, to, 0.0f, 0.0f,
                   std::string("cast from ") + std::string(to_string(from)));
    }
  }
}

TEST_F(Kernels, GatherBatchTakesIndexedSamplesAndZeroesPadding) {
  const int samples = 50, batch = 16, real = 11;
  const std::int64_t per_sample = 3 * 5 * 7;
  std::vector<std::uint8_t> images(static_cast<std::size_t>(samples * per_sample));
  for (std::size_t i = 0; i < images.size(); ++i)
    images[i] = static_cast<std::uint8_t>(i * 37 + 11);
  std::vector<std::int32_t> labels(samples);
  for (int i = 0; i < samples; ++i) labels[i] = i % 10;
  std::vector<std::int64_t> indices(batch);
  for (int r = 0; r < batch; ++r) indices[r] = (r * 17 + 3) % samples;
  StepParams params;
  params.real_samples = real;
  const DeviceBuffer d_images(images), d_labels(labels), d_indices(indices);
  const DeviceBuffer d_params = device_value(params);
  DeviceBuffer d_out(batch * per_sample * sizeof(float)),
      d_out_labels(batch * sizeof(std::int32_t));
  CUDA_OK(cudaMemset(d_out.as(), 0xff, batch * per_sample * sizeof(float)));
  k::gather_batch(d_images.as<std::uint8_t>(), d_labels.as<std::int32_t>(),
                  d_indices.as<std::int64_t>(), d_params.as<StepParams>(), batch, per_sample,
                  1, d_out.as<float>(), d_out_labels.as<std::int32_t>(), nullptr);
  const auto out = d_out.download<float>();
  const auto out_labels = d_out_labels.download<std::int32_t>();
  for (int r = 0; r < batch; ++r) {
    EXPECT_EQ(out_labels[r], r < real ? labels[indices[r]] : 0) << r;
    for (std::int64_t j = 0; j < per_sample; ++j) {
      const float want = r < real ? static_cast<float>(images[indices[r] * per_sample + j]) : 0.0f;
      ASSERT_EQ(out[r * per_sample + j], want) << r << ", " << j;
    }
  }
}

TEST_F(Kernels, ActivationsForwardAndBackward) {
  const std::size_t n = 10007;
  for (DType dt : kDTypes) {
    const auto x = random_values(n, dt, -5.0f, 5.0f, 2);
    const auto dy = random_values(n, dt, -1.0f, 1.0f, 3);
    const DeviceBuffer d_x = to_device(x, dt), d_dy = to_device(dy, dt);
    for (ActivationFn fn : {ActivationFn::linear, ActivationFn::relu, ActivationFn::sigmoid,
                            ActivationFn::tanh, ActivationFn::gelu}) {
      const std::string name = "activation " + std::to_string(static_cast<int>(fn));
      DeviceBuffer d_y(n * dtype_bytes(dt)), d_dx(n * dtype_bytes(dt));
      k::activation_forward(fn, d_x.as(), d_y.as(), dt, static_cast<std::int64_t>(n), nullptr);
      const auto y = from_device(d_y, dt);
      std::vector<float> want_y(n), want_dx(n);
      for (std::size_t i = 0; i < n; ++i) want_y[i] = round_to(dt, activation_forward(fn, x[i]));
      // gelu for x below -3: 1 + erf(x / sqrt 2) is about 1e-6, so an ulp of erf moves it by
      // about 1e-7 absolute, and the two sides' erfs differ by several: CUDA's erff is within 2
      // ulp, the host's fast_math.h rational approximation within 8 (near erf = -1).
      const float gelu_abs = fn == ActivationFn::gelu ? 1e-6f : 1e-7f;
      expect_close(y, want_y, dt, 4e-6f, gelu_abs, name + " forward");
      // Backward from the device's own output, as the executor does.
      k::activation_backward(fn, d_x.as(), d_y.as(), d_dy.as(), d_dx.as(), dt,
                             static_cast<std::int64_t>(n), nullptr);
      for (std::size_t i = 0; i < n; ++i) {
        want_dx[i] = round_to(dt, activation_backward(fn, x[i], y[i], dy[i]));
      }
      // The same erf in the backward's cdf: dy (cdf + x pdf) is ~2.5e-5 for x in [-5, -4], and a
      // replay of these inputs put the erfs' difference at up to 1.5e-7 there.
      expect_close(from_device(d_dx, dt), want_dx, dt, 4e-6f, gelu_abs, name + " backward");
    }
  }
}

TEST_F(Kernels, SoftmaxForwardAndBackward) {
  struct Case {
    std::int64_t rows;
    int k;
  };
  for (DType dt : kDTypes) {
    for (const Case c :
         {Case{300, 1}, Case{300, 10}, Case{257, 33}, Case{40, 1000}, Case{9, 7000}}) {
      if (c.k > 6000 && dt != DType::f32) continue;  // float32 only: one thread per row
      const std::size_t n = static_cast<std::size_t>(c.rows) * c.k;
      const auto x = random_values(n, dt, -6.0f, 6.0f, 4);
      const auto dy = random_values(n, dt, -1.0f, 1.0f, 5);
      const DeviceBuffer d_x = to_device(x, dt), d_dy = to_device(dy, dt);
      DeviceBuffer d_y(n * dtype_bytes(dt)), d_dx(n * dtype_bytes(dt));
      k::softmax_forward(d_x.as(), d_y.as(), dt, c.rows, c.k, nullptr);
      k::softmax_backward(d_y.as(), d_dy.as(), d_dx.as(), dt, c.rows, c.k, nullptr);
      const auto y = from_device(d_y, dt);
      std::vector<float> want_y(n), want_dx(n), row(static_cast<std::size_t>(c.k));
      for (std::int64_t r = 0; r < c.rows; ++r) {
        softmax_row(x.data() + r * c.k, c.k, row.data());
        for (int j = 0; j < c.k; ++j) want_y[r * c.k + j] = round_to(dt, row[j]);
        softmax_backward_row(y.data() + r * c.k, dy.data() + r * c.k, c.k, row.data());
        for (int j = 0; j < c.k; ++j) want_dx[r * c.k + j] = round_to(dt, row[j]);
      }
      const std::string what = "softmax k=" + std::to_string(c.k);
      // Weights near exp(-12) are float16 subnormals, whose ulp (2^-24) is above the relative
      // bound: one exp ulp either side may round them one ulp apart.
      expect_close(y, want_y, dt, 1e-5f, dt == DType::f16 ? 6e-8f : 1e-9f, what + " forward");
      expect_close(from_device(d_dx, dt), want_dx, dt, 1e-5f, 1e-7f, what + " backward");
    }
  }
}

TEST_F(Kernels, ScaleOffsetDropoutAndBias) {
  const std::int64_t rows = 301;
  const int channels = 37;
  const std::size_t n = static_cast<std::size_t>(rows) * channels;
  for (DType dt : kDTypes) {
    const auto x = random_values(n, dt, -3.0f, 3.0f, 6);
    const auto bias = random_values(channels, dt, -1.0f, 1.0f, 7);
    const DeviceBuffer d_x = to_device(x, dt), d_bias = to_device(bias, dt);
    DeviceBuffer d_y(n * dtype_bytes(dt));

    k::scale_offset(d_x.as(), d_y.as(), dt, 1.0f / 255.0f, -0.5f, static_cast<std::int64_t>(n),
                    nullptr);
    std::vector<float> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = round_to(dt, x[i] * (1.0f / 255.0f) + -0.5f);
    expect_close(from_device(d_y, dt), want, dt, 0.0f, 0.0f, "scale_offset");

    for (const int train : {1, 0}) {
      StepParams params;
      params.step = 12345;
      params.train = train;
      const DeviceBuffer d_params = device_value(params);
      k::dropout(d_x.as(), d_y.as(), dt, static_cast<std::int64_t>(n), 0.3, 99, 4,
                 d_params.as<StepParams>(), nullptr);
      const DropoutMask mask = make_dropout_mask(0.3, 99, 4, params.step);
      for (std::size_t i = 0; i < n; ++i)
        want[i] = train ? round_to(dt, x[i] * mask.factor(i)) : x[i];
      expect_close(from_device(d_y, dt), want, dt, 0.0f, 0.0f,
                   "dropout train=" + std::to_string(train));
    }

    CUDA_OK(cudaMemcpy(d_y.as(), d_x.as(), n * dtype_bytes(dt), cudaMemcpyDeviceToDevice));
    k::fill_bias(d_y.as(), d_bias.as(), dt, rows, channels, nullptr);
    for (std::size_t i = 0; i < n; ++i) want[i] = round_to(dt, bias[i % channels]);
    expect_close(from_device(d_y, dt), want, dt, 0.0f, 0.0f, "fill_bias");

    CUDA_OK(cudaMemcpy(d_y.as(), d_x.as(), n * dtype_bytes(dt), cudaMemcpyDeviceToDevice));
    k::add_bias(d_y.as(), d_bias.as(), dt, rows, channels, nullptr);
    for (std::size_t i = 0; i < n; ++i) want[i] = round_to(dt, x[i] + bias[i % channels]);
    expect_close(from_device(d_y, dt), want, dt, 0.0f, 0.0f, "add_bias");
  }
}

TEST_F(Kernels, BiasGradientSumsColumnsAndOverwrites) {
  struct Case {
    std::int64_t rows;
    int channels;
  };
  for (DType dt : kDTypes) {
    for (const Case c : {Case{1, 10}, Case{3, 17}, Case{256, 128}, Case{200000, 10},
                         Case{30001, 129}, Case{5000, 300}, Case{2000, 4096}}) {
      const std::size_t n = static_cast<std::size_t>(c.rows) * c.channels;
      const auto dy = random_values(n, dt, -1.0f, 1.0f, 8);
      const DeviceBuffer d_dy = to_device(dy, dt);
      DeviceBuffer d_db(c.channels * sizeof(float));
      CUDA_OK(cudaMemset(d_db.as(), 0x7f, c.channels * sizeof(float)));  // garbage to overwrite
      k::bias_gradient(d_dy.as(), dt, c.rows, c.channels, d_db.as<float>(), nullptr);
      const auto db = d_db.download<float>();
      for (int ch = 0; ch < c.channels; ++ch) {
        double sum = 0.0, sum_abs = 0.0;
        for (std::int64_t r = 0; r < c.rows; ++r) {
          sum += dy[r * c.channels + ch];
          sum_abs += std::fabs(dy[r * c.channels + ch]);
        }
        ASSERT_NEAR(db[ch], sum, 1e-6 * sum_abs + 1e-6)
            << to_string(dt) << " rows " << c.rows << " channels " << c.channels << " column "
            << ch;
      }
    }
  }
}


}  // namespace
}  // namespace mixlab::cuda
