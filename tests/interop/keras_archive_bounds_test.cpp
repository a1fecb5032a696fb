// Hostile .keras archives (issue 25): a weights entry that inflates past what the config's
// parameters need, headers that lie about sizes, a huge config.json and a compression ratio of
// a zip bomb are refused with a SpecError naming the archive and the entry, before they are
// read into memory; the in-memory entry point reads what the file one reads.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "engine/core/error.h"
#include "engine/interop/keras_model.h"
#include "tests/interop/keras_files.h"
#include "tests/test_paths.h"

namespace mixlab {
namespace {

using test::keras3_layer;
using test::keras3_sequential;

// Input 4 -> Dense 3: 15 parameters, so model.weights.h5 may be about 1 MiB at most.
const std::string kSmallConfig =
    keras3_sequential({keras3_layer("InputLayer", R"("batch_shape": [null, 4], "dtype": "float32",
                                 "name": "input_layer")"),
                       keras3_layer("Dense", R"("name": "d", "units": 3)")});

// Input 1000 -> Dense 1000: a million parameters, so 35 MiB of weights pass the config's bound.
const std::string kLargeConfig = keras3_sequential(
    {keras3_layer("InputLayer", R"("batch_shape": [null, 1000], "dtype": "float32",
                                 "name": "input_layer")"),
     keras3_layer("Dense", R"("name": "d", "units": 1000)")});

std::string small_weights(const test::TempDir& dir) {
  test::write_h5(dir / "w.h5", {{"layers/dense/vars/0", {4, 3}, std::vector<float>(12, 0.5f)},
                                {"layers/dense/vars/1", {3}, std::vector<float>(3, 0.25f)}});
  return test::read_bytes(dir / "w.h5");
}

std::string zip_bytes(const test::TempDir& dir, const std::map<std::string, std::string>& members) {
  test::write_zip(dir / "tmp.zip", members);
  return test::read_bytes(dir / "tmp.zip");
}

std::filesystem::path write(const test::TempDir& dir, const std::string& name,
                            const std::string& bytes) {
  std::ofstream(dir / name, std::ios::binary) << bytes;
  return dir / name;
}

// The SpecError of importing `path`, and that it came within a second.
std::string error_of(const std::filesystem::path& path) {
  const auto start = std::chrono::steady_clock::now();
  std::string error = "(no error)";
  try {
    import_keras_archive(path);
  } catch (const SpecError& e) {
    error = e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1)) << error;
  return error;
}

TEST(KerasArchiveBounds, InMemoryAndFileEntryPointsReadTheSame) {
  const test::TempDir dir;
  const std::string bytes =
      zip_bytes(dir, {{"config.json", kSmallConfig}, {"model.weights.h5", small_weights(dir)}});
  const ImportedModel from_file = import_keras_archive(write(dir, "m.keras", bytes));
  const ImportedModel from_memory = import_keras_archive(bytes, "m.keras");
  EXPECT_EQ(from_file.spec, from_memory.spec);
  ASSERT_TRUE(from_file.weights && from_memory.weights);
  EXPECT_EQ(from_memory.weights->origin, "m.keras");
  ASSERT_EQ(from_memory.weights->layers.size(), 1U);
  EXPECT_EQ(from_memory.weights->layers[0].kernel, from_file.weights->layers[0].kernel);
  EXPECT_EQ(from_memory.weights->layers[0].bias, std::vector<float>(3, 0.25f));
}

// The keras_archive fuzz target's find (tests/fuzz/regressions/keras_archive/): a weights file
// whose float type claims 4294967293 bytes made libhdf5 allocate 4 GiB to convert it. What
// libhdf5 allocates follows the file's own description, so it is checked first.
TEST(KerasArchiveBounds, AFloatOfFourGibibytesIsRefusedBeforeItIsRead) {
  const std::filesystem::path path = std::filesystem::path(test::source_dir()) /
                                     "tests/fuzz/regressions/keras_archive/"
                                     "oom-float-type-of-4-gib.keras";
  const std::string error = error_of(path);
  EXPECT_NE(error.find("layer 0 'c' kernel: layers/conv2d/vars/0 holds floats of 4294967293 "
                       "bytes (2, 4 or 8 expected)"),
            std::string::npos)
      << error;
}

TEST(KerasArchiveBounds, WeightsLargerThanTheConfigNeedsAreRefused) {
  const test::TempDir dir;
  // 64 MiB of zeros (64 KiB compressed) for a model of 15 parameters.
  const auto path = write(dir, "bomb.keras",
                          zip_bytes(dir, {{"config.json", kSmallConfig},
                                          {"model.weights.h5", std::string(64 << 20, '\0')}}));
  const std::string error = error_of(path);
  EXPECT_NE(error.find("bomb.keras: model.weights.h5 says it inflates to 67108864 bytes; the "
                       "model's 15 parameters need at most"),
            std::string::npos)
      << error;
}

TEST(KerasArchiveBounds, AHeaderThatUnderstatesTheSizeIsStoppedAtTheBound) {
  const test::TempDir dir;
  // The headers say 1000 bytes; the data inflates to 64 MiB.
  std::string bytes = zip_bytes(
      dir, {{"config.json", kSmallConfig}, {"model.weights.h5", std::string(64 << 20, '\0')}});
  test::set_declared_size(bytes, "model.weights.h5", 1000);
  const std::string error = error_of(write(dir, "lie.keras", bytes));
  EXPECT_NE(error.find("lie.keras: model.weights.h5"), std::string::npos) << error;
}

TEST(KerasArchiveBounds, AHeaderThatClaims2GiBIsRefusedBeforeAnyAllocation) {
  const test::TempDir dir;
  std::string bytes =
      zip_bytes(dir, {{"config.json", kSmallConfig}, {"model.weights.h5", small_weights(dir)}});
  test::set_declared_size(bytes, "model.weights.h5", 0x80000000u);
  const std::string error = error_of(write(dir, "claims.keras", bytes));
  EXPECT_NE(error.find("claims.keras: model.weights.h5 says it inflates to 2147483648 bytes"),
            std::string::npos)
      << error;
}

TEST(KerasArchiveBounds, AHugeConfigIsRefusedEvenWhenItsHeaderLies) {
  const test::TempDir dir;
  // A valid JSON object padded with 40 MiB of spaces, over a model file's 16 MiB.
  const std::string config = kSmallConfig + std::string(40 << 20, ' ');
  std::string bytes = zip_bytes(dir, {{"config.json", config}});
  EXPECT_NE(error_of(write(dir, "big.keras", bytes))
                .find("big.keras: config.json says it inflates to 41943"),
            std::string::npos);
  test::set_declared_size(bytes, "config.json", 100);
  const std::string error = error_of(write(dir, "biglie.keras", bytes));
  EXPECT_NE(error.find("biglie.keras: config.json"), std::string::npos) << error;
}

TEST(KerasArchiveBounds, AZipBombRatioIsRefusedWithinTheConfigsBound) {
  const test::TempDir dir;
  // 16 MiB of zeros: within what a million parameters need, but compressed about 1000:1.
  const auto path = write(dir, "ratio.keras",
                          zip_bytes(dir, {{"config.json", kLargeConfig},
                                          {"model.weights.h5", std::string(16 << 20, '\0')}}));
  const std::string error = error_of(path);
  EXPECT_NE(error.find("ratio.keras: model.weights.h5 says it inflates to 16777216 bytes from"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("a ratio over 200:1"), std::string::npos) << error;
}

}  // namespace
}  // namespace mixlab
