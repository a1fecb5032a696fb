// The run controller: runs train on its worker thread, are recorded in the store, hand their
// metrics over through take_metrics(), stop within a step, and fail without taking anything down.
#include <QSignalSpy>
#include <QTest>

#include "app/run/run_controller.h"
#include "app/store/run_store.h"
#include "engine/data/dataset.h"
#include "tests/store/store_test_util.h"

namespace mixlab::app {

namespace {

RunRequest tiny_request(std::int64_t steps, const char* dataset = "synthetic:8x8x1:4:256") {
  RunRequest r;
  r.spec = parse_model_json(store::testing::kTinyModel);
  r.model_name = "tiny";
  r.config.dataset = parse_dataset_spec(dataset);
  r.config.steps = steps;
  r.config.threads = 1;
  r.config.evaluate = false;
  return r;
}

std::size_t total_steps(const std::vector<MetricsBatch>& batches, std::int64_t run_id) {
  std::size_t n = 0;
  for (const MetricsBatch& b : batches)
    if (b.run_id == run_id) n += b.steps.size();
  return n;
}

}  // namespace

class RunControllerTest : public QObject {
  Q_OBJECT

 private slots:
  void a_run_is_trained_recorded_and_streamed() {
    store::testing::TempDir dir;
    RunController controller(dir / "runs.sqlite");
    QSignalSpy started(&controller, &RunController::run_started);
    QSignalSpy finished(&controller, &RunController::run_finished);
    QSignalSpy queue(&controller, &RunController::queue_finished);
    std::vector<MetricsBatch> taken;
    QVERIFY(controller.start({tiny_request(50)}));
    QVERIFY(controller.busy());
    QVERIFY(!controller.start({tiny_request(1)}));  // one queue at a time
    while (queue.isEmpty()) {
      QTest::qWait(30);  // the GUI's drain timer
      for (MetricsBatch& b : controller.take_metrics()) taken.push_back(std::move(b));
    }
    for (MetricsBatch& b : controller.take_metrics()) taken.push_back(std::move(b));
    QCOMPARE(started.size(), 1);
    QCOMPARE(finished.size(), 1);
    const auto run_id = finished[0][0].value<qint64>();
    QVERIFY(run_id > 0);
    QCOMPARE(started[0][0].value<StartedRun>().run_id, run_id);
    QCOMPARE(started[0][0].value<StartedRun>().total_steps, 50);
    QCOMPARE(finished[0][1].value<RunSummary>().status, RunStatus::finished);
    QCOMPARE(total_steps(taken, run_id), std::size_t(50));
    QCOMPARE(queue[0][0].value<QList<qint64>>(), QList<qint64>{run_id});
    QVERIFY(!controller.busy());

    store::RunStore store = store::RunStore::open(dir / "runs.sqlite");
    QCOMPARE(store.run(run_id).status, store::RecordStatus::finished);
    QCOMPARE(store.step_count(run_id), 50);
  }

  void stop_ends_the_run_within_a_step_and_drops_the_queue() {
    store::testing::TempDir dir;
    RunController controller(dir / "runs.sqlite");
    QSignalSpy finished(&controller, &RunController::run_finished);
    QSignalSpy queue(&controller, &RunController::queue_finished);
    QVERIFY(controller.start({tiny_request(1'000'000'000), tiny_request(10)}));
    std::size_t steps = 0;
    while (steps < 20) {
      QTest::qWait(20);
      for (const MetricsBatch& b : controller.take_metrics()) steps += b.steps.size();
    }
    controller.stop();
    QVERIFY(queue.wait(10000));
    QCOMPARE(finished.size(), 1);  // the second run never started
    const auto run_id = finished[0][0].value<qint64>();
    QCOMPARE(finished[0][1].value<RunSummary>().status, RunStatus::stopped);
    store::RunStore store = store::RunStore::open(dir / "runs.sqlite");
    QCOMPARE(store.run(run_id).status, store::RecordStatus::stopped);
    QCOMPARE(store.list_runs().size(), std::size_t(1));
  }

  void a_failing_run_is_recorded_and_the_next_one_runs() {
    store::testing::TempDir dir;
    RunController controller(dir / "runs.sqlite");
    QSignalSpy finished(&controller, &RunController::run_finished);
    QSignalSpy queue(&controller, &RunController::queue_finished);
    QVERIFY(controller.start({tiny_request(5, "mnist:/nonexistent/mnist"), tiny_request(5)}));
    QVERIFY(queue.wait(30000));
    QCOMPARE(finished.size(), 2);
    const auto failed = finished[0][1].value<RunSummary>();
    QCOMPARE(failed.status, RunStatus::failed);
    QVERIFY2(failed.message.find("/nonexistent/mnist") != std::string::npos,
             failed.message.c_str());
    QCOMPARE(finished[1][1].value<RunSummary>().status, RunStatus::finished);
    store::RunStore store = store::RunStore::open(dir / "runs.sqlite");
    QCOMPARE(store.run(finished[0][0].value<qint64>()).status, store::RecordStatus::failed);
  }

  // Without a usable CUDA backend (here: its library missing) a GPU run fails with the reason
  // and is recorded as failed; the CPU run queued after it still runs.
  void a_gpu_run_that_cannot_start_is_recorded_as_failed_with_the_reason() {
    qputenv("MIXLAB_CUDA_BACKEND", "/nonexistent/libmixlab-cuda.so");
    store::testing::TempDir dir;
    RunController controller(dir / "runs.sqlite");
    QSignalSpy finished(&controller, &RunController::run_finished);
    QSignalSpy queue(&controller, &RunController::queue_finished);
    RunRequest gpu = tiny_request(5);
    gpu.device = "cuda:0";
    QVERIFY(controller.start({gpu, tiny_request(5)}));
    QVERIFY(queue.wait(30000));
    QCOMPARE(finished.size(), 2);
    const auto failed = finished[0][1].value<RunSummary>();
    QCOMPARE(failed.status, RunStatus::failed);
    QVERIFY2(failed.message.find("cuda:0 is unavailable: the CUDA backend "
                                 "(/nonexistent/libmixlab-cuda.so) cannot be loaded") !=
                 std::string::npos,
             failed.message.c_str());
    QCOMPARE(finished[1][1].value<RunSummary>().status, RunStatus::finished);
    store::RunStore store = store::RunStore::open(dir / "runs.sqlite");
    const store::RunRecord r = store.run(finished[0][0].value<qint64>());
    QCOMPARE(r.status, store::RecordStatus::failed);
    QCOMPARE(r.device, std::string("cuda:0"));
  }

  void an_unusable_store_fails_the_run_with_its_reason() {
    RunController controller("/proc/mixlab-test/runs.sqlite");
    QSignalSpy finished(&controller, &RunController::run_finished);
    QSignalSpy queue(&controller, &RunController::queue_finished);
    QVERIFY(controller.start({tiny_request(5)}));
    QVERIFY(queue.wait(10000));
    QCOMPARE(finished.size(), 1);
    QCOMPARE(finished[0][0].value<qint64>(), 0);
    const auto summary = finished[0][1].value<RunSummary>();
    QCOMPARE(summary.status, RunStatus::failed);
    QVERIFY2(summary.message.find("/proc/mixlab-test") != std::string::npos,
             summary.message.c_str());
  }
};

}  // namespace mixlab::app

QTEST_GUILESS_MAIN(mixlab::app::RunControllerTest)
#include "run_controller_test.moc"
