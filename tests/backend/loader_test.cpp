// The CUDA backend's loader on libraries built for the purpose: a missing file, a library that is
// not a plugin, one whose dependency cannot be found, plugins of another ABI version or build,
// and the fake plugin (a test double on the CPU backend, tests/backend/fake_cuda_plugin.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda_loader.h"
#include "engine/core/error.h"
#include "tests/test_paths.h"

namespace {

using namespace mixlab;

// EXPECT_TRUE(contains(text, part)) without gmock, printing both on failure.
std::string missing_dependency_plugin() {
  return mixlab::test::built("tests/backend/libtest_missing_dependency_plugin.so");
}

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

TEST(Loader, MissingFileIsNamed) {
  const cuda::PluginLoad load = cuda::load_plugin_file("/nonexistent/libmixlab-cuda.so");
  EXPECT_EQ(load.api, nullptr);
  EXPECT_TRUE(contains(load.error, "/nonexistent/libmixlab-cuda.so"));
  EXPECT_TRUE(contains(load.error, "cannot be loaded: the file does not exist"));
}

TEST(Loader, LibraryThatIsNotAPluginIsRefused) {
  const cuda::PluginLoad load =
      cuda::load_plugin_file(mixlab::test::built("tests/backend/libtest_not_a_plugin.so"));
  EXPECT_EQ(load.api, nullptr);
  EXPECT_TRUE(contains(load.error, mixlab::test::built("tests/backend/libtest_not_a_plugin.so") +
                                       " is not a MixLab CUDA backend"));
  EXPECT_TRUE(contains(load.error, "mixlab_cuda_plugin"));
}

TEST(Loader, MissingDependencyGivesTheDynamicLinkersMessage) {
  const cuda::PluginLoad load = cuda::load_plugin_file(missing_dependency_plugin());
  EXPECT_EQ(load.api, nullptr);
  EXPECT_TRUE(contains(
      load.error, "the CUDA backend (" + missing_dependency_plugin() + ") cannot be loaded: "));
  EXPECT_TRUE(contains(load.error, "libmixlab_test_dependency.so: cannot open shared object file"));
}

TEST(Loader, OtherAbiVersionIsRefused) {
  const cuda::PluginLoad load = cuda::load_plugin_file(
      mixlab::test::built("tests/backend/libtest_fake_cuda_plugin_old_abi.so"));
  EXPECT_EQ(load.api, nullptr);
  EXPECT_TRUE(contains(load.error, "was built for another MixLab version"));
  EXPECT_TRUE(contains(load.error, "plugin ABI version 1, this MixLab needs 2"));
}

TEST(Loader, OtherBuildIsRefused) {
  const cuda::PluginLoad load = cuda::load_plugin_file(
      mixlab::test::built("tests/backend/libtest_fake_cuda_plugin_other_build.so"));
  EXPECT_EQ(load.api, nullptr);
  EXPECT_TRUE(contains(load.error, "was built for another MixLab version"));
  EXPECT_TRUE(contains(load.error, "'0.0.0-other GCC 0'"));
  EXPECT_TRUE(contains(load.error, cuda::engine_build_id()));
}

// Next to the program first (<exe>/../lib/mixlab, <exe>), then - for a program in the build
// tree, as this test is - the build tree's lib/mixlab; $MIXLAB_CUDA_BACKEND alone when set.
TEST(Loader, SearchPathsFollowTheProgramThenTheBuildTree) {
  unsetenv(cuda::kPluginPathVariable);
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
  const std::vector<std::string> paths = cuda::plugin_search_paths();
  const std::vector<std::string> expected = {
      (exe.parent_path().parent_path() / "lib/mixlab/libmixlab-cuda.so").string(),
      (exe.parent_path() / "libmixlab-cuda.so").string(),
      mixlab::test::built("lib/mixlab/libmixlab-cuda.so")};
  EXPECT_EQ(paths, expected);
  setenv(cuda::kPluginPathVariable, "/opt/mixlab/libmixlab-cuda.so", 1);
  EXPECT_EQ(cuda::plugin_search_paths(), std::vector<std::string>{"/opt/mixlab/libmixlab-cuda.so"});
  unsetenv(cuda::kPluginPathVariable);
}

// Where the program's own path cannot be read (/proc not mounted in a chroot), the loader has
// nowhere to look: it says so and names the variable, not "looked for ;".
TEST(Loader, NotFoundNamesWhatWasSearchedOrWhyNothingWas) {
  const std::string none = cuda::not_found_error({});
  if (contains(none, "not in this build")) GTEST_SKIP() << "built without the CUDA toolkit";
  EXPECT_TRUE(contains(none, "/proc/self/exe"));
  EXPECT_TRUE(contains(none, cuda::kPluginPathVariable));
  EXPECT_FALSE(contains(none, "looked for ;"));
  const std::string two = cuda::not_found_error({"/a/libmixlab-cuda.so", "/b/libmixlab-cuda.so"});
  EXPECT_TRUE(contains(two, "looked for /a/libmixlab-cuda.so, /b/libmixlab-cuda.so;"));
  EXPECT_TRUE(contains(two, cuda::kPluginPathVariable));
}

TEST(Loader, FakePluginLoadsAndCreatesItsBackend) {
  const cuda::PluginLoad load = cuda::load_plugin_file(mixlab::test::fake_plugin());
  ASSERT_NE(load.api, nullptr) << load.error;
  EXPECT_TRUE(load.error.empty());
  EXPECT_EQ(load.path, mixlab::test::fake_plugin());
  EXPECT_TRUE(contains(load.api->library_versions(), "fake CUDA backend"));
  const auto backend = load.api->create_backend(0);
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->device().kind, "cuda");
  // An exception thrown inside the plugin arrives as the engine's own BackendError.
  EXPECT_THROW(load.api->create_backend(1), BackendError);
}

}  // namespace

namespace {

// Device names are checked before any plugin is looked for.
TEST(DeviceNames, UnknownNamesListTheValidOnes) {
  for (const char* name : {"tpu", "gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", ""}) {
    SCOPED_TRACE(name);
    try {
      mixlab::make_backend(name, 0, true);
      FAIL() << "device '" << name << "' was accepted";
    } catch (const mixlab::ConfigError& e) {
      EXPECT_TRUE(contains(e.what(), std::string("unknown device '") + name + "'"));
      EXPECT_TRUE(contains(e.what(), "cpu, cuda, cuda:N, auto"));
    }
  }
}

TEST(DeviceNames, CpuIsTheCpu) {
  const mixlab::BackendChoice choice = mixlab::make_backend("cpu", 1, false);
  EXPECT_EQ(choice.device, "cpu");
  EXPECT_EQ(choice.note, "");
  EXPECT_EQ(choice.backend->device().kind, "cpu");
  EXPECT_EQ(choice.backend->device().threads, 1);
}

}  // namespace
