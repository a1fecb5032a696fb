// MixLab's attention softmax kernels (kernels_sequence.cu), which run between the unfused
// attention's cuBLASLt products, against host loops of the shared math (engine/ops/attention.h's
// attention_softmax_row, and the softmax's backward as the CPU backend computes it), per dtype,
// with and without the causal mask. The kernels reduce a row in another order than the host
// loop: within a float32 rounding of the result before its one rounding to the dtype. Skipped
// without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/backend/cuda/kernels.h"
#include "engine/ops/attention.h"
#include "tests/gpu/kernels_test_support.h"

namespace mixlab::cuda {
namespace {

namespace k = kernels;
using namespace test;

TEST_F(Kernels, AttentionSoftmaxAndItsBackwardAreTheHostMath) {
  k::AttentionShape shape;
  shape.batch = 3;
  shape.heads = 2;
  shape.key_dim = 16;
  shape.value_dim = 16;
  for (const int steps : {5, 130, 700}) {  // a row below, at and well above a block's threads
    shape.steps = steps;
    const auto rows = static_cast<std::size_t>(shape.batch * shape.heads * steps);
    const std::size_t n = rows * static_cast<std::size_t>(steps);
    const float scale = 1.0f / std::sqrt(16.0f);
    for (const DType dtype : kDTypes) {
      for (const bool causal : {false, true}) {
        shape.causal = causal;
        SCOPED_TRACE(std::to_string(steps) + " steps, " + std::string(to_string(dtype)) +
                     (causal ? ", causal" : ""));
        const std::vector<float> scores = random_values(n, dtype, -8.0f, 8.0f, 7);
        const DeviceBuffer d_scores = to_device(scores, dtype);
        k::attention_softmax(d_scores.as(), dtype, shape, nullptr);
        const std::vector<float> probs = from_device(d_scores, dtype);
        std::vector<float> want(scores);
        for (std::size_t r = 0; r < rows; ++r) {
          float* row = want.data() + r * static_cast<std::size_t>(steps);
          attention_softmax_row(row, steps, static_cast<int>(r % static_cast<std::size_t>(steps)),
                                scale, causal);
          for (int j = 0; j < steps; ++j) row[j] = round_to(dtype, row[j]);
        }
        expect_close(probs, want, dtype, 1e-5f, 1e-7f, "weights");
        // Masked weights are exactly 0.
        if (causal) {
          for (std::size_t r = 0; r < rows; ++r) {
            const int i = static_cast<int>(r % static_cast<std::size_t>(steps));
            for (int j = i + 1; j < steps; ++j) {
              ASSERT_EQ(probs[r * static_cast<std::size_t>(steps) + static_cast<std::size_t>(j)],
                        0.0f)
                  << "row " << r << ", key " << j;
            }
          }
        }

        // Backward from the kernel's own weights: dS = P (dP - P.dP) * scale.
        const std::vector<float> dprobs = random_values(n, DType::f32, -1.0f, 1.0f, 8);
        const DeviceBuffer d_dprobs(dprobs);
        DeviceBuffer d_dscores(n * dtype_bytes(dtype));
        k::attention_softmax_backward(d_scores.as(), d_dprobs.as<float>(), d_dscores.as(), dtype,
                                      shape, nullptr);
        // dP in the layer's dtype (as Keras's einsum's gradient), dS stored in it.
        std::vector<float> want_ds(n);
        for (std::size_t r = 0; r < rows; ++r) {
          const std::size_t at = r * static_cast<std::size_t>(steps);
          double dot = 0.0;
          for (int j = 0; j < steps; ++j)
            dot += static_cast<double>(probs[at + j]) * round_to(dtype, dprobs[at + j]);
          for (int j = 0; j < steps; ++j) {
            const float dp = round_to(dtype, dprobs[at + j]);
            want_ds[at + j] =
                round_to(dtype, probs[at + j] * (dp - static_cast<float>(dot)) * scale);
          }
        }
        expect_close(from_device(d_dscores, dtype), want_ds, dtype, 1e-4f, 1e-5f,
                     "scores' gradient");
      }
    }
  }
}

}  // namespace
}  // namespace mixlab::cuda
