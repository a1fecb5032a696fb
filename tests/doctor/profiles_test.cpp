// The doctor's device profiles: the shipped GPU figures with their documents, finding a profile
// by the names users type, and named errors for a broken profile file.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "engine/doctor/device_profile.h"
#include "engine/doctor/local_profile.h"

namespace mixlab::doctor {
namespace {

TEST(Profiles, EveryAskedForGpuIsThereWithEveryFigureSourced) {
  const auto profiles = builtin_gpu_profiles();
  for (const char* name : {"GTX 1660 Ti", "RTX 2060", "RTX 2060 SUPER", "T4", "RTX 3060",
                           "RTX 3090", "A100 40GB", "A100 80GB", "RTX 4090", "L4", "H100 SXM",
                           "H200"}) {
    const DeviceProfile& p = find_profile(profiles, name);
    EXPECT_EQ(p.name, name);
    EXPECT_GT(p.sm_count, 0) << name;
    EXPECT_GT(p.bandwidth_bytes_per_s, 1e11) << name;
    EXPECT_GT(p.peak.float32, 1e12) << name;
    EXPECT_GE(p.peak.float16_acc32, p.peak.float32) << name;
    for (const char* field : {"compute_capability", "sm_count", "boost_clock_mhz", "memory_bytes",
                              "memory_bandwidth_gb_s", "l2_bytes", "peak_tflops"}) {
      ASSERT_TRUE(p.sources.count(field)) << name << " " << field;
      EXPECT_FALSE(p.sources.at(field).empty()) << name << " " << field;
    }
  }
}

TEST(Profiles, CapabilitiesFollowTheArchitecture) {
  const auto profiles = builtin_gpu_profiles();
  const DeviceProfile& gtx = find_profile(profiles, "GTX 1660 Ti");
  EXPECT_FALSE(gtx.tensor_cores);
  const DeviceProfile& turing = find_profile(profiles, "RTX 2060");
  EXPECT_TRUE(turing.tensor_cores);
  EXPECT_EQ(turing.peak.bfloat16, 0.0);  // no bf16 before Ampere
  EXPECT_EQ(turing.peak.tf32, 0.0);
  // GeForce: float16 with float32 accumulation at half the float16-accumulation rate.
  EXPECT_NEAR(turing.peak.float16_acc32 * 2, turing.peak.float16_acc16, 1e11);
  EXPECT_GT(find_profile(profiles, "A100 40GB").peak.bfloat16, 0.0);
  EXPECT_EQ(find_profile(profiles, "A100 40GB").peak.fp8, 0.0);  // FP8 from 8.9 on
  EXPECT_GT(find_profile(profiles, "L4").peak.fp8, 0.0);
  EXPECT_GT(find_profile(profiles, "H200").bandwidth_bytes_per_s,
            find_profile(profiles, "H100 SXM").bandwidth_bytes_per_s);
}

TEST(Profiles, NamesAreFoundAsUsersTypeThem) {
  const auto profiles = builtin_gpu_profiles();
  for (const char* typed : {"RTX 2060", "rtx 2060", "rtx-2060", "rtx2060", "RTX_2060",
                            "GeForce RTX 2060"}) {
    EXPECT_EQ(find_profile(profiles, typed).name, "RTX 2060") << typed;
  }
  EXPECT_EQ(find_profile(profiles, "rtx-2060-super").name, "RTX 2060 SUPER");
  EXPECT_EQ(find_profile(profiles, "tesla t4").name, "T4");
}

// A unique start of a name is enough; an ambiguous one names the candidates and takes none.
TEST(Profiles, AUniqueStartOfANameFindsItsProfile) {
  const auto profiles = builtin_gpu_profiles();
  EXPECT_EQ(find_profile(profiles, "h100").name, "H100 SXM");
  EXPECT_EQ(find_profile(profiles, "H1").name, "H100 SXM");
  EXPECT_EQ(find_profile(profiles, "rtx 2060 s").name, "RTX 2060 SUPER");
  EXPECT_EQ(find_profile(profiles, "a100-8").name, "A100 80GB");
  for (const char* ambiguous : {"A100", "a100", "RTX 20", "rtx"}) {
    try {
      find_profile(profiles, ambiguous);
      ADD_FAILURE() << ambiguous << ": no error";
    } catch (const ProfileError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("is ambiguous"), std::string::npos) << what;
      if (std::string(ambiguous) == "A100") {
        EXPECT_NE(what.find("A100 40GB, A100 80GB"), std::string::npos) << what;
        EXPECT_EQ(what.find("H200"), std::string::npos) << what;
      }
    }
  }
}

TEST(Profiles, AnUnknownNameListsEveryProfile) {
  try {
    find_profile(builtin_gpu_profiles(), "RTX 9999");
    FAIL() << "no error";
  } catch (const ProfileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown device profile 'RTX 9999'"), std::string::npos) << what;
    EXPECT_NE(what.find("RTX 2060 SUPER"), std::string::npos) << what;
    EXPECT_NE(what.find("H200"), std::string::npos) << what;
  }
}

constexpr const char* kOneProfile = R"({
  "format": "mixlab-gpu-profiles-1",
  "documents": {"doc": "A datasheet"},
  "profiles": [{
    "name": "Test GPU", "compute_capability": "8.0", "tensor_cores": true, "sm_count": 10,
    "boost_clock_mhz": 1000, "memory_bytes": 1000000000, "memory_bandwidth_gb_s": 100,
    "l2_bytes": 1000000,
    "peak_tflops": {"float32": 1, "tf32": 2, "float16_acc32": 4, "float16_acc16": 4,
                    "bfloat16": 4, "fp8": null},
    "sources": {"compute_capability": "doc", "sm_count": "doc", "boost_clock_mhz": "doc",
                "memory_bytes": "doc", "memory_bandwidth_gb_s": "doc", "l2_bytes": "doc",
                "peak_tflops": "doc"}}]})";

