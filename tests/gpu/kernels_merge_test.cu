// MixLab's CUDA merge kernels (kernels_merge.cu) against host loops of the same shared math
// (engine/ops/merge.h), per dtype, on random data; exact, as both sides do the same IEEE
// operations in float32 and round once to the dtype (--fmad=false). Skipped without a CUDA
// device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/backend/cuda/kernels.h"
#include "engine/ops/merge.h"
#include "tests/gpu/kernels_test_support.h"

namespace mixlab::cuda {
namespace {

namespace k = kernels;
using namespace test;

constexpr MergeOp kElementwise[] = {MergeOp::add, MergeOp::subtract, MergeOp::multiply,
                                    MergeOp::average, MergeOp::maximum};

TEST_F(Kernels, MergesForwardAndBackwardAsTheHostMath) {
  constexpr std::size_t n = 5003;
  for (const DType dtype : kDTypes) {
    for (const MergeOp op : kElementwise) {
      for (const int count : {2, 3, k::kMaxMergeInputs}) {
        if (op == MergeOp::subtract && count != 2) continue;
        SCOPED_TRACE(std::string(to_string(op)) + " of " + std::to_string(count) + " in " +
                     std::string(to_string(dtype)));
        std::vector<std::vector<float>> xs;
        std::vector<DeviceBuffer> d_xs;
        std::vector<const void*> ptrs;
        for (int i = 0; i < count; ++i) {
          xs.push_back(random_values(n, dtype, -2.0f, 2.0f, 10u + static_cast<unsigned>(i)));
          if (op == MergeOp::maximum && i == 1) {
            for (std::size_t e = 0; e < n; e += 7) xs[1][e] = xs[0][e];  // ties: the first wins
          }
          d_xs.push_back(to_device(xs.back(), dtype));
        }
        for (const DeviceBuffer& b : d_xs) ptrs.push_back(b.as());
        DeviceBuffer d_y(n * dtype_bytes(dtype));
        k::merge_forward(op, ptrs.data(), count, d_y.as(), dtype, n, nullptr);
        std::vector<float> y(n);
        for (std::size_t e = 0; e < n; ++e) {
          float acc = 0.0f;
          for (int i = 0; i < count; ++i) acc = merge_step(op, acc, xs[i][e], i, count);
          y[e] = round_to(dtype, acc);
        }
        expect_close(from_device(d_y, dtype), y, dtype, 0.0f, 0.0f, "forward");

        const std::vector<float> dy = random_values(n, dtype, -1.0f, 1.0f, 99);
        const DeviceBuffer d_dy = to_device(dy, dtype);
        const DeviceBuffer d_yy = to_device(y, dtype);
        for (int which = 0; which < count; ++which) {
          DeviceBuffer d_dx(n * dtype_bytes(dtype));
          k::merge_backward(op, ptrs.data(), count, d_yy.as(), d_dy.as(), d_dx.as(), which, dtype,
                            n, nullptr);
          std::vector<float> want(n);
          for (std::size_t e = 0; e < n; ++e) {
            float v = 0.0f;
            if (op == MergeOp::multiply) {
              v = dy[e];
              for (int j = 0; j < count; ++j) {
                if (j != which) v = multiply_grad_step(v, xs[j][e]);
              }
            } else if (op == MergeOp::maximum) {
              bool first = true;
              for (int j = 0; j < which; ++j) first = first && xs[j][e] != y[e];
              v = maximum_grad(dy[e], xs[which][e], y[e], first);
            } else {
              v = merge_grad_linear(op, dy[e], which, count);
            }
            want[e] = round_to(dtype, v);
          }
          expect_close(from_device(d_dx, dtype), want, dtype, 0.0f, 0.0f,
                       "gradient of input " + std::to_string(which));
        }
      }
    }
  }
}

TEST_F(Kernels, AccumulateAddsInTheTensorsDtype) {
  constexpr std::size_t n = 4099;
  for (const DType dtype : kDTypes) {
    const std::vector<float> a = random_values(n, dtype, -3.0f, 3.0f, 1);
    const std::vector<float> b = random_values(n, dtype, -3.0f, 3.0f, 2);
    const DeviceBuffer d_a = to_device(a, dtype);
    DeviceBuffer d_b = to_device(b, dtype);
    k::accumulate(d_a.as(), d_b.as(), dtype, n, nullptr);
    std::vector<float> want(n);
    for (std::size_t e = 0; e < n; ++e) want[e] = round_to(dtype, b[e] + a[e]);
    expect_close(from_device(d_b, dtype), want, dtype, 0.0f, 0.0f,
                 std::string("accumulate in ") + std::string(to_string(dtype)));
  }
}

}  // namespace
}  // namespace mixlab::cuda
