// The run controller: runs train on its worker thread, are recorded in the store, and reach the
// GUI as one ordered stream of events through a RunFeed (start, steps, epochs, layer times,
// finish, the queue's end); they stop within a step and fail without taking anything down.
#include <QSignalSpy>
#include <QTest>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "app/run/run_controller.h"
#include "app/run/run_feed.h"
#include "app/store/run_store.h"
#include "engine/data/dataset.h"
#include "engine/train/run_fields.h"
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

// What a feed hands on, in order.
struct FeedLog {
  explicit FeedLog(RunFeed& feed) {
    QObject::connect(&feed, &RunFeed::run_started, [this](const StartedRun& r) {
      started.push_back(r);
      order += 's';
    });
    QObject::connect(&feed, &RunFeed::metrics, [this](const MetricsBatch& b) {
      for (const StepMetrics& m : b.steps) steps[b.run_id].push_back(m.step);
      order += b.steps.empty() ? 'e' : 'm';
    });
    QObject::connect(&feed, &RunFeed::layer_times, [this](const LayerTimes& t) {
      layer_times.push_back(t);
      order += 'l';
    });
    QObject::connect(&feed, &RunFeed::run_finished, [this](qint64 id, const RunSummary& s) {
      finished.emplace_back(id, s);
      order += 'f';
    });
    QObject::connect(&feed, &RunFeed::queue_finished, [this](const QList<qint64>& ids) {
      queues.push_back(ids);
      order += 'q';
    });
  }
  bool wait_for_queue(int timeout_ms) {
    return QTest::qWaitFor([this] { return !queues.empty(); }, timeout_ms);
  }

  std::vector<StartedRun> started;
  std::map<qint64, std::vector<std::int64_t>> steps;
  std::vector<LayerTimes> layer_times;
  std::vector<std::pair<qint64, RunSummary>> finished;
  std::vector<QList<qint64>> queues;
  std::string order;  // s started, m steps, e epoch, l layer times, f finished, q queue's end
};

}  // namespace

class RunControllerTest : public QObject {
  Q_OBJECT

 private slots:
  void a_run_is_trained_recorded_and_streamed_in_order() {
    store::testing::TempDir dir;
    RunController controller(dir / "runs.sqlite");
    RunFeed feed(&controller);
    FeedLog log(feed);
    QSignalSpy ready(&controller, &RunController::events_ready);
    RunRequest request = tiny_request(50);
    request.config.layer_timing = true;
    QVERIFY(controller.start({request}));
    QVERIFY(controller.busy());
    QVERIFY(!controller.start({tiny_request(1)}));  // one queue at a time
    QVERIFY(log.wait_for_queue(30000));
    QVERIFY(!controller.busy());
    // One run: its start, then steps and layer times, its end, the queue's end; nothing after.
    QCOMPARE(log.started.size(), std::size_t(1));
    QCOMPARE(log.finished.size(), std::size_t(1));
    const qint64 run_id = log.finished[0].first;
    QVERIFY(run_id > 0);
    QCOMPARE(log.started[0].run_id, run_id);
    QCOMPARE(log.started[0].total_steps, 50);
    QCOMPARE(log.started[0].layer_titles,
             (QStringList{QStringLiteral("0 Flatten"), QStringLiteral("1 Dense 4, softmax")}));
    QCOMPARE(log.finished[0].second.status, RunStatus::finished);
    QCOMPARE(log.queues[0], QList<qint64>{run_id});
    QVERIFY2(log.order.front() == 's' && log.order.substr(log.order.size() - 2) == "fq",
             log.order.c_str());
    QCOMPARE(log.order.find_first_of("s", 1), std::string::npos);
    std::vector<std::int64_t> want(50);
    for (std::int64_t i = 0; i < 50; ++i) want[static_cast<std::size_t>(i)] = i;
    QCOMPARE(log.steps[run_id], want);  // every step once, in order
    QCOMPARE(log.layer_times.size(), std::size_t(50));  // one per step, both layers each
    QCOMPARE(log.layer_times[7].step, 7);
    QCOMPARE(log.layer_times[7].layers.size(), std::size_t(2));
    // Few wake-ups, not one per step: the feed drains in bulk.
    QVERIFY2(ready.size() < 50, qPrintable(QString::number(ready.size())));

    store::RunStore store = store::RunStore::open(dir / "runs.sqlite");
    QCOMPARE(store.run(run_id).status, store::RecordStatus::finished);
    QCOMPARE(store.step_count(run_id), 50);
    QCOMPARE(store.layer_times(run_id).size(), std::size_t(2));
  }

