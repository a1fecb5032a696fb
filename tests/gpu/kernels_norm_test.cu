// MixLab's CUDA normalization and embedding kernels (kernels_norm.cu, kernels_sequence.cu,
// kernels_elementwise.cu's channel_normalize) against host loops of the same shared math
// (engine/ops/batch_norm.h, layer_norm.h, embedding.h), per dtype. These kernels are otherwise
// checked only through the CUDA executor's ops tests; here each runs alone, on shapes that cross
// its blocks' edges (channels past a block's 32 lanes, rows past a block's warps, padding rows).
// Tolerances: exact where both sides do the same IEEE operations on the same values (gathers,
// sums of values on a coarse grid, the per-element affine maps); where the kernels reduce in
// another order than the host loop, a float32 rounding bound of the terms summed, plus one
// rounding step of the 16-bit type. Skipped without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/cuda/kernels.h"
#include "engine/ops/activation.h"
#include "engine/ops/batch_norm.h"
#include "engine/ops/embedding.h"
#include "engine/ops/layer_norm.h"
#include "tests/gpu/kernels_test_support.h"

namespace mixlab::cuda {
namespace {

namespace k = kernels;
using namespace test;

// Values on a grid of 1/4 in [-lo, hi]: exact in every dtype, and their sums of a few hundred
// exact in float32 whatever the order.
std::vector<float> grid_values(std::size_t n, int lo, int hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-4 * lo, 4 * hi);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(dist(rng)) / 4.0f;
  return v;
}

TEST_F(Kernels, ChannelNormalizeIsTheHostDivision) {
  const int channels = 7;
  const std::int64_t n = 7 * 301;
  const std::vector<float> mean = random_values(channels, DType::f32, -1.0f, 1.0f, 31);
  const std::vector<float> divisor = random_values(channels, DType::f32, 0.5f, 3.0f, 32);
  const DeviceBuffer d_mean(mean), d_divisor(divisor);
  for (const DType dtype : kDTypes) {
    for (const bool centred : {true, false}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + (centred ? ", mean" : ", no mean"));
      const std::vector<float> x = random_values(static_cast<std::size_t>(n), dtype, -4, 4, 33);
      const DeviceBuffer d_x = to_device(x, dtype);
      DeviceBuffer d_y(static_cast<std::size_t>(n) * dtype_bytes(dtype));
      k::channel_normalize(d_x.as(), d_y.as(), dtype, centred ? d_mean.as<float>() : nullptr,
                           d_divisor.as<float>(), channels, n, nullptr);
      std::vector<float> want(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        const std::size_t c = i % channels;
        want[i] = round_to(dtype, (x[i] - (centred ? mean[c] : 0.0f)) / divisor[c]);
      }
      expect_close(from_device(d_y, dtype), want, dtype, 0.0f, 0.0f, "y");
    }
  }
}

