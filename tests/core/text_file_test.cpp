// The one bounded reader of the JSON and text files MixLab is given (engine/core/text_file.h):
// a regular file is read whole; a FIFO, a device or a directory is refused by its kind without
// blocking or reading; a file over the cap is refused by its size, and one that grows past the
// cap while read is cut off, all naming the file.
#include "engine/core/text_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "tests/data/data_files.h"  // TempDir

namespace mixlab {
namespace {

namespace fs = std::filesystem;

constexpr TextFileKind kTiny{"tiny file", 1024, " (it lists a few names)"};

class TextFileTest : public ::testing::Test {
 protected:
  const test::TempDir temp_;
  const fs::path& dir_ = temp_.path();
};

TEST_F(TextFileTest, ARegularFileIsReadWhole) {
  std::ofstream(dir_ / "a.json") << "{\"a\": 1}\n";
  EXPECT_EQ(read_text_file<ConfigError>(dir_ / "a.json", kTiny), "{\"a\": 1}\n");
  std::ofstream(dir_ / "full.txt") << std::string(1024, 'x');
  EXPECT_EQ(read_text_file<ConfigError>(dir_ / "full.txt", kTiny).size(), 1024u);
}

TEST_F(TextFileTest, WhatIsNotARegularFileIsRefusedByItsKindWithoutBlocking) {
  ASSERT_EQ(mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  TextFileRead r = try_read_text_file(dir_ / "fifo", kTiny);
  EXPECT_EQ(r.problem,
            (dir_ / "fifo").string() + ": cannot read tiny file: not a regular file (a FIFO)");
  r = try_read_text_file("/dev/zero", kTiny);
  EXPECT_EQ(r.problem, "/dev/zero: cannot read tiny file: not a regular file (a character device)");
  r = try_read_text_file(dir_, kTiny);
  EXPECT_EQ(r.problem, dir_.string() + ": cannot read tiny file: it is a directory");
  r = try_read_text_file(dir_ / "missing", kTiny);
  EXPECT_TRUE(r.missing);
  EXPECT_EQ(r.problem,
            (dir_ / "missing").string() + ": cannot open tiny file: No such file or directory");
  EXPECT_THROW(read_text_file<SpecError>(dir_ / "fifo", kTiny), SpecError);
}

TEST_F(TextFileTest, AFileOverTheCapIsRefusedBySize) {
  std::ofstream(dir_ / "big.json") << std::string(3 << 20, ' ');
  const TextFileRead r = try_read_text_file(dir_ / "big.json", kTiny);
  EXPECT_EQ(r.problem, (dir_ / "big.json").string() +
                           ": the tiny file is 3 MiB; a tiny file is at most 1 KiB (it lists a few "
                           "names)");
  EXPECT_TRUE(r.text.empty());
}

}  // namespace
}  // namespace mixlab
