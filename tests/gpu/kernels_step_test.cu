// MixLab's CUDA kernels of the step's end (kernels_step.cu: unscale and overflow check, the
// loss-scale state machine, the optimizer) against host loops of the same shared math.
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

TEST_F(Kernels, UnscaleAndCheckFindsNonFinite) {
  const std::int64_t n = 100003;
  std::vector<float> g =
      random_values(static_cast<std::size_t>(n) + 1, DType::f32, -100.0f, 100.0f, 13);
  for (const bool scaling : {true, false}) {
    for (const std::int64_t bad_at : {std::int64_t{-1}, std::int64_t{5}, n - 1}) {
      for (const int offset : {0, 1}) {  // 16-byte aligned (float4) and not
        std::vector<float> grads = g;
        if (bad_at >= 0) grads[offset + bad_at] = bad_at == 5 ? NAN : INFINITY;
        DeviceBuffer d_g(grads);
        DeviceState state;
        state.scaler.scale = 65536.0f;
        DeviceBuffer d_state = device_value(state);
        k::begin_step(d_state.as<DeviceState>(), scaling, nullptr);
        k::unscale_and_check(d_g.as<float>() + offset, n, DType::f32, d_state.as<DeviceState>(),
                             nullptr);
        const auto got = d_g.download<float>();
        const auto s = host_value<DeviceState>(d_state);
        EXPECT_EQ(s.nonfinite, bad_at >= 0 ? 1 : 0) << bad_at << " offset " << offset;
        const float inv = 1.0f / (scaling ? 65536.0f : 1.0f);
        for (std::int64_t i = 0; i < n; ++i) {
          const float want = grads[offset + i] * inv;
          if (std::isnan(want)) continue;
          ASSERT_EQ(got[offset + i], want) << i;
        }
      }
    }
  }
}

// A 16-bit layer's weight gradients are rounded to its type before the check, as the CPU
// backend rounds them (engine/backend/cpu/weighted_node.cpp): 70000 is finite in float32 and
// bfloat16 but inf in float16, and every value comes back rounded, then unscaled.
TEST_F(Kernels, UnscaleAndCheckRoundsToTheLayersType) {
  const std::vector<float> raw = {1.0f + 1.0f / 4096, -3.14159f, 70000.0f, 65504.0f, 1e-3f};
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(to_string(dtype));
    DeviceBuffer d_g(raw);
    DeviceState state;
    state.scaler.scale = 4.0f;
    DeviceBuffer d_state = device_value(state);
    k::begin_step(d_state.as<DeviceState>(), true, nullptr);
    k::unscale_and_check(d_g.as<float>(), static_cast<std::int64_t>(raw.size()), dtype,
                         d_state.as<DeviceState>(), nullptr);
    const auto got = d_g.download<float>();
    const auto s = host_value<DeviceState>(d_state);
    EXPECT_EQ(s.nonfinite, dtype == DType::f16 ? 1 : 0);
    for (std::size_t i = 0; i < raw.size(); ++i) {
      const float rounded = dtype == DType::f16    ? round_to_f16(raw[i])
                            : dtype == DType::bf16 ? round_to_bf16(raw[i])
                                                   : raw[i];
      const float want = rounded / 4.0f;
      if (std::isinf(want)) {
        EXPECT_TRUE(std::isinf(got[i])) << i;
      } else {
        EXPECT_EQ(got[i], want) << i;
      }
    }
  }
}

TEST_F(Kernels, LossScaleStateMachineMatchesTheHost) {
  LossScaleConfig rule = LossScaleConfig::dynamic();
  rule.growth_interval = 3;
  OptimizerParams opt;
  opt.kind = OptimizerKind::adam;
  opt.lr = 0.001;
  DeviceState state;
  state.scaler.scale = 32768.0f;
  DeviceBuffer d_state = device_value(state);
  LossScaleState<float> host = state.scaler;
  std::int64_t iteration = 0;
  const bool finite_steps[] = {true, true, false, true, true, true, true, false, false, true};
  for (const bool finite : finite_steps) {
    k::begin_step(d_state.as<DeviceState>(), true, nullptr);
    if (!finite) {
      std::vector<float> g = {1.0f, INFINITY};
      DeviceBuffer d_g(g);
      k::unscale_and_check(d_g.as<float>(), 2, DType::f32, d_state.as<DeviceState>(), nullptr);
      CUDA_OK(cudaDeviceSynchronize());
    }
    k::update_loss_scale(d_state.as<DeviceState>(), rule, opt, nullptr);
    const auto s = host_value<DeviceState>(d_state);
    const float step_scale = host.scale;
    const bool applied = update_loss_scale(host, rule, finite);
    if (applied) ++iteration;
    EXPECT_EQ(s.step_scale, step_scale);
    EXPECT_EQ(s.applied, applied ? 1 : 0);
    EXPECT_EQ(s.scaler.scale, host.scale);
    EXPECT_EQ(s.scaler.good_steps, host.good_steps);
    EXPECT_EQ(s.iteration, iteration);
    if (applied) {
      EXPECT_EQ(s.lr_t, adam_learning_rate(opt.lr, opt.beta_1, opt.beta_2, iteration));
    }
  }
}