  void stop_ends_the_run_within_a_step_and_drops_the_queue() {
    store::testing::TempDir dir;
    RunController controller(dir / "runs.sqlite");
    RunFeed feed(&controller);
    FeedLog log(feed);
    QVERIFY(controller.start({tiny_request(1'000'000'000), tiny_request(10)}));
    QVERIFY(QTest::qWaitFor(
        [&] { return !log.steps.empty() && log.steps.begin()->second.size() >= 20; }, 30000));
    controller.stop();
    QVERIFY(log.wait_for_queue(10000));
    QCOMPARE(log.finished.size(), std::size_t(1));  // the second run never started
    const qint64 run_id = log.finished[0].first;
    QCOMPARE(log.finished[0].second.status, RunStatus::stopped);
    store::RunStore store = store::RunStore::open(dir / "runs.sqlite");
    QCOMPARE(store.run(run_id).status, store::RecordStatus::stopped);
    QCOMPARE(store.list_runs().size(), std::size_t(1));
  }

  void a_failing_run_is_recorded_and_the_next_one_runs() {
    store::testing::TempDir dir;
    RunController controller(dir / "runs.sqlite");
    RunFeed feed(&controller);
    FeedLog log(feed);
    QVERIFY(controller.start({tiny_request(5, "mnist:/nonexistent/mnist"), tiny_request(5)}));
    QVERIFY(log.wait_for_queue(30000));
    QCOMPARE(log.finished.size(), std::size_t(2));
    const auto failed = log.finished[0].second;
    QCOMPARE(failed.status, RunStatus::failed);
    QVERIFY2(failed.message.find("/nonexistent/mnist") != std::string::npos,
             failed.message.c_str());
    QCOMPARE(log.finished[1].second.status, RunStatus::finished);
    store::RunStore store = store::RunStore::open(dir / "runs.sqlite");
    QCOMPARE(store.run(log.finished[0].first).status, store::RecordStatus::failed);
  }

  // Without a usable CUDA backend (here: its library missing) a GPU run fails with the reason
  // and is recorded as failed; the CPU run queued after it still runs.
  void a_gpu_run_that_cannot_start_is_recorded_as_failed_with_the_reason() {
    qputenv("MIXLAB_CUDA_BACKEND", "/nonexistent/libmixlab-cuda.so");
    store::testing::TempDir dir;
    RunController controller(dir / "runs.sqlite");
    RunFeed feed(&controller);
    FeedLog log(feed);
    RunRequest gpu = tiny_request(5);
    gpu.device = "cuda:0";
    QVERIFY(controller.start({gpu, tiny_request(5)}));
    QVERIFY(log.wait_for_queue(30000));
    QCOMPARE(log.finished.size(), std::size_t(2));
    const auto failed = log.finished[0].second;
    QCOMPARE(failed.status, RunStatus::failed);
    QVERIFY2(failed.message.find("cuda:0 is unavailable: the CUDA backend "
                                 "(/nonexistent/libmixlab-cuda.so) cannot be loaded") !=
                 std::string::npos,
             failed.message.c_str());
    QCOMPARE(log.finished[1].second.status, RunStatus::finished);
    store::RunStore store = store::RunStore::open(dir / "runs.sqlite");
    const store::RunRecord r = store.run(log.finished[0].first);
    QCOMPARE(r.status, store::RecordStatus::failed);
    QCOMPARE(r.device, std::string("cuda:0"));
  }

  // A CPU run is recorded without the GPU options, whatever the request held (the Run panel's
  // boxes, a sweep member's settings): the engine's one rule, as mixlab-cli train records the
  // same run (tests/cli/train_store_test.cpp). Every GPU option of the table is checked.
  void a_cpu_run_is_recorded_without_the_gpu_options() {
    store::testing::TempDir dir;
    RunController controller(dir / "runs.sqlite");
    RunFeed feed(&controller);
    FeedLog log(feed);
    RunRequest request = tiny_request(3);
    request.config.layer_timing = true;  // applies to the CPU too: kept
    int options = 0;
    for (const RunField& field : run_fields()) {
      if (!field.gpu_only) continue;
      ++options;
      set_field_text(field, request.config, field.example);
    }
    QVERIFY(options > 0);
    QVERIFY(controller.start({request}));
    QVERIFY(log.wait_for_queue(30000));
    QCOMPARE(log.finished.size(), std::size_t(1));
    QCOMPARE(log.finished[0].second.status, RunStatus::finished);
    store::RunStore store = store::RunStore::open(dir / "runs.sqlite");
    const store::RunRecord r = store.run(log.finished[0].first);
    QCOMPARE(r.device, std::string("cpu"));
    const RunConfig defaults;
    for (const RunField& field : run_fields()) {
      if (!field.gpu_only) continue;
      QVERIFY2(field.get(r.config) == field.get(defaults), field.name.data());
    }
    QVERIFY(r.config.layer_timing);
  }

  void an_unusable_store_fails_the_run_with_its_reason() {
    RunController controller("/proc/mixlab-test/runs.sqlite");
    RunFeed feed(&controller);
    FeedLog log(feed);
    QVERIFY(controller.start({tiny_request(5)}));
    QVERIFY(log.wait_for_queue(10000));
    QCOMPARE(log.finished.size(), std::size_t(1));
    QCOMPARE(log.finished[0].first, 0);
    const auto summary = log.finished[0].second;
    QCOMPARE(summary.status, RunStatus::failed);
    QVERIFY2(summary.message.find("/proc/mixlab-test") != std::string::npos,
             summary.message.c_str());
  }
};

}  // namespace mixlab::app

QTEST_GUILESS_MAIN(mixlab::app::RunControllerTest)
#include "run_controller_test.moc"