// BatchNormalization, a training step then an inference one, forward and backward, with and
// without its fused ReLU: 40 channels (two blocks of 32 lanes), 3 real samples of 6 rows each
// and a padding sample, whose rows are not counted and get no gradient.
TEST_F(Kernels, BatchNormTrainingAndInferenceAreTheHostMath) {
  k::BatchNormShape shape;
  shape.channels = 40;
  shape.rows_per_sample = 6;
  const int samples = 4, real = 3;
  shape.rows = samples * shape.rows_per_sample;
  const int C = shape.channels;
  const std::size_t n = static_cast<std::size_t>(shape.rows) * C;
  const std::int64_t m = real * shape.rows_per_sample;
  BatchNormArgs args;
  args.momentum = 0.9f;
  args.epsilon = 1e-3f;
  const std::vector<float> gamma = random_values(C, DType::f32, 0.5f, 1.5f, 41);
  const std::vector<float> beta = random_values(C, DType::f32, -0.5f, 0.5f, 42);
  const std::vector<float> moving_mean0 = random_values(C, DType::f32, -0.2f, 0.2f, 43);
  const std::vector<float> moving_var0 = random_values(C, DType::f32, 0.5f, 2.0f, 44);
  const DeviceBuffer d_gamma(gamma), d_beta(beta);
  for (const DType dtype : kDTypes) {
    for (const bool relu : {false, true}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + (relu ? ", fused relu" : ""));
      // Channel c's values are offset by c / 8, so a channel whose mean leaks into another's shows.
      std::vector<float> x = random_values(n, dtype, -2.0f, 2.0f, 45);
      for (std::size_t i = 0; i < n; ++i)
        x[i] = round_to(dtype, x[i] + static_cast<float>(i % C) / 8.0f);
      const std::vector<float> dy = random_values(n, dtype, -1.0f, 1.0f, 46);
      const DeviceBuffer d_x = to_device(x, dtype), d_dy = to_device(dy, dtype);
      DeviceBuffer d_y(n * dtype_bytes(dtype)), d_dx(n * dtype_bytes(dtype));
      DeviceBuffer d_moving_mean(moving_mean0), d_moving_var(moving_var0);
      DeviceBuffer d_sums(2 * C * sizeof(double)), d_stats(5 * C * sizeof(float));
      DeviceBuffer d_dgamma(C * sizeof(float)), d_dbeta(C * sizeof(float));
      StepParams params;
      params.real_samples = real;
      params.train = 1;
      const DeviceBuffer d_params = device_value(params);
      auto forward = [&](const DeviceBuffer& step) {
        k::batch_norm_forward(d_x.as(), d_y.as(), dtype, shape, args, d_gamma.as<float>(),
                              d_beta.as<float>(), d_moving_mean.as<float>(),
                              d_moving_var.as<float>(), d_sums.as<double>(), d_stats.as<float>(),
                              step.as<StepParams>(), nullptr, relu);
      };
      forward(d_params);
      // The host: double sums over the real rows, as the kernels (their order differs: one
      // float32 rounding of the statistics may differ).
      std::vector<float> mean(C), inv_std(C), a(C), b(C), want_mm(C), want_mv(C);
      std::vector<float> want_y(n);
      for (int c = 0; c < C; ++c) {
        double s = 0.0;
        for (std::int64_t r = 0; r < m; ++r) s += x[r * C + c];
        mean[c] = static_cast<float>(s / static_cast<double>(m));
        double q = 0.0;
        for (std::int64_t r = 0; r < m; ++r) {
          const double d = static_cast<double>(x[r * C + c]) - mean[c];
          q += d * d;
        }
        const auto variance = static_cast<float>(q / static_cast<double>(m));
        want_mm[c] = moving_update(moving_mean0[c], mean[c], args.momentum);
        want_mv[c] = moving_update(moving_var0[c], variance, args.momentum);
        const ChannelAffine t = channel_affine(mean[c], variance, gamma[c], beta[c], args.epsilon);
        inv_std[c] = t.inv_std;
        a[c] = t.a;
        b[c] = t.b;
      }
      for (std::size_t i = 0; i < n; ++i) {
        const float v = x[i] * a[i % C] + b[i % C];
        want_y[i] = round_to(dtype, relu ? relu_forward(v, ReluArgs{}) : v);
      }
      expect_close(from_device(d_y, dtype), want_y, dtype, 1e-6f, 1e-6f, "training y");
      expect_close(d_moving_mean.download<float>(), want_mm, DType::f32, 1e-6f, 1e-7f,
                   "moving mean");
      expect_close(d_moving_var.download<float>(), want_mv, DType::f32, 1e-6f, 0.0f,
                   "moving variance");

      // Backward through the batch's statistics; dy only where the fused ReLU's output is
      // positive. The host takes the forward's own output as the gate.
      const std::vector<float> y = from_device(d_y, dtype);
      k::batch_norm_backward(d_x.as(), d_dy.as(), d_dx.as(), dtype, shape, d_gamma.as<float>(),
                             d_dgamma.as<float>(), d_dbeta.as<float>(), d_sums.as<double>(),
                             d_stats.as<float>(), d_params.as<StepParams>(), nullptr,
                             relu ? d_y.as() : nullptr);
      const std::vector<float> stats = d_stats.download<float>();
      std::vector<float> want_dgamma(C), want_dbeta(C), want_dx(n, 0.0f);
      for (int c = 0; c < C; ++c) {
        double s0 = 0.0, s1 = 0.0;
        for (std::int64_t r = 0; r < m; ++r) {
          const std::size_t i = static_cast<std::size_t>(r * C + c);
          const float g = relu ? relu_backward(y[i], dy[i], ReluArgs{}) : dy[i];
          s0 += g;
          s1 += static_cast<double>(g) * ((x[i] - stats[c]) * stats[C + c]);
        }
        want_dbeta[c] = static_cast<float>(s0);
        want_dgamma[c] = static_cast<float>(s1);
      }
      for (std::int64_t r = 0; r < m; ++r) {
        for (int c = 0; c < C; ++c) {
          const std::size_t i = static_cast<std::size_t>(r * C + c);
          const float g = relu ? relu_backward(y[i], dy[i], ReluArgs{}) : dy[i];
          const float xhat = (x[i] - stats[c]) * stats[C + c];
          want_dx[i] =
              round_to(dtype, batch_norm_dx(g, xhat, gamma[c] * stats[C + c], static_cast<float>(m),
                                            want_dbeta[c], want_dgamma[c]));
        }
      }
      // The statistics the backward read are the forward's: within a rounding of the host's.
      for (int c = 0; c < C; ++c) {
        EXPECT_NEAR(stats[c], mean[c], 1e-6f * (1.0f + std::fabs(mean[c]))) << "mean " << c;
        EXPECT_NEAR(stats[C + c], inv_std[c], 1e-6f * inv_std[c]) << "1/std " << c;
      }
      expect_close(d_dbeta.download<float>(), want_dbeta, DType::f32, 1e-6f, 1e-6f, "dbeta");
      expect_close(d_dgamma.download<float>(), want_dgamma, DType::f32, 1e-6f, 1e-6f, "dgamma");
      // dx: m * dy - dbeta - xhat * dgamma cancels; bound its error by its terms' size.
      const std::vector<float> dx = from_device(d_dx, dtype);
      int reported = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t c = i % C;
        const float terms = gamma[c] * stats[C + c] / static_cast<float>(m) *
                            (static_cast<float>(m) * std::fabs(dy[i]) + std::fabs(want_dbeta[c]) +
                             4.0f * std::fabs(want_dgamma[c]));
        const float tol = tolerance(dtype, want_dx[i], 1e-7f, 0.0f) + 2e-6f * terms;
        if (!(std::fabs(dx[i] - want_dx[i]) <= tol) && reported++ < 5) {
          ADD_FAILURE() << "dx element " << i << " (row " << i / C << "): got " << dx[i]
                        << ", want " << want_dx[i] << " (tolerance " << tol << ")";
        }
      }

      // Inference: the moving statistics (as the training step left them), which stay.
      params.train = 0;
      forward(device_value(params));
      const std::vector<float> mm = d_moving_mean.download<float>();
      const std::vector<float> mv = d_moving_var.download<float>();
      for (int c = 0; c < C; ++c) {
        const ChannelAffine t = channel_affine(mm[c], mv[c], gamma[c], beta[c], args.epsilon);
        a[c] = t.a;
        b[c] = t.b;
      }
      for (std::size_t i = 0; i < n; ++i) {
        const float v = x[i] * a[i % C] + b[i % C];
        want_y[i] = round_to(dtype, relu ? relu_forward(v, ReluArgs{}) : v);
      }
      expect_close(from_device(d_y, dtype), want_y, dtype, 0.0f, 0.0f, "inference y");
      expect_close(mm, want_mm, DType::f32, 0.0f, 0.0f, "moving mean after inference");
      expect_close(mv, want_mv, DType::f32, 0.0f, 0.0f, "moving variance after inference");
    }
  }
}

