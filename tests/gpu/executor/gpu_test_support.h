// What the CUDA executor tests share: the skip when no CUDA backend can run here, the backends,
// the policies they run under and the tolerance each gets, and a tensor comparison that says
// where two tensors differ.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/backend.h"

namespace mixlab::gpu_test {

// Every test starts with this: a machine without a usable CUDA backend reports the test as
// skipped (ctest: SKIP_REGULAR_EXPRESSION), with the reason.
#define MIXLAB_SKIP_WITHOUT_CUDA()                                                                 \
  do {                                                                                             \
    if (const std::string reason = ::mixlab::cuda_backend_unavailable_reason(); !reason.empty()) { \
      GTEST_SKIP() << "no usable CUDA backend: " << reason;                                        \
    }                                                                                              \
  } while (0)

// The first GPU's backend, created once per test binary (cuBLAS and cuDNN handles are slow to
// create); and the CPU reference on every core.
Backend& cuda_backend();
Backend& cpu_backend();

// A precision setting of a run: the Keras policy, and TF32 for float32 on the GPU.
struct PolicyCase {
  std::string name;  // "float32", "tf32", "mixed_float16", "mixed_bfloat16"
  Policy policy = Policy::float32;
  bool tf32 = false;
};
std::vector<PolicyCase> all_policies();

// The relative tolerance of one CUDA op against the CPU's under a policy: float32 1e-5 (both
// round in float32; only the summation order differs), TF32 1e-3 (10-bit mantissa inputs),
// float16 and bfloat16 1e-2 (16-bit outputs: one rounding apart is up to 2^-8 for bfloat16).
double op_tolerance(const PolicyCase& p);

// Checks `got` against `want` with a relative tolerance `tol`, two ways:
// - as a whole: ||got - want||_2 <= tol * ||want||_2, the norm-relative error that matters for
//   training and that a single bad element cannot hide in, nor a near-zero element inflate;
// - element by element: |got_i - want_i| <= 4 * tol * (|want_i| + rms(want)): relative for the
//   large elements, and absolute at the tensor's own scale for elements near zero (a sum of
//   terms that cancel carries the rounding of its terms, not of its tiny result).
// Reports the first few elements out of tolerance. Returns whether both held.
bool expect_tensors_close(std::span<const float> got, std::span<const float> want, double tol,
                          const std::string& what);

}  // namespace mixlab::gpu_test
