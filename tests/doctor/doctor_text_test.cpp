// The doctor's figures for people ("3.21 ms", "12%", "1.59x"): their rounding, and a '.' for the
// decimal point under a locale with a decimal comma (the findings reach the HTML report and the
// CSVs, which the GUI saves under the user's LC_NUMERIC).
#include "engine/doctor/doctor_text.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <clocale>
#include <filesystem>
#include <string>

#include "tests/comma_locale.h"

namespace mixlab::doctor {
namespace {

void expect_figures() {
  EXPECT_EQ(millis(0.0032149), "3.21 ms");
  EXPECT_EQ(millis(0.000042), "0.042 ms");
  EXPECT_EQ(millis(0.1234), "123 ms");
  EXPECT_EQ(megabytes(147e6), "147 MB");
  EXPECT_EQ(megabytes(6e5), "0.6 MB");
  EXPECT_EQ(megabytes(12.44e9), "12.4 GB");
  EXPECT_EQ(megabytes(1500), "2 KB");
  EXPECT_EQ(percent(0.123), "12%");
  EXPECT_EQ(percent(0.0456), "4.6%");
  EXPECT_EQ(ratio(1.594), "1.59x");
  EXPECT_EQ(count(12.34e6), "12.3 M");
  EXPECT_EQ(count(34567), "35 K");
  EXPECT_EQ(count(3000), "3000");
  EXPECT_EQ(with_gain("train at batch 64 (mixed 1.30x)", 1.594),
            "train at batch 64 (mixed 1.30x; predicted gain 1.59x)");
}

TEST(DoctorText, FiguresRoundAsWritten) {
  expect_figures();
}

TEST(DoctorText, FiguresKeepTheirPointUnderADecimalCommaLocale) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mixlab-doctor-text-" + std::to_string(getpid()));
  const bool comma = test::use_comma_locale(dir);
  if (!comma) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "no locale with a decimal comma";
  }
  expect_figures();
  std::setlocale(LC_NUMERIC, "C");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mixlab::doctor
