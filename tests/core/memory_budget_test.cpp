// The memory budget the pre-checks refuse by: MemAvailable, or a cgroup's limit less its usage
// when that is tighter (v2 memory.max on this group or any above it, v1 memory.limit_in_bytes),
// read from made-up /proc and /sys/fs/cgroup trees.
#include "engine/core/memory_budget.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace mixlab {
namespace {

namespace fs = std::filesystem;

class MemoryBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("mixlab_memory_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_ / "proc" / "self");
    fs::create_directories(root_ / "cgroup");
    put("proc/meminfo", "MemTotal:       16000000 kB\nMemAvailable:    8000000 kB\n");
  }
  void TearDown() override { fs::remove_all(root_); }
  void put(const std::string& file, const std::string& text) {
    fs::create_directories((root_ / file).parent_path());
    std::ofstream(root_ / file) << text;
  }
  MemoryBudget budget() const { return memory_budget(root_ / "proc", root_ / "cgroup"); }
  fs::path root_;
};

TEST_F(MemoryBudgetTest, NoLimitIsTheMachinesAvailableMemory) {
  put("proc/self/cgroup", "0::/user.slice/session-1.scope\n");
  put("cgroup/user.slice/session-1.scope/memory.max", "max\n");
  const MemoryBudget b = budget();
  EXPECT_EQ(b.bytes, 8000000ull * 1024);
  EXPECT_NE(b.source.find("MemAvailable"), std::string::npos) << b.source;
  EXPECT_TRUE(b.refuses(9000000ull * 1024));
  EXPECT_FALSE(b.refuses(1000));
}

TEST_F(MemoryBudgetTest, CgroupV2LimitLessUsageOnThisGroupOrAnyAbove) {
  put("proc/self/cgroup", "0::/box/job\n");
  put("cgroup/box/job/memory.max", "max\n");
  put("cgroup/box/memory.max", "209715200\n");  // 200 MiB on the parent
  put("cgroup/box/memory.current", "73400320\n");  // 70 MiB used, 20 MiB of it file cache
  put("cgroup/box/memory.stat", "anon 52428800\ninactive_file 20971520\n");
  const MemoryBudget b = budget();
  EXPECT_EQ(b.bytes, 209715200ull - (73400320ull - 20971520ull));
  EXPECT_NE(b.source.find("memory.max"), std::string::npos) << b.source;
  EXPECT_NE(b.source.find("200.0 MiB"), std::string::npos) << b.source;
}

TEST_F(MemoryBudgetTest, CgroupV1Limit) {
  put("proc/self/cgroup", "12:pids:/docker/abc\n4:memory:/docker/abc\n");
  put("cgroup/memory/docker/abc/memory.limit_in_bytes", "104857600\n");
  put("cgroup/memory/docker/abc/memory.usage_in_bytes", "4857600\n");
  const MemoryBudget b = budget();
  EXPECT_EQ(b.bytes, 100000000ull);
  EXPECT_NE(b.source.find("memory.limit_in_bytes"), std::string::npos) << b.source;
}

TEST_F(MemoryBudgetTest, CgroupV1UnlimitedIsNoLimit) {
  put("proc/self/cgroup", "4:memory:/\n");
  put("cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(budget().bytes, 8000000ull * 1024);
}

TEST_F(MemoryBudgetTest, AddressSpaceLimitLessWhatIsMappedWhenTighter) {
  put("proc/self/limits",
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max stack size            8388608              unlimited            bytes     \n"
      "Max address space         2147483648           unlimited            bytes     \n");
  put("proc/self/status", "Name:\tmixlab-cli\nVmPeak:\t  600000 kB\nVmSize:\t  524288 kB\n");
  const MemoryBudget b = budget();
  EXPECT_EQ(b.bytes, 2147483648ull - 524288ull * 1024);
  EXPECT_NE(b.source.find("address-space limit (ulimit -v) 2048.0 MiB, 512.0 MiB mapped"),
            std::string::npos)
      << b.source;
  // Unlimited: the machine's figure.
  put("proc/self/limits",
      "Max address space         unlimited            unlimited            bytes\n");
  EXPECT_EQ(budget().bytes, 8000000ull * 1024);
  // Looser than MemAvailable: MemAvailable.
  put("proc/self/limits",
      "Max address space         68719476736          unlimited            bytes\n");
  EXPECT_EQ(budget().bytes, 8000000ull * 1024);
}

TEST_F(MemoryBudgetTest, NothingReadableRefusesNothing) {
  fs::remove(root_ / "proc" / "meminfo");
  const MemoryBudget b = budget();
  EXPECT_FALSE(b.known());
  EXPECT_FALSE(b.refuses(std::uint64_t{1} << 60));
}

// On this machine: a figure, and one the kernel would agree is not unlimited.
TEST(MemoryBudget, ThisMachine) {
  const MemoryBudget b = memory_budget();
  ASSERT_TRUE(b.known());
  EXPECT_GT(b.bytes, 0u);
  std::printf("memory budget here: %s (%s)\n", format_memory(b.bytes).c_str(), b.source.c_str());
}

}  // namespace
}  // namespace mixlab
