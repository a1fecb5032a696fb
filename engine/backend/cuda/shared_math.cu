// Compiles the math written once for the CPU and CUDA (engine/core/half.h, engine/ops/*.h) as
// device code for every target architecture, so a change that breaks the device side fails the
// build here, not in the CUDA backend's first test on a GPU.
#include "engine/core/half.h"
#include "engine/ops/activation.h"
#include "engine/ops/dropout.h"
#include "engine/ops/loss.h"
#include "engine/ops/optimizer.h"

namespace mixlab::cuda {

__global__ void shared_math_kernel(float* data, int n, mixlab::AdamUpdate adam,
                                   mixlab::DropoutMask mask) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float w = data[i], m = 0.0f, v = 0.0f;
  adam(w, m, v, mixlab::activation_backward(mixlab::ActivationFn::gelu, w, 0.0f, 1.0f));
  w = mixlab::round_to_f16(w) + mixlab::round_to_bf16(m) * mask.factor(static_cast<unsigned>(i));
  mixlab::RowLoss r = mixlab::softmax_crossentropy_row(data, n < 4 ? n : 4, 0, 1.0f, nullptr);
  data[i] = w + mixlab::activation_forward(mixlab::ActivationFn::sigmoid, v) + r.loss;
}

}  // namespace mixlab::cuda