// LayerNormalization: rows fewer than, equal to and more than a block's 8 warps, and more than
// the parameter gradients' 64 chunks of 8 rows take in one turn; widths below, at and above a
// warp's 32 lanes; with and without gamma and beta.
TEST_F(Kernels, LayerNormForwardAndBackwardAreTheHostMath) {
  const float epsilon = 1e-3f;
  for (const std::int64_t rows : {3, 8, 37, 1030}) {
    for (const int width : {5, 32, 100}) {
      const auto n = static_cast<std::size_t>(rows * width);
      const std::vector<float> gamma = random_values(width, DType::f32, 0.5f, 1.5f, 51);
      const std::vector<float> beta = random_values(width, DType::f32, -0.5f, 0.5f, 52);
      const DeviceBuffer d_gamma(gamma), d_beta(beta);
      for (const DType dtype : kDTypes) {
        for (const bool affine : {true, false}) {
          SCOPED_TRACE(std::to_string(rows) + " rows of " + std::to_string(width) + ", " +
                       std::string(to_string(dtype)) + (affine ? "" : ", no gamma or beta"));
          std::vector<float> x = random_values(n, dtype, -3.0f, 3.0f, 53);
          for (std::size_t i = 0; i < n; ++i)  // rows with different means
            x[i] = round_to(dtype, x[i] + static_cast<float>(i / width % 5) - 2.0f);
          const std::vector<float> dy = random_values(n, dtype, -1.0f, 1.0f, 54);
          const DeviceBuffer d_x = to_device(x, dtype), d_dy = to_device(dy, dtype);
          DeviceBuffer d_y(n * dtype_bytes(dtype)), d_dx(n * dtype_bytes(dtype));
          DeviceBuffer d_stats(static_cast<std::size_t>(rows) * sizeof(RowStats));
          DeviceBuffer d_dgamma(width * sizeof(float)), d_dbeta(width * sizeof(float));
          DeviceBuffer d_partials(static_cast<std::size_t>(k::layer_norm_partials_floats(width)) *
                                  sizeof(float));
          const float* g = affine ? d_gamma.as<float>() : nullptr;
          k::layer_norm_forward(d_x.as(), d_y.as(), dtype, rows, width, epsilon, g,
                                affine ? d_beta.as<float>() : nullptr, d_stats.as(), nullptr);
          const std::vector<RowStats> stats = d_stats.download<RowStats>();
          std::vector<RowStats> want_stats(static_cast<std::size_t>(rows));
          std::vector<float> want_y(n);
          for (std::int64_t r = 0; r < rows; ++r) {
            const float* row = x.data() + r * width;
            float scale = 0.0f;
            for (int j = 0; j < width; ++j) scale = std::max(scale, std::fabs(row[j]));
            const RowStats s = layer_norm_stats([&](int j) { return row[j]; }, width, epsilon);
            want_stats[r] = s;
            // The lanes sum in another order: a float32 rounding of the row's magnitude.
            EXPECT_NEAR(stats[r].mean, s.mean, 2e-6f * scale) << "row " << r;
            EXPECT_NEAR(stats[r].inv_std, s.inv_std, 1e-5f * s.inv_std) << "row " << r;
            for (int j = 0; j < width; ++j) {
              want_y[r * width + j] = round_to(
                  dtype,
                  layer_norm_value(row[j], s, affine ? gamma[j] : 1.0f, affine ? beta[j] : 0.0f));
            }
          }
          // y is O(1): the statistics' error, a few float32 ulps of it, plus the dtype's rounding.
          expect_close(from_device(d_y, dtype), want_y, dtype, 2e-5f, 2e-5f, "y");

          // Backward from the host's statistics, so that it is checked alone.
          const DeviceBuffer d_want_stats(want_stats);
          k::layer_norm_backward(d_x.as(), d_dy.as(), d_dx.as(), dtype, rows, width, g,
                                 d_want_stats.as(), affine ? d_dgamma.as<float>() : nullptr,
                                 affine ? d_dbeta.as<float>() : nullptr, d_partials.as<float>(),
                                 nullptr);
          const std::vector<float> dx = from_device(d_dx, dtype);
          int reported = 0;
          for (std::int64_t r = 0; r < rows; ++r) {
            const RowStats s = want_stats[r];
            double mg = 0.0, mgx = 0.0, size = 0.0;
            for (int j = 0; j < width; ++j) {
              const double gj = static_cast<double>(dy[r * width + j]) * (affine ? gamma[j] : 1.0f);
              const double xhat = (x[r * width + j] - s.mean) * s.inv_std;
              mg += gj;
              mgx += gj * xhat;
              size += std::fabs(gj) * (1.0 + std::fabs(xhat));
            }
            mg /= width;
            mgx /= width;
            for (int j = 0; j < width; ++j) {
              const std::size_t i = static_cast<std::size_t>(r * width + j);
              const double gj = static_cast<double>(dy[i]) * (affine ? gamma[j] : 1.0f);
              const double xhat = (x[i] - s.mean) * static_cast<double>(s.inv_std);
              const auto want = static_cast<float>(s.inv_std * (gj - mg - xhat * mgx));
              // A float32 rounding of each term and of the row sums the kernel forms.
              const double terms =
                  s.inv_std * (std::fabs(gj) + (1.0 + std::fabs(xhat)) * size / width);
              const double tol = tolerance(dtype, want, 1e-7f, 0.0f) + 4e-6 * terms;
              if (!(std::fabs(dx[i] - want) <= tol) && reported++ < 5) {
                ADD_FAILURE() << "dx row " << r << " column " << j << ": got " << dx[i] << ", want "
                              << want << " (tolerance " << tol << ")";
              }
            }
          }
          if (affine) {
            const std::vector<float> dgamma = d_dgamma.download<float>();
            const std::vector<float> dbeta = d_dbeta.download<float>();
            for (int j = 0; j < width; ++j) {
              double sg = 0.0, sb = 0.0, size = 0.0;
              for (std::int64_t r = 0; r < rows; ++r) {
                const std::size_t i = static_cast<std::size_t>(r * width + j);
                const double xhat =
                    (x[i] - want_stats[r].mean) * static_cast<double>(want_stats[r].inv_std);
                sg += dy[i] * xhat;
                sb += dy[i];
                size += std::fabs(dy[i]) * (1.0 + std::fabs(xhat));
              }
              EXPECT_NEAR(dgamma[j], sg, 1e-6 * size * 4) << "dgamma " << j;
              EXPECT_NEAR(dbeta[j], sb, 1e-6 * size) << "dbeta " << j;
            }
          }
        }
      }
    }
  }
}

