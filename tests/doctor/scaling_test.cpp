// Scaling layers timed on one device to another (issue 28, section 2): where the kernels are of
// the same kind, a layer timed at twice its model here is predicted at twice its model there
// (compute by the roofs, memory by the bandwidths, the target's launches); where they differ
// (another architecture's GEMMs, the CPU's kernels against a GPU's) the target's model stands
// and says why.
#include "engine/doctor/scaling.h"

#include <gtest/gtest.h>

#include "engine/doctor/diagnosis.h"
#include "tests/doctor/doctor_test_support.h"

namespace mixlab::doctor {
namespace {

using test::model;

constexpr const char* kMlp = R"({"name": "m", "input": {"shape": [256]}, "layers": [
    {"type": "Dense", "units": 256, "activation": "relu"}, {"type": "Dropout", "rate": 0.1},
    {"type": "Dense", "units": 16}]})";

RunConfig run_at(int batch) {
  RunConfig run;
  run.batch_size = batch;
  run.optimizer = default_optimizer(OptimizerKind::sgd);
  return run;
}

// `device`'s prediction with every layer timed at `factor` times its model.
StepCost timed_at(const ModelSpec& spec, Policy policy, const DeviceProfile& device,
                  double factor) {
  StepCost c = predict_step(spec, policy, run_at(256), device);
  std::vector<double> fwd, bwd;
  for (int l = 0; l < static_cast<int>(spec.layers.size()); ++l) {
    fwd.push_back(factor * c.layer_seconds(l, false) * 1e3);
    bwd.push_back(factor * c.layer_seconds(l, true) * 1e3);
  }
  apply_layer_times(c, fwd, bwd, factor * c.seconds(CostPhase::optimizer) * 1e3, "timed");
  return c;
}

TEST(Scaling, SameKernelsCarryTheTimedEfficiencyToTheTarget) {
  const ModelSpec spec = model(kMlp);
  const DeviceProfile here = test::round_gpu();
  DeviceProfile there = test::round_gpu();  // the same architecture, twice the roofs
  there.name = "Twice GPU";
  there.peak.float32 *= 2;
  there.peak.float16_acc32 *= 2;
  there.bandwidth_bytes_per_s *= 2;
  const StepCost modelled = predict_step(spec, Policy::mixed_float16, run_at(256), there);
  StepCost scaled = modelled;
  scale_layer_times(scaled, timed_at(spec, Policy::mixed_float16, here, 2.0), here, there);
  for (int l = 0; l < 3; ++l) {
    EXPECT_EQ(scaled.layer_source(l), "scaled") << l;
    EXPECT_NEAR(scaled.layer_seconds(l, false), 2.0 * modelled.layer_seconds(l, false),
                1e-12)
        << l;
    EXPECT_NEAR(scaled.layer_model_seconds(l),
                modelled.layer_seconds(l, false) + modelled.layer_seconds(l, true), 1e-12);
  }
  EXPECT_TRUE(scaled.modelled_why.empty());
  EXPECT_NE(scaled.scaled_source.find("3 scaled, 0 modelled"), std::string::npos)
      << scaled.scaled_source;
}

TEST(Scaling, AnotherArchitecturesGemmsAndTheCpusKernelsAreModelled) {
  const ModelSpec spec = model(kMlp);
  const DeviceProfile here = test::round_gpu();  // sm_80
  DeviceProfile hopper = test::round_gpu();
  hopper.name = "Hopper-like";
  hopper.compute_capability = "9.0";
  const StepCost modelled = predict_step(spec, Policy::mixed_float16, run_at(256), hopper);
  StepCost c = modelled;
  scale_layer_times(c, timed_at(spec, Policy::mixed_float16, here, 3.0), here, hopper);
  // The Dense layers' GEMMs: cuBLAS's sm_90 kernels are not its sm_80 ones.
  EXPECT_EQ(c.layer_source(0), "modelled");
  ASSERT_TRUE(c.modelled_why.contains(0));
  EXPECT_NE(c.modelled_why.at(0).find("tensor-core GEMMs (sm_90) on Hopper-like"),
            std::string::npos)
      << c.modelled_why.at(0);
  EXPECT_DOUBLE_EQ(c.layer_seconds(0, false), modelled.layer_seconds(0, false));
  // Dropout is a memory-bound kernel on both: scaled by the bandwidths.
  EXPECT_EQ(c.layer_source(1), "scaled");
  EXPECT_NEAR(c.layer_seconds(1, false), 3.0 * modelled.layer_seconds(1, false), 1e-12);

  // Timed on a CPU: nothing of it carries to a GPU.
  const DeviceProfile cpu = test::round_cpu();
  StepCost from_cpu = modelled;
  scale_layer_times(from_cpu, timed_at(spec, Policy::mixed_float16, cpu, 1.0), cpu, hopper);
  for (int l = 0; l < 3; ++l) EXPECT_EQ(from_cpu.layer_source(l), "modelled") << l;
  EXPECT_NE(from_cpu.modelled_why.at(1).find("CPU kernels"), std::string::npos)
      << from_cpu.modelled_why.at(1);
  EXPECT_DOUBLE_EQ(from_cpu.step_s(), modelled.step_s());
}

TEST(Scaling, DiagnoseScalesBothPoliciesFromATiming) {
  DiagnosisInput in;
  in.spec = model(kMlp);
  in.device = test::round_gpu();
  in.device.name = "Target";
  in.run = run_at(256);
  in.mixed = Policy::mixed_float16;
  const DeviceProfile here = test::round_gpu();
  Measurement times;
  for (auto [run, policy] : {std::pair{&times.float32, Policy::float32},
                             std::pair{&times.mixed, Policy::mixed_float16}}) {
    const StepCost c = predict_step(in.spec, policy, in.run, here);
    run->policy = policy;
    for (int l = 0; l < 3; ++l) {
      run->layer_forward_ms.push_back(4.0 * c.layer_seconds(l, false) * 1e3);
      run->layer_backward_ms.push_back(4.0 * c.layer_seconds(l, true) * 1e3);
    }
  }
  const Diagnosis plain = diagnose(in);
  const Diagnosis d = diagnose(in, std::nullopt, std::nullopt, ScaleFrom{here, times});
  EXPECT_FALSE(d.float32.scaled_source.empty());
  EXPECT_EQ(d.mixed.layer_source(0), "scaled");
  EXPECT_GT(d.mixed.step_s(), plain.mixed.step_s());
  EXPECT_LT(d.mixed.step_s(), 4.0 * plain.mixed.step_s());
  EXPECT_NEAR(d.float32.layer_seconds(0, false), 4.0 * plain.float32.layer_seconds(0, false),
              1e-12);
}

}  // namespace
}  // namespace mixlab::doctor
