// Device choice (make_backend, cuda_backend_unavailable_reason, backend_statuses) as a process
// sees it: the loader looks for the plugin once per process, so each suite runs in a process of
// its own, which tests/backend/CMakeLists.txt starts with the environment it needs:
//   FakePlugin     MIXLAB_CUDA_BACKEND = the fake plugin (a test double on the CPU backend)
//   MissingPlugin  MIXLAB_CUDA_BACKEND = a file that does not exist
//   RealPlugin     MIXLAB_CUDA_BACKEND unset: the build tree's libmixlab-cuda.so on a machine
//                  without an NVIDIA driver (skipped where the plugin is not built or a GPU is)
// Run directly, a suite whose environment is not set up skips and says so.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/backend/backend.h"
#include "engine/backend/cuda_loader.h"
#include "engine/core/error.h"
#include "tests/test_paths.h"

namespace {

using namespace mixlab;

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

std::string plugin_variable() {
  const char* v = std::getenv(cuda::kPluginPathVariable);
  return v != nullptr ? v : "";
}

constexpr const char* kMissingPlugin = "/nonexistent/libmixlab-cuda.so";

// --- the fake plugin: "cuda" is a backend of kind cuda ---

class FakePlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (plugin_variable() != mixlab::test::fake_plugin())
      GTEST_SKIP() << "needs MIXLAB_CUDA_BACKEND=" << mixlab::test::fake_plugin()
                   << " (ctest: backend.choice.fake)";
  }
};

TEST_F(FakePlugin, CudaIsAvailable) {
  EXPECT_EQ(cuda_backend_unavailable_reason(), "");
  EXPECT_EQ(cuda_device_unavailable_reason(0), "");
  EXPECT_TRUE(contains(cuda_device_unavailable_reason(1), "no GPU 1"));
  const auto statuses = backend_statuses();
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_EQ(statuses[1].name, "cuda");
  EXPECT_TRUE(statuses[1].available) << statuses[1].detail;
  EXPECT_TRUE(contains(statuses[1].detail, "Fake GPU"));
  EXPECT_TRUE(contains(statuses[1].detail, "compute capability 8.0"));
  EXPECT_TRUE(contains(statuses[1].detail, "1.0 GiB"));
  EXPECT_TRUE(contains(statuses[1].detail, "fake CUDA backend"));
}

TEST_F(FakePlugin, CudaAndAutoChooseTheGpu) {
  for (const char* name : {"cuda", "cuda:0", "auto"}) {
    SCOPED_TRACE(name);
    const BackendChoice choice = make_backend(name, 0, false);
    ASSERT_NE(choice.backend, nullptr);
    EXPECT_EQ(choice.device, "cuda:0");
    EXPECT_EQ(choice.note, "");
    EXPECT_EQ(choice.backend->device().kind, "cuda");
  }
}

TEST_F(FakePlugin, AGpuThatIsNotThereFallsBackOrThrows) {
  try {
    make_backend("cuda:1", 0, false);
    FAIL() << "cuda:1 of a one-GPU backend was accepted";
  } catch (const BackendError& e) {
    EXPECT_TRUE(contains(e.what(), "cuda:1 is unavailable"));
  }
  const BackendChoice choice = make_backend("cuda:1", 0, true);
  EXPECT_EQ(choice.device, "cpu");
  EXPECT_EQ(choice.backend->device().kind, "cpu");
  EXPECT_TRUE(contains(choice.note, "cuda:1 is unavailable"));
  EXPECT_TRUE(contains(choice.note, "training on the CPU instead"));
}

// --- a plugin path that does not exist ---

class MissingPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (plugin_variable() != kMissingPlugin)
      GTEST_SKIP() << "needs MIXLAB_CUDA_BACKEND=" << kMissingPlugin
                   << " (ctest: backend.choice.missing)";
  }
};

TEST_F(MissingPlugin, ReasonNamesTheFile) {
  const std::string reason = cuda_backend_unavailable_reason();
  EXPECT_TRUE(contains(reason, std::string("the CUDA backend (") + kMissingPlugin +
                                   ") cannot be loaded: the file does not exist"));
  const auto statuses = backend_statuses();
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_TRUE(statuses[0].available);
  EXPECT_FALSE(statuses[1].available);
  EXPECT_EQ(statuses[1].detail, reason);
}

TEST_F(MissingPlugin, CudaFallsBackWithANoteOrThrows) {
  const std::string reason = cuda_backend_unavailable_reason();
  const BackendChoice choice = make_backend("cuda", 0, true);
  EXPECT_EQ(choice.device, "cpu");
  EXPECT_EQ(choice.backend->device().kind, "cpu");
  EXPECT_EQ(choice.note, "cuda:0 is unavailable: " + reason + "; training on the CPU instead");
  try {
    make_backend("cuda", 0, false);
    FAIL() << "cuda without a plugin was accepted";
  } catch (const BackendError& e) {
    EXPECT_EQ(std::string(e.what()), "cuda:0 is unavailable: " + reason);
  }
}

TEST_F(MissingPlugin, AutoRunsOnTheCpuWithoutANote) {
  const BackendChoice choice = make_backend("auto", 1, false);
  EXPECT_EQ(choice.device, "cpu");
  EXPECT_EQ(choice.note, "");
  EXPECT_EQ(choice.backend->device().threads, 1);
}

// --- the real libmixlab-cuda.so of this build, on a machine without a driver or GPU ---

class RealPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!plugin_variable().empty())
      GTEST_SKIP() << "MIXLAB_CUDA_BACKEND is set: the build tree's plugin is not looked for";
    const std::string path = mixlab::test::built("lib/mixlab/") + cuda::kPluginFileName;
    if (!std::filesystem::exists(path))
      GTEST_SKIP() << path << " is not built (a build without the CUDA backend)";
    for (const DeviceInfo& d : available_devices()) {
      if (d.kind == "cuda")
        GTEST_SKIP() << "this machine has a GPU (" << d.name
                     << "): the no-driver case cannot be checked here (tests/gpu covers it)";
    }
  }
};

TEST_F(RealPlugin, LoadsButSaysThereIsNoDriverOrGpu) {
  const cuda::PluginLoad& plugin = cuda::plugin();
  ASSERT_NE(plugin.api, nullptr) << plugin.error;
  const std::string reason = cuda_backend_unavailable_reason();
  EXPECT_TRUE(contains(reason, "no NVIDIA GPU or driver found"));
  EXPECT_FALSE(backend_statuses()[1].available);
}

TEST_F(RealPlugin, CudaFallsBackOrThrows) {
  const BackendChoice choice = make_backend("cuda", 0, true);
  EXPECT_EQ(choice.device, "cpu");
  EXPECT_TRUE(contains(choice.note, "no NVIDIA GPU or driver found"));
  EXPECT_THROW(make_backend("cuda", 0, false), BackendError);
  EXPECT_EQ(make_backend("auto", 0, false).device, "cpu");
}

}  // namespace