TEST_F(Kernels, OptimizerUpdatesAllParametersAndTheCopy) {
  const std::int64_t n = 20011;
  const auto w0 = random_values(static_cast<std::size_t>(n), DType::f32, -1.0f, 1.0f, 14);
  const auto g = random_values(static_cast<std::size_t>(n), DType::f32, -0.1f, 0.1f, 15);
  const auto m0 = random_values(static_cast<std::size_t>(n), DType::f32, -0.01f, 0.01f, 16);
  const auto v0 = random_values(static_cast<std::size_t>(n), DType::f32, 0.0f, 0.001f, 17);
  struct Case {
    const char* name;
    OptimizerKind kind;
    float momentum;
    bool nesterov;
  };
  for (const Case c : {Case{"sgd", OptimizerKind::sgd, 0.0f, false},
                       Case{"momentum", OptimizerKind::sgd, 0.9f, false},
                       Case{"nesterov", OptimizerKind::sgd, 0.9f, true},
                       Case{"adam", OptimizerKind::adam, 0.0f, false}}) {
    for (const int copy_kind : {-1, 0, 1, 2}) {  // none, f32, f16, bf16
      for (const int applied : {1, 0}) {
        OptimizerParams opt;
        opt.kind = c.kind;
        opt.lr = c.kind == OptimizerKind::adam ? 0.001 : 0.01;
        opt.momentum = c.momentum;
        opt.nesterov = c.nesterov;
        DeviceState state;
        state.applied = applied;
        state.lr_t = adam_learning_rate(opt.lr, opt.beta_1, opt.beta_2, 7);
        const DType copy_dtype = copy_kind <= 0   ? DType::f32
                                 : copy_kind == 1 ? DType::f16
                                                  : DType::bf16;
        DeviceBuffer d_w(w0), d_g(g), d_m(m0), d_v(v0);
        DeviceBuffer d_copy(static_cast<std::size_t>(n) * dtype_bytes(copy_dtype));
        const DeviceBuffer d_state = device_value(state);
        k::optimizer_update(opt, d_w.as<float>(), d_g.as<float>(), d_m.as<float>(), d_v.as<float>(),
                            copy_kind < 0 ? nullptr : d_copy.as(), copy_dtype, n,
                            d_state.as<DeviceState>(), nullptr);
        std::vector<float> w = w0, m = m0, v = v0;
        if (applied) {
          SgdUpdate sgd;
          sgd.lr = static_cast<float>(opt.lr);
          sgd.momentum = opt.momentum;
          sgd.nesterov = opt.nesterov;
          AdamUpdate adam;
          adam.lr_t = state.lr_t;
          adam.one_minus_beta_1 = static_cast<float>(1.0 - opt.beta_1);
          adam.one_minus_beta_2 = static_cast<float>(1.0 - opt.beta_2);
          adam.epsilon = opt.epsilon;
          for (std::int64_t i = 0; i < n; ++i) {
            if (c.kind == OptimizerKind::adam) {
              adam(w[i], m[i], v[i], g[i]);
            } else if (c.momentum != 0.0f) {
              sgd(w[i], m[i], g[i]);
            } else {
              sgd(w[i], g[i]);
            }
          }
        }
        const std::string what = std::string(c.name) + " copy " + std::to_string(copy_kind) +
                                 " applied " + std::to_string(applied);
        // Same IEEE operations on both sides (the kernels are compiled with --fmad=false).
        expect_close(d_w.download<float>(), w, DType::f32, 2e-7f, 0.0f, what + " master");
        expect_close(d_m.download<float>(), m, DType::f32, 2e-7f, 0.0f, what + " state0");
        expect_close(d_v.download<float>(), v, DType::f32, 2e-7f, 0.0f, what + " state1");
        if (copy_kind >= 0 && applied) {
          std::vector<float> want(w.size());
          for (std::size_t i = 0; i < w.size(); ++i) want[i] = round_to(copy_dtype, w[i]);
          expect_close(from_device(d_copy, copy_dtype), want, copy_dtype, 2e-7f, 0.0f,
                       what + " copy");
        }
      }
    }
  }
}


}  // namespace
}  // namespace mixlab::cuda
