// Issue 25, item 3: one bad row must not lock the user out of the whole history. A run whose
// setting the field table cannot read (a value changed by hand with sqlite3, or written by
// another program) is read as damaged, naming the column and the problem, while every other run
// reads as before; it can be deleted; exports refuse to write defaults in place of what could not
// be read; and `runs import` refuses a file holding such a run, importing nothing from it.
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "app/store/csv_export.h"
#include "app/store/run_import.h"
#include "app/store/run_store.h"
#include "engine/train/run_fields.h"
#include "tests/store/store_test_util.h"

namespace mixlab::store {
namespace {

namespace fs = std::filesystem;
using testing::sample_run;
using testing::TempDir;

// Writes `value` into run `id`'s `column` behind the store's back, as sqlite3 would.
void set_by_hand(RunStore& store, std::int64_t id, const std::string& column,
                 const std::string& value) {
  store.connection()
      .prepare("UPDATE runs SET " + column + " = ? WHERE id = ?")
      .bind(1, value)
      .bind(2, id)
      .run();
}

// Every text setting of the field table, each made unreadable in turn.
TEST(DamagedRows, AnUnreadableSettingDamagesItsRunAlone) {
  for (const RunField& field : run_fields()) {
    if (field.type != FieldType::text) continue;
    SCOPED_TRACE(std::string(field.store_column));
    TempDir dir;
    RunStore store = RunStore::open(dir / "runs.sqlite");
    const std::int64_t first = store.insert_run(sample_run("first"));
    const std::int64_t bad = store.insert_run(sample_run("bad"));
    const std::int64_t last = store.insert_run(sample_run("last"));
    set_by_hand(store, bad, std::string(field.store_column), "evil");
    store.connection().exec("UPDATE runs SET status = 'finished'");  // deletable

    const std::vector<RunRecord> runs = store.list_runs();
    ASSERT_EQ(runs.size(), 3u);
    for (const RunRecord& r : runs) {
      if (r.id != bad) {
        EXPECT_TRUE(r.damage.empty()) << describe_damage(r);
        EXPECT_EQ(r.config.batch_size, 96);  // read as ever
        EXPECT_EQ(r.config.precision, Policy::mixed_float16);
        continue;
      }
      ASSERT_EQ(r.damage.size(), 1u);
      EXPECT_EQ(r.damage[0].column, field.store_column);
      EXPECT_NE(r.damage[0].problem.find("evil"), std::string::npos) << r.damage[0].problem;
      EXPECT_EQ(r.name, "bad");  // the rest of the row is read
      EXPECT_EQ(r.config.batch_size, 96);
      EXPECT_EQ(r.tags, (std::vector<std::string>{"a,b", "baseline"}));
    }
    const auto found = store.find_run(bad);
    ASSERT_TRUE(found.has_value());
    EXPECT_NE(describe_damage(*found).find(std::string(field.store_column) + ": "),
              std::string::npos)
        << describe_damage(*found);

    store.delete_run(bad);
    const std::vector<RunRecord> left = store.list_runs();
    ASSERT_EQ(left.size(), 2u);
    EXPECT_EQ(left[0].id, last);
    EXPECT_EQ(left[1].id, first);
  }
}

// A store reopened (read-only too) still lists a damaged run's neighbours.
TEST(DamagedRows, ReopeningAStoreWithADamagedRowWorks) {
  TempDir dir;
  {
    RunStore store = RunStore::open(dir / "runs.sqlite");
    store.insert_run(sample_run("good"));
    set_by_hand(store, store.insert_run(sample_run("bad")), "optimizer", "evil");
  }
  EXPECT_EQ(RunStore::open(dir / "runs.sqlite").list_runs().size(), 2u);
  RunStore reader = RunStore::open(dir / "runs.sqlite", StoreOptions{.read_only = true});
  const std::vector<RunRecord> runs = reader.list_runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_FALSE(runs[0].damage.empty());
  EXPECT_TRUE(runs[1].damage.empty());
}

// The exports of several runs never write a default in place of a setting they could not read.
TEST(DamagedRows, ExportsRefuseADamagedRunBeforeWritingAnything) {
  TempDir dir;
  RunStore store = RunStore::open(dir / "runs.sqlite");
  const std::int64_t good = store.insert_run(sample_run("good"));
  const std::int64_t bad = store.insert_run(sample_run("bad"));
  set_by_hand(store, bad, "loss_scaling", "evil");
  const std::int64_t ids[] = {good, bad};
  std::ostringstream out;
  try {
    write_summary_csv(out, store, ids);
    ADD_FAILURE() << "a damaged run was exported";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("run " + std::to_string(bad) + " is damaged"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(out.str().empty());
  EXPECT_THROW(write_long_steps_csv(out, store, ids), StoreError);
  EXPECT_THROW(write_layers_csv(out, store, ids), StoreError);
  write_summary_csv(out, store, std::span(ids).first(1));
  EXPECT_NE(out.str().find("good"), std::string::npos);
}

// `runs import` validates every run of the file through the field table and refuses the file
// whole, naming the run, the column and the value.
TEST(DamagedRows, ImportRefusesAFileWithAnUnreadableSetting) {
  for (const char* column : {"precision", "loss_scaling", "optimizer", "dataset"}) {
    SCOPED_TRACE(column);
    TempDir dir;
    const fs::path source = dir / "source.sqlite";
    {
      RunStore s = RunStore::open(source);
      s.insert_run(sample_run("fine"));
      set_by_hand(s, s.insert_run(sample_run("bad")), column, "evil");
      s.connection().exec("UPDATE runs SET status = 'finished'");
    }
    const std::string before = testing::read_bytes(source);
    RunStore store = RunStore::open(dir / "runs.sqlite");
    store.insert_run(sample_run("mine"));
    try {
      import_runs(store, source);
      ADD_FAILURE() << "imported";
    } catch (const StoreError& e) {
      const std::string why = e.what();
      EXPECT_NE(why.find(source.string()), std::string::npos) << why;
      EXPECT_NE(why.find("run 2 "), std::string::npos) << why;
      EXPECT_NE(why.find(std::string(column) + ": "), std::string::npos) << why;
      EXPECT_NE(why.find("'evil'"), std::string::npos) << why;
    }
    const std::vector<RunRecord> runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u) << "something was imported";
    EXPECT_EQ(runs[0].name, "mine");
    EXPECT_EQ(testing::read_bytes(source), before);
  }
}

}  // namespace
}  // namespace mixlab::store
