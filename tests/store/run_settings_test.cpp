// The run store and the run-settings table (engine/train/run_fields.h): every setting has its
// column and is written and read back; settings are read back as they were recorded.
#include <gtest/gtest.h>

#include "app/store/run_store.h"
#include "engine/train/run_fields.h"
#include "tests/store/store_test_util.h"

namespace mixlab::store {
namespace {

using testing::sample_run;
using testing::TempDir;

// Every setting of the run-settings table has its column, and each one alone set to its example
// is written and read back with every other setting unchanged. A new field fails here until
// app/store/schema.cpp has a migration adding its column.
TEST(RunStore, EveryRunSettingIsWrittenAndReadBack) {
  TempDir dir;
  RunStore store = RunStore::open(dir / "runs.sqlite");
  // Every column first: without one, every insert fails and says less.
  for (const RunField& f : run_fields()) {
    const std::string column(f.store_column);
    ASSERT_EQ(store.connection().query_int(
                  "SELECT count(*) FROM pragma_table_info('runs') WHERE name = '" + column + "'"),
              1)
        << "no column " << column << " for run setting " << f.name
        << ": add a migration adding it in app/store/schema.cpp";
  }
  for (const RunField& f : run_fields()) {
    SCOPED_TRACE(std::string(f.name));
    RunRecord in = sample_run();
    in.config = RunConfig{};
    set_field_text(f, in.config, f.example);
    const RunRecord out = store.run(store.insert_run(in));
    EXPECT_EQ(field_text(f, out.config), f.example);
    for (const RunField& other : run_fields())
      EXPECT_EQ(field_text(other, out.config), field_text(other, in.config)) << other.name;
  }
}

// A run is recorded before the trainer checks its settings, so the store keeps runs it then
// refused and reads them back as they were; a setting that cannot be read at all marks the run
// damaged, naming its column and value (tests/store/damaged_rows_test.cpp has more).
TEST(RunStore, SettingsAreReadBackAsRecorded) {
  TempDir dir;
  RunStore store = RunStore::open(dir / "runs.sqlite");
  RunRecord refused = sample_run();
  refused.config.optimizer.learning_rate = -1.0;
  refused.config.optimizer.momentum = 1.5;
  const std::int64_t id = store.insert_run(refused);
  EXPECT_EQ(store.run(id).config.optimizer.learning_rate, -1.0);
  EXPECT_EQ(store.run(id).config.optimizer.momentum, 1.5);

  store.connection().exec("UPDATE runs SET precision = 'fp8' WHERE id = " + std::to_string(id));
  const RunRecord damaged = store.run(id);
  ASSERT_EQ(damaged.damage.size(), 1u);
  EXPECT_EQ(damaged.damage[0].column, "precision");
  EXPECT_NE(damaged.damage[0].problem.find("'fp8'"), std::string::npos)
      << damaged.damage[0].problem;
  EXPECT_EQ(damaged.config.optimizer.learning_rate, -1.0);  // the rest as recorded
  // A damaged row's text is quoted escaped: the problem drives no terminal that shows it.
  store.connection()
      .prepare("UPDATE runs SET precision = ? WHERE id = ?")
      .bind(1, std::string("fp\x1b[2J\a8"))
      .bind(2, id)
      .run();
  const RunRecord escaped = store.run(id);
  ASSERT_EQ(escaped.damage.size(), 1u);
  EXPECT_NE(escaped.damage[0].problem.find("'fp\\x1b[2J\\x078'"), std::string::npos)
      << escaped.damage[0].problem;
}

}  // namespace
}  // namespace mixlab::store
