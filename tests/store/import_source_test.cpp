// Issue 25, item 12: importing never writes beside the source, whether the source is accepted or
// refused: its folder lists the same files afterwards (no -wal, -shm or -journal left behind)
// and the source's bytes are unchanged. Runs still in a source's -wal (a copied file, a crashed
// writer, a live store) are imported all the same.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/store/run_import.h"
#include "app/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace mixlab::store {
namespace {

namespace fs = std::filesystem;
using testing::sample_run;
using testing::TempDir;

// Each file of the folder with its bytes.
std::vector<std::pair<std::string, std::string>> folder_state(const fs::path& folder) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& entry : fs::directory_iterator(folder))
    files.emplace_back(entry.path().filename().string(), testing::read_bytes(entry.path()));
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> names_of(const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::string> names;
  for (const auto& [name, bytes] : files) names.push_back(name);
  return names;
}

// A source with one finished run, closed (no side files).
void make_source(const fs::path& file, const std::string& name = "elsewhere") {
  RunStore s = RunStore::open(file);
  s.insert_run(sample_run(name));
  s.connection().exec("UPDATE runs SET status = 'finished'");
}

TEST(ImportSource, AcceptedAndRefusedSourcesLeaveTheirFolderAsItWas) {
  TempDir dir;
  fs::create_directory(dir / "src");
  const fs::path source = dir / "src" / "source.sqlite";
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const auto import_keeps_folder = [&](bool accepted) {
    const auto before = folder_state(dir / "src");
    if (accepted) {
      EXPECT_EQ(import_runs(store, source).added.size(), 1u);
    } else {
      EXPECT_THROW(import_runs(store, source), StoreError);
    }
    const auto after = folder_state(dir / "src");
    EXPECT_EQ(names_of(after), names_of(before));
    EXPECT_TRUE(after == before) << "a file of the source's folder changed";
  };
  make_source(source);
  import_keeps_folder(true);
  {
    RunStore s = RunStore::open(source);
    s.connection().exec("PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  }
  import_keeps_folder(false);
  {
    Connection db(source.string(), OpenMode::read_write);
    db.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    db.exec("UPDATE runs SET precision = 'evil'");
  }
  import_keeps_folder(false);
  {
    Connection db(source.string(), OpenMode::read_write);
    db.exec("PRAGMA application_id = 7");
  }
  import_keeps_folder(false);
}

// A file copied with its -wal while its store was open (or left so by a crash): the runs only
// in the -wal are imported, and neither file changes nor does a -shm appear beside them.
TEST(ImportSource, RunsOnlyInACopiedWalAreImportedWithoutTouchingIt) {
  TempDir dir;
  fs::create_directory(dir / "copy");
  {
    RunStore live = RunStore::open(dir / "live.sqlite");
    live.insert_run(sample_run("in the wal"));
    live.connection().exec("UPDATE runs SET status = 'finished'");
    ASSERT_GT(fs::file_size(dir / "live.sqlite-wal"), 0u);
    fs::copy_file(dir / "live.sqlite", dir / "copy" / "source.sqlite");
    fs::copy_file(dir / "live.sqlite-wal", dir / "copy" / "source.sqlite-wal");
  }
  const auto before = folder_state(dir / "copy");
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const ImportResult r = import_runs(store, dir / "copy" / "source.sqlite");
  ASSERT_EQ(r.added.size(), 1u);
  EXPECT_EQ(store.run(r.added[0].id).name, "in the wal");
  EXPECT_EQ(names_of(folder_state(dir / "copy")), names_of(before));
  EXPECT_TRUE(folder_state(dir / "copy") == before) << "the source or its -wal changed";
}

// A store another connection has open (a live history): read through its -wal and -shm as any
// reader would, making no file beside it.
TEST(ImportSource, ALiveSourceIsReadThroughItsWal) {
  TempDir dir;
  fs::create_directory(dir / "src");
  RunStore live = RunStore::open(dir / "src" / "live.sqlite");
  live.insert_run(sample_run("live"));
  live.connection().exec("UPDATE runs SET status = 'finished'");
  const auto names = names_of(folder_state(dir / "src"));
  const std::string db_bytes = testing::read_bytes(dir / "src" / "live.sqlite");
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const ImportResult r = import_runs(store, dir / "src" / "live.sqlite");
  ASSERT_EQ(r.added.size(), 1u);
  EXPECT_EQ(store.run(r.added[0].id).name, "live");
  EXPECT_EQ(names_of(folder_state(dir / "src")), names);
  EXPECT_EQ(testing::read_bytes(dir / "src" / "live.sqlite"), db_bytes);
  live.insert_run(sample_run("still writable"));  // the import left the source usable
}

}  // namespace
}  // namespace mixlab::store