// Embedding: ids outside the vocabulary read its nearest row (engine/ops/embedding.h), repeated
// ids add their gradients (dy on a grid: the sums are exact in any order), rows no id names get
// zero.
TEST_F(Kernels, EmbeddingGathersRowsAndAddsGradientsBack) {
  const std::int64_t vocabulary = 11;
  const int width = 37;
  const std::vector<float> ids = {0.0f,  3.0f,   3.0f,  10.0f,
                                  11.0f, 250.0f, -2.0f, std::numeric_limits<float>::quiet_NaN(),
                                  2.75f, 3.0f,   7.0f};
  const auto positions = static_cast<std::int64_t>(ids.size());
  const std::vector<float> table =
      random_values(static_cast<std::size_t>(vocabulary * width), DType::f32, -1.0f, 1.0f, 61);
  const DeviceBuffer d_ids(ids), d_table(table);
  for (const DType dtype : kDTypes) {
    SCOPED_TRACE(to_string(dtype));
    const auto n = static_cast<std::size_t>(positions * width);
    DeviceBuffer d_y(n * dtype_bytes(dtype));
    k::embedding_forward(d_ids.as<float>(), d_table.as<float>(), d_y.as(), dtype, positions,
                         vocabulary, width, nullptr);
    std::vector<float> want_y(n);
    for (std::int64_t p = 0; p < positions; ++p)
      for (int j = 0; j < width; ++j)
        want_y[p * width + j] =
            round_to(dtype, table[embedding_row(ids[p], vocabulary) * width + j]);
    expect_close(from_device(d_y, dtype), want_y, dtype, 0.0f, 0.0f, "y");

    const std::vector<float> dy = grid_values(n, 2, 2, 62);
    const DeviceBuffer d_dy = to_device(dy, dtype);
    DeviceBuffer d_dtable(static_cast<std::size_t>(vocabulary * width) * sizeof(float));
    k::embedding_backward(d_ids.as<float>(), d_dy.as(), dtype, d_dtable.as<float>(), positions,
                          vocabulary, width, nullptr);
    std::vector<float> want(static_cast<std::size_t>(vocabulary * width), 0.0f);
    for (std::int64_t p = 0; p < positions; ++p)
      for (int j = 0; j < width; ++j)
        want[embedding_row(ids[p], vocabulary) * width + j] += dy[p * width + j];
    expect_close(d_dtable.download<float>(), want, DType::f32, 0.0f, 0.0f, "dtable");
  }
}

