// What the doctor's fuzz targets (gpu_profiles, calibration_cache) ask of every device profile
// they accept: that the cost model predicts a small convolutional model's step, under float32
// and each mixed policy, in a time that is finite and positive, as is its roofline bound.
#pragma once

#include <cmath>
#include <exception>
#include <string>

#include "engine/core/error.h"
#include "engine/doctor/cost_model.h"
#include "engine/ops/optimizer.h"
#include "engine/spec/model_spec.h"
#include "fuzz/fuzz_support.h"

namespace mixlab::fuzz {

inline const ModelSpec& small_conv_model() {
  static const ModelSpec spec = parse_model_json(
      R"({"name": "fuzz", "input": {"shape": [8, 8, 3]}, "layers": [
          {"type": "Conv2D", "filters": 8, "kernel_size": 3, "activation": "relu"},
          {"type": "MaxPooling2D"}, {"type": "Flatten"}, {"type": "Dense", "units": 10},
          {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})",
      "fuzz model");
  return spec;
}

inline void check_profile_predicts(const doctor::DeviceProfile& profile, const char* what) {
  for (const Policy policy : {Policy::float32, Policy::mixed_float16, Policy::mixed_bfloat16}) {
    double step_s = 0.0, bound_s = 0.0;
    try {
      RunConfig run;
      run.batch_size = 32;
      run.optimizer = default_optimizer(OptimizerKind::adam);
      step_s = doctor::predict_step(small_conv_model(), policy, run, profile).step_s();
      bound_s = doctor::roofline_bound_s(small_conv_model(), policy, run, profile);
    } catch (const std::exception& e) {
      unexpected_exception(("predict_step on " + std::string(what)).c_str(), e);
    }
    if (!std::isfinite(step_s) || !(step_s > 0) || !std::isfinite(bound_s) || !(bound_s > 0)) {
      finding(std::string(what) + " '" + profile.name + "' predicts a step of " +
              std::to_string(step_s) + " s (bound " + std::to_string(bound_s) + " s) under " +
              std::string(to_string(policy)));
    }
  }
}

}  // namespace mixlab::fuzz
