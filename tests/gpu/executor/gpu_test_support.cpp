#include "tests/gpu/executor/gpu_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace mixlab::gpu_test {

Backend& cuda_backend() {
  // Created on first use, after the test checked that the backend is available.
  static const std::unique_ptr<Backend> backend = [] {
    BackendChoice choice = make_backend("cuda:0", 0, /*fallback=*/false);
    return std::move(choice.backend);
  }();
  return *backend;
}

Backend& cpu_backend() {
  static const std::unique_ptr<Backend> backend = make_cpu_backend(0);
  return *backend;
}

std::string policy_refused_here(Policy policy) {
  const PolicySupport support = policy_support(cuda_backend().device(), policy);
  return support.level == Support::unsupported ? support.reason : std::string();
}

bool on_cudasim() {
  return cuda_backend().device().name.find("(cudasim)") != std::string::npos;
}

std::vector<PolicyCase> all_policies() {
  return {{"float32", Policy::float32, false},
          {"tf32", Policy::float32, true},
          {"mixed_float16", Policy::mixed_float16, false},
          {"mixed_bfloat16", Policy::mixed_bfloat16, false}};
}

double op_tolerance(const PolicyCase& p) {
  if (p.policy != Policy::float32) return 1e-2;
  return p.tf32 ? 1e-3 : 1e-5;
}

double chain_tolerance(const PolicyCase& p, std::size_t layers) {
  return op_tolerance(p) * static_cast<double>(std::max<std::size_t>(layers, 1));
}

bool expect_tensors_close(std::span<const float> got, std::span<const float> want, double tol,
                          const std::string& what, bool each_element) {
  EXPECT_EQ(got.size(), want.size()) << what << ": sizes differ";
  if (got.size() != want.size()) return false;
  double diff2 = 0, want2 = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    diff2 += d * d;
    want2 += static_cast<double>(want[i]) * want[i];
  }
  const double rms = want.empty() ? 0.0 : std::sqrt(want2 / static_cast<double>(want.size()));
  bool ok = true;
  // NaN compares false: a non-finite result fails both checks.
  if (!(std::sqrt(diff2) <= tol * std::sqrt(want2))) {
    ADD_FAILURE() << what << ": norm-relative error " << std::sqrt(diff2) / std::sqrt(want2)
                  << " over the tolerance " << tol << " (" << got.size() << " elements)";
    ok = false;
  }
  int reported = 0;
  for (std::size_t i = 0; each_element && i < got.size(); ++i) {
    const double bound = 4 * tol * (std::abs(static_cast<double>(want[i])) + rms);
    if (!(std::abs(static_cast<double>(got[i]) - want[i]) <= bound)) {
      if (reported++ < 5) {
        ADD_FAILURE() << what << "[" << i << "]: CUDA " << got[i] << ", CPU " << want[i]
                      << " (bound " << bound << ")";
      }
      ok = false;
    }
  }
  return ok;
}

}  // namespace mixlab::gpu_test