// PositionEmbedding: every sample reads the table's first per_sample values; backward sums the
// samples' gradients there and zeroes the rest of the table (positions beyond the sequence).
TEST_F(Kernels, PositionEmbeddingBroadcastsAndSumsOverTheBatch) {
  const int samples = 5;
  const std::int64_t per_sample = 9 * 31, table_elements = 16 * 31;
  const std::vector<float> table =
      random_values(static_cast<std::size_t>(table_elements), DType::f32, -1.0f, 1.0f, 71);
  const DeviceBuffer d_table(table);
  for (const DType dtype : kDTypes) {
    SCOPED_TRACE(to_string(dtype));
    const auto n = static_cast<std::size_t>(samples * per_sample);
    DeviceBuffer d_y(n * dtype_bytes(dtype));
    k::position_embedding_forward(d_table.as<float>(), d_y.as(), dtype, samples, per_sample,
                                  nullptr);
    std::vector<float> want_y(n);
    for (std::size_t i = 0; i < n; ++i) want_y[i] = round_to(dtype, table[i % per_sample]);
    expect_close(from_device(d_y, dtype), want_y, dtype, 0.0f, 0.0f, "y");

    const std::vector<float> dy = grid_values(n, 3, 3, 72);
    const DeviceBuffer d_dy = to_device(dy, dtype);
    DeviceBuffer d_dtable(static_cast<std::size_t>(table_elements) * sizeof(float));
    k::position_embedding_backward(d_dy.as(), dtype, d_dtable.as<float>(), samples, per_sample,
                                   table_elements, nullptr);
    std::vector<float> want(static_cast<std::size_t>(table_elements), 0.0f);
    for (std::size_t i = 0; i < n; ++i) want[i % per_sample] += dy[i];
    expect_close(d_dtable.download<float>(), want, DType::f32, 0.0f, 0.0f, "dtable");
  }
}

}  // namespace
}  // namespace mixlab::cuda
