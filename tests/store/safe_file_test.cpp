// Exports never destroy what was at the name given: a run database or its side files (by inode,
// whatever the name: check_output_target), devices, FIFOs, folders; links are written through;
// a failed write leaves nothing.
#include "app/store/safe_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "app/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace mixlab::store {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

void write_text(const fs::path& file, const std::string& text) {
  write_file_atomically(file, [&](std::ostream& out) { out << text; });
}

std::string refusal(const fs::path& file) {
  try {
    write_text(file, "csv\r\n");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// No temporary file is left in the folder.
void expect_no_temporaries(const fs::path& folder) {
  for (const auto& entry : fs::directory_iterator(folder)) {
    EXPECT_FALSE(entry.path().filename().string().starts_with('.')) << entry.path();
  }
}

TEST(SafeFile, WritesANewFileAndReplacesARegularOneKeepingItsMode) {
  TempDir dir;
  write_text(dir / "a.csv", "one");
  EXPECT_EQ(testing::read_bytes(dir / "a.csv"), "one");
  fs::permissions(dir / "a.csv", fs::perms::owner_read | fs::perms::owner_write);
  write_text(dir / "a.csv", "two");
  EXPECT_EQ(testing::read_bytes(dir / "a.csv"), "two");
  EXPECT_EQ(fs::status(dir / "a.csv").permissions(),
            fs::perms::owner_read | fs::perms::owner_write);
  expect_no_temporaries(dir.path());
}

TEST(SafeFile, RefusesTheOpenRunDatabaseByInodeWhateverItsName) {
  TempDir dir;
  const fs::path db = dir / "runs.sqlite";
  RunStore store = RunStore::open(db);
  store.insert_run(testing::sample_run());
  const std::string before = testing::read_bytes(db);
  std::string why = refusal(db);
  EXPECT_NE(why.find("it is the run database"), std::string::npos) << why;
  // Another name for the same file: a hard link and a relative path.
  fs::create_hard_link(db, dir / "other-name.csv");
  why = refusal(dir / "other-name.csv");
  EXPECT_NE(why.find("it is the run database"), std::string::npos) << why;
  why = refusal(dir / "runs.sqlite-wal");
  EXPECT_NE(why.find("a file of the run database"), std::string::npos) << why;
  EXPECT_EQ(testing::read_bytes(db), before);
  expect_no_temporaries(dir.path());
}

// check_output_target, the one guard of every output: a database this process has opened stays
// protected once closed, under every name that reaches it or one of its side files, whether that
// file is there or not; the refusal is an OutputTargetError naming the file and the database.
TEST(SafeFile, OutputGuardRefusesEveryNameOfARunDatabaseAndItsSideFiles) {
  TempDir dir;
  const fs::path db = dir / "runs.sqlite";
  RunStore::open(db).insert_run(testing::sample_run());  // closed again at once
  const std::string before = testing::read_bytes(db);
  fs::create_directory(dir / "sub");
  fs::create_hard_link(db, dir / "hard.csv");
  fs::create_symlink("runs.sqlite", dir / "link.csv");
  fs::create_symlink("runs.sqlite-journal", dir / "dangling.csv");
  testing::write_bytes(dir / "runs.sqlite-shm", "");  // one side file there, the others not
  for (const char* name : {"runs.sqlite", "sub/../runs.sqlite", "hard.csv", "link.csv",
                           "runs.sqlite-wal", "runs.sqlite-shm", "runs.sqlite-journal",
                           "dangling.csv", "sub/../runs.sqlite-wal"}) {
    try {
      check_output_target(dir / name);
      ADD_FAILURE() << name << " was not refused";
    } catch (const OutputTargetError& e) {
      const std::string why = e.what();
      EXPECT_NE(why.find((dir / name).string()), std::string::npos) << why;
      EXPECT_NE(why.find("run database " + db.string()), std::string::npos) << why;
    }
    EXPECT_THROW(write_text(dir / name, "csv"), OutputTargetError) << name;
  }
  EXPECT_EQ(testing::read_bytes(db), before);
  EXPECT_FALSE(fs::exists(dir / "runs.sqlite-wal"));
  EXPECT_FALSE(fs::exists(dir / "runs.sqlite-journal"));
  // Other names are written as ever.
  EXPECT_NO_THROW(check_output_target(dir / "runs.sqlite.csv"));
  EXPECT_NO_THROW(check_output_target(dir / "sub" / "runs.sqlite"));
  write_text(dir / "runs.csv", "csv");
  EXPECT_EQ(testing::read_bytes(dir / "runs.csv"), "csv");
  expect_no_temporaries(dir.path());
}

// A database named but never opened (mixlab-cli doctor --db PATH without --measure), the default
// database ($MIXLAB_DB here), and a database reached through a link, whose side files SQLite
// keeps beside the real file.
TEST(SafeFile, OutputGuardCoversNamedDefaultAndLinkedDatabases) {
  TempDir dir;
  testing::write_bytes(dir / "named.sqlite", "not opened");
  protect_database(dir / "named.sqlite");
  EXPECT_THROW(check_output_target(dir / "named.sqlite"), OutputTargetError);
  EXPECT_THROW(check_output_target(dir / "named.sqlite-wal"), OutputTargetError);

  const char* old = std::getenv("MIXLAB_DB");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("MIXLAB_DB", (dir / "default.sqlite").c_str(), 1);
  EXPECT_THROW(check_output_target(dir / "default.sqlite"), OutputTargetError);
  EXPECT_THROW(check_output_target(dir / "default.sqlite-shm"), OutputTargetError);
  if (old != nullptr) ::setenv("MIXLAB_DB", saved.c_str(), 1); else ::unsetenv("MIXLAB_DB");
  EXPECT_NO_THROW(check_output_target(dir / "default.sqlite"));

  fs::create_directory(dir / "real");
  RunStore::open(dir / "real" / "runs.sqlite");
  fs::create_symlink("real/runs.sqlite", dir / "alias.sqlite");
  protect_database(dir / "alias.sqlite");
  EXPECT_THROW(check_output_target(dir / "real" / "runs.sqlite-journal"), OutputTargetError);
}

TEST(SafeFile, RefusesWhatIsNotARegularFile) {
  TempDir dir;
  fs::create_directory(dir / "folder");
  EXPECT_NE(refusal(dir / "folder").find("a folder"), std::string::npos);
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0644), 0);
  EXPECT_NE(refusal(dir / "fifo").find("a FIFO"), std::string::npos);
  EXPECT_TRUE(fs::is_fifo(dir / "fifo"));
  EXPECT_NE(refusal("/dev/null").find("a device"), std::string::npos);
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  // Through a link, too.
  fs::create_symlink("/dev/null", dir / "null-link");
  EXPECT_NE(refusal(dir / "null-link").find("a device"), std::string::npos);
  EXPECT_NE(refusal("").find("empty"), std::string::npos);
}

