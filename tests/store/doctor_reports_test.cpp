// The doctor's reports in the run store (schema version 4): kept with the runs they measured,
// found from a run, gone with the runs' deletion only as links, and refused for unknown runs.
#include <gtest/gtest.h>

#include "app/store/run_store.h"
#include "tests/store/store_test_util.h"

namespace mixlab::store {
namespace {

using testing::sample_run;
using testing::TempDir;

DoctorReportRecord report(std::vector<std::int64_t> runs) {
  DoctorReportRecord r;
  r.model_name = "cifar10-mlp";
  r.device = "AMD EPYC";
  r.batch_size = 32;
  r.mixed_policy = "mixed_bfloat16";
  r.verdict = "mixed_bfloat16 is predicted 1.13x slower than float32 ...";
  r.report_json = R"({"verdict": "..."})";
  r.run_ids = std::move(runs);
  return r;
}

TEST(DoctorReports, AreKeptWithTheirRunsAndFoundFromEither) {
  TempDir dir;
  RunStore store = RunStore::open(dir.path() / "runs.sqlite");
  const std::int64_t a = store.insert_run(sample_run("f32"));
  const std::int64_t b = store.insert_run(sample_run("mixed"));
  const std::int64_t other = store.insert_run(sample_run("other"));
  const std::int64_t id = store.insert_doctor_report(report({b, a}));
  const std::vector<DoctorReportRecord> all = store.doctor_reports();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].id, id);
  EXPECT_EQ(all[0].run_ids, (std::vector<std::int64_t>{a, b}));
  EXPECT_EQ(all[0].verdict, report({}).verdict);
  EXPECT_EQ(all[0].report_json, report({}).report_json);
  EXPECT_GT(all[0].created_at_ms, 0);
  EXPECT_EQ(store.doctor_reports(a).size(), 1u);
  EXPECT_TRUE(store.doctor_reports(other).empty());
  ASSERT_TRUE(store.find_doctor_report(id));
  EXPECT_FALSE(store.find_doctor_report(id + 1));
  // Deleting a run drops its link; the report stays with the other run.
  RunSummary ended;
  ended.status = RunStatus::finished;
  store.finish_run(a, ended, now_utc_ms());
  store.delete_run(a);
  EXPECT_EQ(store.find_doctor_report(id)->run_ids, std::vector<std::int64_t>{b});
}

TEST(DoctorReports, AnUnknownRunIsRefusedAndNothingIsKept) {
  TempDir dir;
  RunStore store = RunStore::open(dir.path() / "runs.sqlite");
  const std::int64_t a = store.insert_run(sample_run("f32"));
  EXPECT_THROW(store.insert_doctor_report(report({a, a + 41})), StoreError);
  EXPECT_TRUE(store.doctor_reports().empty());
}

}  // namespace
}  // namespace mixlab::store
