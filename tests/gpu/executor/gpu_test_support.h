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

// Why the CUDA backend refuses `policy` on this GPU (bfloat16 below compute capability 8.0: the
// one device/policy rule), empty where it runs it. A test of a refused policy skips with it.
std::string policy_refused_here(Policy policy);
#define MIXLAB_SKIP_REFUSED_POLICY(policy)                                                       \
  do {                                                                                           \
    if (const std::string why = ::mixlab::gpu_test::policy_refused_here(policy); !why.empty()) { \
      GTEST_SKIP() << why;                                                                       \
    }                                                                                            \
  } while (0)

// The first GPU's backend, created once per test binary (cuBLAS and cuDNN handles are slow to
// create); and the CPU reference on every core.
Backend& cuda_backend();
Backend& cpu_backend();

// Whether the CUDA backend is cudasim's emulation (tests/gpu/sim: the sim.* tests), whose cuDNN
// has no engine for a graph: cuDNN's fused attention runs on a GPU only.
bool on_cudasim();

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
// The same for a chain of `layers` layers: each rounds its output forward and its gradient
// backward, and those errors add (at worst) from layer to layer: op_tolerance(p) * layers.
// Measured on an H200 for the 10-layer SmallConvnet case: TF32 5.0e-3 and bfloat16 3.4e-2 at
// the worst tensor (the first Conv2D's kernel gradient), float16 under 1e-2, float32 under 1e-5.
double chain_tolerance(const PolicyCase& p, std::size_t layers);

// Checks `got` against `want` with a relative tolerance `tol`, two ways:
// - as a whole: ||got - want||_2 <= tol * ||want||_2, the norm-relative error that matters for
//   training and that a single bad element cannot hide in, nor a near-zero element inflate;
// - element by element: |got_i - want_i| <= 4 * tol * (|want_i| + rms(want)): relative for the
//   large elements, and absolute at the tensor's own scale for elements near zero (a sum of
//   terms that cancel carries the rounding of its terms, not of its tiny result).
// Reports the first few elements out of tolerance. Returns whether both held.
// each_element = false checks the norm alone: for a chain of layers, where a rounding may move
// a pooled maximum or flip a ReLU and so move one gradient element by a whole term (seen on an
// H200: one of 1536 input-gradient elements of the TF32 SmallConvnet), which the norm bounds.
bool expect_tensors_close(std::span<const float> got, std::span<const float> want, double tol,
                          const std::string& what, bool each_element = true);

}  // namespace mixlab::gpu_test