TEST(SafeFile, WritesThroughLinksAndKeepsThem) {
  TempDir dir;
  fs::create_directory(dir / "real");
  write_text(dir / "real" / "target.csv", "old");
  fs::create_symlink("real/target.csv", dir / "link.csv");
  write_text(dir / "link.csv", "new");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "link.csv")));
  EXPECT_EQ(testing::read_bytes(dir / "real" / "target.csv"), "new");
  // A link to a file that does not exist yet creates it where the link points.
  fs::create_symlink("real/later.csv", dir / "dangling.csv");
  write_text(dir / "dangling.csv", "made");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "dangling.csv")));
  EXPECT_EQ(testing::read_bytes(dir / "real" / "later.csv"), "made");
  // The old fixed temporary name is nothing special any more: a link there is left alone.
  write_text(dir / "victim", "keep");
  fs::create_symlink("victim", dir / "out.csv.tmp");
  write_text(dir / "out.csv", "data");
  EXPECT_EQ(testing::read_bytes(dir / "victim"), "keep");
  EXPECT_EQ(testing::read_bytes(dir / "out.csv"), "data");
  expect_no_temporaries(dir / "real");
}

TEST(SafeFile, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  TempDir dir;
  write_text(dir / "a.csv", "old");
  EXPECT_THROW(write_file_atomically(dir / "a.csv",
                                     [](std::ostream& out) {
                                       out << "half";
                                       throw std::runtime_error("stopped");
                                     }),
               std::runtime_error);
  EXPECT_EQ(testing::read_bytes(dir / "a.csv"), "old");
  expect_no_temporaries(dir.path());
  EXPECT_THROW(write_text(dir / "no-such-folder" / "a.csv", "x"), Error);
}

// A full disk is said as such, and the target keeps its old contents (/dev/full fails every
// write with ENOSPC; the temporary is in the target's folder, so it is simulated by a write
// error rather than a real full disk here: tests/faults fills a real small file system).
TEST(SafeFile, WriteErrorsAreNamed) {
  TempDir dir;
  write_text(dir / "a.csv", "old");
  EXPECT_THROW(write_file_atomically(dir / "a.csv",
                                     [](std::ostream& out) {
                                       out.setstate(std::ios::badbit);
                                     }),
               Error);
  EXPECT_EQ(testing::read_bytes(dir / "a.csv"), "old");
  expect_no_temporaries(dir.path());
}

}  // namespace
}  // namespace mixlab::store