std::string without(std::string text, const std::string& part) {
  const auto at = text.find(part);
  EXPECT_NE(at, std::string::npos) << part;
  return text.erase(at, part.size());
}

std::string error_of(const std::string& text) {
  try {
    parse_gpu_profiles(text, "my-profiles.json");
  } catch (const ProfileError& e) {
    return e.what();
  }
  return "";
}

TEST(Profiles, AFileIsReadWithItsUnits) {
  const auto profiles = parse_gpu_profiles(kOneProfile, "my-profiles.json");
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_DOUBLE_EQ(profiles[0].peak.float16_acc32, 4e12);
  EXPECT_DOUBLE_EQ(profiles[0].bandwidth_bytes_per_s, 100e9);
  EXPECT_EQ(profiles[0].peak.fp8, 0.0);
  EXPECT_EQ(profiles[0].sources.at("sm_count"), "A datasheet");
}

TEST(Profiles, AMissingFieldIsNamedWithTheFileAndProfile) {
  const std::string e = error_of(without(kOneProfile, R"("sm_count": 10,)"));
  EXPECT_NE(e.find("my-profiles.json"), std::string::npos) << e;
  EXPECT_NE(e.find("profile 'Test GPU'"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'sm_count': is missing"), std::string::npos) << e;
}

TEST(Profiles, AMissingPeakAndAnUnknownDocumentAreNamed) {
  EXPECT_NE(error_of(without(kOneProfile, R"("float32": 1, )")).find("field 'float32'"),
            std::string::npos);
  std::string unknown_doc = kOneProfile;
  unknown_doc.replace(unknown_doc.find(R"("l2_bytes": "doc")"), 17, R"("l2_bytes": "nope")");
  const std::string e = error_of(unknown_doc);
  EXPECT_NE(e.find("sources.l2_bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("'nope'"), std::string::npos) << e;
  EXPECT_NE(error_of("{not json").find("not valid JSON"), std::string::npos);
  // A number past double's range is nlohmann's out_of_range, not a parse_error (found by
  // fuzz/gpu_profiles_fuzz.cpp): still a ProfileError.
  EXPECT_NE(error_of(R"({"l2_bytes": 4E194304})").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"format": "other"})").find("field 'format'"), std::string::npos);
}

// Figures no real device has (figure_bounds.h) are refused naming the file, profile and field:
// a bandwidth of 1e-308 GB/s once predicted "inf ms".
TEST(Profiles, FiguresNoDeviceHasAreRefusedByField) {
  const auto with = [](const std::string& part, const std::string& by) {
    std::string text = kOneProfile;
    const auto at = text.find(part);
    EXPECT_NE(at, std::string::npos) << part;
    return text.replace(at, part.size(), by);
  };
  std::string e =
      error_of(with(R"("memory_bandwidth_gb_s": 100)", R"("memory_bandwidth_gb_s": 1e-308)"));
  EXPECT_NE(e.find("my-profiles.json: profile 'Test GPU': field 'memory_bandwidth_gb_s': is "
                   "1e-308 GB/s; a real device's lies between 0.1 and 100000 GB/s"),
            std::string::npos)
      << e;
  e = error_of(with(R"("float32": 1,)", R"("float32": 1e-300,)"));
  EXPECT_NE(e.find("field 'float32': is 1e-300 TFLOP/s"), std::string::npos) << e;
  e = error_of(with(R"("sm_count": 10,)", R"("sm_count": 1e300,)"));
  EXPECT_NE(e.find("field 'sm_count': is 1e+300 SMs"), std::string::npos) << e;
  e = error_of(with(R"("memory_bandwidth_gb_s": 100)", R"("memory_bandwidth_gb_s": 1e12)"));
  EXPECT_NE(e.find("field 'memory_bandwidth_gb_s': is 1e+12 GB/s"), std::string::npos) << e;
  // A figure the device does not have stays null (0); the built-in profiles all pass.
  EXPECT_EQ(parse_gpu_profiles(kOneProfile, "my-profiles.json")[0].peak.fp8, 0.0);
  EXPECT_FALSE(builtin_gpu_profiles().empty());
}

// A name a terminal would act on is refused in a file, and quoted escaped when asked for.
TEST(Profiles, ControlCharactersAreRefusedOrEscaped) {
  std::string evil = kOneProfile;
  evil.replace(evil.find("Test GPU"), 8, "Test\\u001b[2J\\u0007GPU");
  std::string e = error_of(evil);
  EXPECT_NE(e.find("field 'name': 'Test\\x1b[2J\\x07GPU' is not printable text"), std::string::npos)
      << e;
  try {
    find_profile(builtin_gpu_profiles(), "RTX\x1b[2J\a");
    FAIL() << "no error";
  } catch (const ProfileError& error) {
    e = error.what();
    EXPECT_NE(e.find("unknown device profile 'RTX\\x1b[2J\\x07'"), std::string::npos) << e;
  }
}

TEST(Profiles, AMissingFileIsNamed) {
  try {
    load_gpu_profiles("/nonexistent/profiles.json");
    FAIL() << "no error";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/profiles.json"), std::string::npos);
  }
}

TEST(Profiles, APresentGpuTakesItsPublishedProfile) {
  const DeviceInfo h200 = gpu_device_info("NVIDIA H200", 9, 0, 140LL << 30);
  const DeviceProfile p = gpu_profile_from_device(h200, 132, 1980, 0);
  EXPECT_EQ(p.name, "NVIDIA H200");
  EXPECT_EQ(p.memory_bytes, 140LL << 30);
  EXPECT_EQ(p.peak.bfloat16, find_profile(builtin_gpu_profiles(), "H200").peak.bfloat16);
  // An unprofiled GPU is estimated from its properties, and says so.
  const DeviceInfo other = gpu_device_info("NVIDIA Future 1", 9, 0, 80LL << 30);
  const DeviceProfile e = gpu_profile_from_device(other, 100, 2000, 3e12);
  EXPECT_DOUBLE_EQ(e.peak.float32, 2.0 * 128 * 100 * 2000e6);
  EXPECT_NE(e.sources.at("peak_tflops").find("estimated"), std::string::npos);
}

// One rule for bfloat16 and TF32 (compute capability 8.0 on, has_bf16_and_tf32): the policy
// check and an unprofiled GPU's estimated peaks agree on every generation.
TEST(Profiles, TheAmpereRuleIsOneRuleForThePolicyAndTheEstimate) {
  for (const auto& [major, minor] : {std::pair{7, 5}, {8, 0}, {8, 6}, {8, 9}, {9, 0}}) {
    SCOPED_TRACE(std::to_string(major) + "." + std::to_string(minor));
    const DeviceInfo gpu = gpu_device_info("NVIDIA Unprofiled", major, minor, 16LL << 30);
    const bool ampere = major >= 8;
    EXPECT_EQ(has_bf16_and_tf32(compute_capability_value(gpu)), ampere);
    EXPECT_EQ(policy_support(gpu, Policy::mixed_bfloat16).level == Support::unsupported, !ampere);
    const DeviceProfile e = gpu_profile_from_device(gpu, 40, 1500, 4e11);
    EXPECT_EQ(e.peak.bfloat16 > 0, ampere);
    EXPECT_EQ(e.peak.tf32 > 0, ampere);
  }
}

// A calibration of an RTX 2060 as the CUDA backend would report it (figures made up, in the
// range such a card measures).
GpuCalibration rtx_2060_calibration() {
  GpuCalibration c;
  c.gpu = "NVIDIA GeForce RTX 2060";
  c.compute_capability = "7.5";
  c.libraries = "CUDA runtime 13.0, cuBLAS 13.0.0";
  c.sm_count = 30;
  c.clock_mhz = 1680;
  c.memory_bytes = 6LL << 30;
  c.l2_bytes = 3LL << 20;
  c.memory_bus_bytes_per_s = 336e9;
  c.f32_matmul_flops = 5.9e12;
  c.f16_matmul_flops = 22e12;
  c.copy_bytes_per_s = 290e9;
  c.host_copy_bytes_per_s = 11e9;
  c.call_overhead_s = 6e-6;
  return c;
}

TEST(GpuCalibration, MeasuredFiguresReplaceThePublishedOnes) {
  const GpuCalibration c = rtx_2060_calibration();
  const DeviceProfile published = find_profile(builtin_gpu_profiles(), "RTX 2060");
  const DeviceProfile p = gpu_profile(c);
  EXPECT_TRUE(p.measured);
  EXPECT_EQ(p.name, c.gpu);
  EXPECT_EQ(p.compute_capability, "7.5");
  EXPECT_TRUE(p.tensor_cores);
  EXPECT_EQ(p.peak.float32, c.f32_matmul_flops);
  EXPECT_EQ(p.peak.float16_acc32, c.f16_matmul_flops);
  EXPECT_EQ(p.peak.bfloat16, 0.0);  // Turing: none, measured or not
  EXPECT_EQ(p.bandwidth_bytes_per_s, c.copy_bytes_per_s);
  EXPECT_EQ(p.host_link_bytes_per_s, c.host_copy_bytes_per_s);
  EXPECT_EQ(p.launch_overhead_s, c.call_overhead_s);
  EXPECT_EQ(p.l2_bytes, c.l2_bytes);
  // float16 accumulation is not measured: the GeForce card's published ratio (twice float32
  // accumulation's rate) over the measured rate.
  ASSERT_GT(published.peak.float16_acc32, 0.0);
  EXPECT_DOUBLE_EQ(p.peak.float16_acc16, c.f16_matmul_flops * published.peak.float16_acc16 /
                                             published.peak.float16_acc32);
  EXPECT_EQ(p.sources.at("peak_tflops").rfind("measured on this GPU through " + c.libraries, 0),
            0u)
      << p.sources.at("peak_tflops");
  EXPECT_NE(p.sources.at("peak_tflops").find(published.sources.at("peak_tflops")),
            std::string::npos);
  EXPECT_NE(p.sources.at("memory_bandwidth_gb_s").find("device-to-device copy"),
            std::string::npos);
  EXPECT_NE(p.sources.at("sm_count").find("cudaDeviceGetAttribute"), std::string::npos);
}

TEST(GpuCalibration, AnUnpublishedGpuIsMeasuredAllTheSame) {
  GpuCalibration c = rtx_2060_calibration();
  c.gpu = "NVIDIA Future 1";
  c.compute_capability = "10.0";
  c.f32_matmul_flops = 70e12;
  c.tf32_matmul_flops = 400e12;
  c.f16_matmul_flops = 900e12;
  c.bf16_matmul_flops = 880e12;
  const DeviceProfile p = gpu_profile(c);
  EXPECT_TRUE(p.measured);
  EXPECT_EQ(p.peak.tf32, 400e12);
  EXPECT_EQ(p.peak.bfloat16, 880e12);
  EXPECT_EQ(p.peak.float16_acc16, 0.0);  // no published ratio to scale
  EXPECT_EQ(matmul_peak(p, DType::bf16, false), 880e12);
  EXPECT_EQ(matmul_peak(p, DType::f32, true), 400e12);
}

}  // namespace
}  // namespace mixlab::doctor
