// The one rule for what a device runs under each policy (engine/core/device_info.h), over a
// table of device descriptions: CPUs at every oneDNN isa level, and GPUs of compute capability
// 6.1, 7.5 (with and without tensor cores), 8.0, 8.9 and 9.0. Both backends' compile gates, the
// run panel and mixlab-cli ask it; their agreement is tested where each lives (cpu backend
// below, ui.run_panel, cli.Cli.DevicesJsonGivesEveryPolicy).
#include <gtest/gtest.h>

#include <tuple>

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/core/device_info.h"
#include "engine/core/error.h"
#include "engine/ops/loss_scale.h"

namespace mixlab {
namespace {

DeviceInfo cpu(CpuIsa isa) {
  DeviceInfo d;
  d.kind = "cpu";
  d.name = "Test CPU";
  d.threads = 4;
  d.isa = isa;
  return d;
}

DeviceInfo gpu(const std::string& name, int major, int minor) {
  return gpu_device_info(name, major, minor, std::int64_t{8} << 30);
}

struct Row {
  DeviceInfo device;
  Support float32, float16, bfloat16, float8;
  Policy comparison;
  bool tensor_cores;
};

const std::vector<Row>& table() {
  using S = Support;
  using P = Policy;
  static const std::vector<Row> rows = {
      {cpu(CpuIsa::baseline), S::native, S::emulated, S::emulated, S::emulated, P::mixed_bfloat16,
       false},
      {cpu(CpuIsa::avx2), S::native, S::emulated, S::emulated, S::emulated, P::mixed_bfloat16,
       false},
      {cpu(CpuIsa::avx512_core), S::native, S::emulated, S::emulated, S::emulated,
       P::mixed_bfloat16, false},
      {cpu(CpuIsa::avx512_core_bf16), S::native, S::emulated, S::native, S::emulated,
       P::mixed_bfloat16, false},
      {cpu(CpuIsa::avx512_core_amx), S::native, S::emulated, S::native, S::emulated,
       P::mixed_bfloat16, false},
      {gpu("NVIDIA GeForce GTX 1080", 6, 1), S::unsupported, S::unsupported, S::unsupported,
       S::unsupported, P::mixed_float16, false},
      {gpu("NVIDIA GeForce GTX 1660 Ti", 7, 5), S::native, S::native, S::unsupported,
       S::unsupported, P::mixed_float16, false},
      {gpu("NVIDIA GeForce RTX 2060", 7, 5), S::native, S::native, S::unsupported, S::unsupported,
       P::mixed_float16, true},
      {gpu("NVIDIA A100-SXM4-80GB", 8, 0), S::native, S::native, S::native, S::unsupported,
       P::mixed_bfloat16, true},
      // FP8 tensor cores from 8.9: the CUDA backend's FP8 GEMMs.
      {gpu("NVIDIA GeForce RTX 4090", 8, 9), S::native, S::native, S::native, S::native,
       P::mixed_bfloat16, true},
      {gpu("NVIDIA H200", 9, 0), S::native, S::native, S::native, S::native, P::mixed_bfloat16,
       true},
  };
  return rows;
}

std::string label(const DeviceInfo& d) {
  return d.name + (d.is_gpu() ? " " + d.compute_capability : " " + std::string(to_string(d.isa)));
}

TEST(PolicySupport, EveryDeviceOfTheTable) {
  for (const Row& row : table()) {
    SCOPED_TRACE(label(row.device));
    EXPECT_EQ(policy_support(row.device, Policy::float32).level, row.float32);
    EXPECT_EQ(policy_support(row.device, Policy::mixed_float16).level, row.float16);
    EXPECT_EQ(policy_support(row.device, Policy::mixed_bfloat16).level, row.bfloat16);
    EXPECT_EQ(policy_support(row.device, Policy::mixed_float8).level, row.float8);
    EXPECT_EQ(comparison_mixed_policy(row.device), row.comparison);
    EXPECT_EQ(row.device.tensor_cores, row.tensor_cores);
  }
}

TEST(PolicySupport, WhatIsNotNativeSaysWhyAndNamesTheGpu) {
  for (const Row& row : table()) {
    for (const Policy p : kAllPolicies) {
      SCOPED_TRACE(label(row.device) + " " + std::string(to_string(p)));
      const PolicySupport s = policy_support(row.device, p);
      if (s.level != Support::native) {
        EXPECT_FALSE(s.reason.empty());
        if (row.device.is_gpu()) {
          EXPECT_NE(s.reason.find(row.device.name), std::string::npos);
        }
      }
    }
  }
  // Native with a caution: float16 on a GPU without tensor cores.
  const PolicySupport gtx =
      policy_support(gpu("NVIDIA GeForce GTX 1660 SUPER", 7, 5), Policy::mixed_float16);
  EXPECT_EQ(gtx.level, Support::native);
  EXPECT_NE(gtx.reason.find("no tensor cores"), std::string::npos) << gtx.reason;
  EXPECT_TRUE(policy_support(gpu("NVIDIA GeForce RTX 2060", 7, 5), Policy::mixed_float16)
                  .reason.empty());
  // On an AVX2 CPU, bf16 is MixLab's emulation, and the message says so.
  const PolicySupport avx2 = policy_support(cpu(CpuIsa::avx2), Policy::mixed_bfloat16);
  EXPECT_NE(avx2.reason.find("emulates bf16"), std::string::npos) << avx2.reason;
  // mixed_float8: emulated on the CPU; below 8.9 the GPU has no FP8 tensor cores; from 8.9 the
  // CUDA backend runs it on them.
  const PolicySupport fp8_cpu = policy_support(cpu(CpuIsa::avx2), Policy::mixed_float8);
  EXPECT_NE(fp8_cpu.reason.find("emulated on the CPU"), std::string::npos) << fp8_cpu.reason;
  const PolicySupport a100 =
      policy_support(gpu("NVIDIA A100-SXM4-80GB", 8, 0), Policy::mixed_float8);
  EXPECT_NE(a100.reason.find("compute capability 8.9"), std::string::npos) << a100.reason;
  EXPECT_NE(a100.reason.find("use mixed_bfloat16,"), std::string::npos) << a100.reason;
  const PolicySupport t4 = policy_support(gpu("Tesla T4", 7, 5), Policy::mixed_float8);
  EXPECT_NE(t4.reason.find("or mixed_float16"), std::string::npos) << t4.reason;
  for (const auto& [name, major, minor] :
       {std::tuple{"NVIDIA H200", 9, 0}, std::tuple{"NVIDIA GeForce RTX 4090", 8, 9}}) {
    const PolicySupport fp8 = policy_support(gpu(name, major, minor), Policy::mixed_float8);
    EXPECT_EQ(fp8.level, Support::native) << name;
    EXPECT_TRUE(fp8.reason.empty()) << fp8.reason;
  }
}

TEST(PolicySupport, GpuDescriptionsComeFromOneBuilder) {
  const DeviceInfo d = gpu_device_info("NVIDIA GeForce RTX 3060", 8, 6, 12884901888);
  EXPECT_EQ(d.kind, "cuda");
  EXPECT_EQ(d.compute_capability, "8.6");
  EXPECT_DOUBLE_EQ(compute_capability_value(d), 8.6);
  EXPECT_TRUE(d.tensor_cores);
  EXPECT_EQ(d.memory_bytes, 12884901888);
  EXPECT_FALSE(gpu_device_info("NVIDIA GeForce GTX 1650", 7, 5, 0).tensor_cores);
  EXPECT_FALSE(gpu_device_info("Tesla P100-PCIE-16GB", 6, 0, 0).tensor_cores);
  EXPECT_TRUE(gpu_device_info("Tesla V100-SXM2-16GB", 7, 0, 0).tensor_cores);
  EXPECT_EQ(compute_capability_value(cpu(CpuIsa::avx2)), 0.0);
}

TEST(LossScaleConfig, KerasDefaultIsDynamicUnderFloat16Only) {
  EXPECT_EQ(LossScaleConfig::keras_default(Policy::float32).mode, LossScaleConfig::Mode::none);
  EXPECT_EQ(LossScaleConfig::keras_default(Policy::mixed_bfloat16).mode,
            LossScaleConfig::Mode::none);
  const LossScaleConfig f16 = LossScaleConfig::keras_default(Policy::mixed_float16);
  EXPECT_EQ(f16.mode, LossScaleConfig::Mode::dynamic);
  EXPECT_EQ(f16.initial_scale, 32768.0);
}

// The CPU backend's compile gate and its description agree with the rule on this machine: it
// runs every policy the rule does not call unsupported (on every x86-64 CPU: all three).
TEST(PolicySupport, TheCpuBackendCompilesWhatTheRuleAllows) {
  const std::unique_ptr<Backend> backend = make_cpu_backend(1);
  const DeviceInfo d = backend->device();
  const ModelSpec spec = parse_model_json(R"({"name": "t", "input": {"shape": [4]},
      "loss": "sparse_categorical_crossentropy",
      "layers": [{"type": "Dense", "units": 3}]})");
  for (const Policy p : {Policy::float32, Policy::mixed_float16, Policy::mixed_bfloat16}) {
    SCOPED_TRACE(std::string(to_string(p)) + " on " + std::string(to_string(d.isa)));
    ExecutorOptions options;
    options.policy = p;
    options.batch_size = 2;
    const ShapeTable table = infer_shapes(spec, p);
    if (policy_support(d, p).level == Support::unsupported) {
      EXPECT_THROW(backend->compile(spec, table, options), ConfigError);
    } else {
      EXPECT_NO_THROW(backend->compile(spec, table, options));
    }
  }
}

// Under ONEDNN_MAX_CPU_ISA=AVX2 (core.device_info_avx2), the backend describes the CPU as oneDNN
// sees it, and the test above then proves mixed_bfloat16 compiles there (emulated).
TEST(PolicySupport, TheCpuBackendDescribesTheIsaOneDnnRuns) {
  const char* forced = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (forced == nullptr || std::string(forced) != "AVX2") {
    GTEST_SKIP() << "ONEDNN_MAX_CPU_ISA=AVX2 not set";
  }
  const DeviceInfo d = make_cpu_backend(1)->device();
  EXPECT_LE(d.isa, CpuIsa::avx2);
  EXPECT_EQ(policy_support(d, Policy::mixed_bfloat16).level, Support::emulated);
  EXPECT_NE(d.library_versions().find("(isa avx2"), std::string::npos) << d.library_versions();
}

}  // namespace
}  // namespace mixlab
