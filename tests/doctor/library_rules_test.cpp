// The library versions the doctor's rules hold for (issue 28, section 4): dotted versions
// compared part by part, and `--libraries` parsed with named errors.
#include "engine/doctor/library_rules.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"

namespace mixlab::doctor {
namespace {

TEST(LibraryRules, VersionsCompareByParts) {
  EXPECT_TRUE(version_at_least("11.0", "11.0"));
  EXPECT_TRUE(version_at_least("11.2", "11.0"));
  EXPECT_TRUE(version_at_least("13", "11.0"));
  EXPECT_TRUE(version_at_least("7.10", "7.6.3"));  // 10 > 6, not "1" < "6"
  EXPECT_TRUE(version_at_least("7.6.3", "7.6.3"));
  EXPECT_FALSE(version_at_least("7.6", "7.6.3"));
  EXPECT_FALSE(version_at_least("10.1", "11.0"));
  EXPECT_FALSE(version_at_least("9.99.99", "11"));
  EXPECT_TRUE(version_at_least("", "11.0"));  // not known: the present libraries
}

TEST(LibraryRules, TheMisalignedRulesHoldFromTheGuidesVersions) {
  LibraryVersions l;
  l.cublas = "10.2";
  l.cudnn = "7.6.3";
  EXPECT_FALSE(holds(kMisalignedGemmOnTensorCores, l));
  EXPECT_TRUE(holds(kMisalignedConvolutionOnTensorCores, l));
  EXPECT_EQ(version_of(kMisalignedGemmOnTensorCores, l), "10.2");
  EXPECT_TRUE(holds(kMisalignedGemmOnTensorCores, builtin_library_versions()));
}

TEST(LibraryRules, LibrariesOptionParsesAndNamesWhatIsWrong) {
  const LibraryVersions l = parse_library_versions("cuBLAS=11.2,cudnn=8.1.1");
  EXPECT_EQ(l.cublas, "11.2");
  EXPECT_EQ(l.cudnn, "8.1.1");
  EXPECT_EQ(describe_gpu_libraries(l), "cuBLAS 11.2, cuDNN 8.1.1");
  LibraryVersions base;
  base.cublas = "13.0";
  base.cudnn = "9.2";
  const LibraryVersions over = parse_library_versions("cudnn=8.1", base);
  EXPECT_EQ(over.cublas, "13.0");
  EXPECT_EQ(over.cudnn, "8.1");
  const auto message = [](const char* text) {
    try {
      parse_library_versions(text);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(""), "--libraries names no library (cublas=11.2,cudnn=8.1)");
  EXPECT_EQ(message("cublas"),
            "--libraries: 'cublas' is not library=version (cublas=11.2,cudnn=8.1)");
  EXPECT_EQ(message("cublas=11..2"), "--libraries: 'cublas=11..2' is not a dotted version");
  EXPECT_EQ(message("cublas=11.2,"),
            "--libraries: '' is not library=version (cublas=11.2,cudnn=8.1)");
  EXPECT_EQ(message("cublas=11.2,cufft=10"),
            "--libraries: 'cufft' is not a library the doctor knows (cublas, cudnn)");
}

}  // namespace
}  // namespace mixlab::doctor
