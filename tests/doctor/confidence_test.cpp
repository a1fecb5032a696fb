// The confidence line under the verdict (issue 28, section 5): the held-out error of the last
// zoo run on this device class and mode, this machine's own where it has one, MixLab's
// measured figures for a CPU otherwise, and "unknown" for a GPU no zoo has run on.
#include "engine/doctor/confidence.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/data/data_files.h"  // TempDir
#include "tests/doctor/doctor_test_support.h"

namespace mixlab::doctor {
namespace {

using nlohmann::json;

json entry(const std::string& device, const std::string& mode, double median) {
  return {{"kind", "cpu"},         {"device", device},   {"mode", mode},
          {"models", 30},          {"median_error", median}, {"p90_error", 0.2},
          {"direction_right", 27}, {"date", "2026-12-01"}};
}

TEST(Confidence, ThisMachinesZooRunOfTheSameDeviceAndModeComesFirst) {
  const mixlab::test::TempDir temp;
  const auto file = temp / "doctor-zoo.json";
  DeviceProfile cpu = test::round_cpu();
  std::ofstream(file) << json::array({entry("Other CPU", "timed", 0.11),
                                      entry("Round CPU", "roofline", 0.4),
                                      entry("Round CPU", "timed", 0.07)})
                             .dump();
  const Confidence timed = zoo_confidence(cpu, true, file);
  EXPECT_TRUE(timed.known);
  EXPECT_DOUBLE_EQ(timed.median_error, 0.07);
  EXPECT_EQ(timed.direction_right, 27);
  EXPECT_NE(timed.line.find("on this device"), std::string::npos) << timed.line;
  EXPECT_NE(timed.line.find("7% (median) and 20% (90th percentile)"), std::string::npos)
      << timed.line;
  EXPECT_NE(timed.line.find(file.string()), std::string::npos) << timed.line;
  EXPECT_DOUBLE_EQ(zoo_confidence(cpu, false, file).median_error, 0.4);

  cpu.name = "A third CPU";  // the last run on another CPU, named as such
  const Confidence other = zoo_confidence(cpu, true, file);
  EXPECT_DOUBLE_EQ(other.median_error, 0.07);
  EXPECT_NE(other.line.find("on Round CPU,"), std::string::npos) << other.line;
  const Confidence roofline = zoo_confidence(cpu, false, file);
  EXPECT_DOUBLE_EQ(roofline.median_error, 0.4);
}

TEST(Confidence, WithoutAZooRunTheProjectsFiguresOrUnknown) {
  const mixlab::test::TempDir temp;
  const auto file = temp / "doctor-zoo.json";
  std::ofstream(file) << "[{\"kind\": \"cpu\", \"models\": \"many\"}, 3, {broken";
  const Confidence cpu = zoo_confidence(test::round_cpu(), true, file);
  EXPECT_TRUE(cpu.known);
  EXPECT_EQ(cpu.origin, "MixLab's zoo run (README)");
  EXPECT_DOUBLE_EQ(cpu.median_error, 0.05);
  EXPECT_NE(cpu.line.find("scripts/bench.sh --doctor-zoo"), std::string::npos) << cpu.line;
  EXPECT_DOUBLE_EQ(zoo_confidence(test::round_cpu(), false, temp / "none.json").median_error, 0.34);

  const Confidence gpu = zoo_confidence(test::round_gpu(), false, file);
  EXPECT_FALSE(gpu.known);
  EXPECT_EQ(gpu.line.rfind("Confidence: unknown.", 0), 0u) << gpu.line;
  EXPECT_FALSE(to_json(gpu).contains("median_error"));
}

}  // namespace
}  // namespace mixlab::doctor
