// Benchmark of the run store's writer path (a benchmark that prints figures, not a test):
//   1. step rows written per second through StoreWriter (queue, writer thread, SQLite, commit);
//   2. a trainer pacing 5,000 steps/s for 5 s: rows lost, and how long each step waited to
//      queue its row (max and 99.9th percentile).
// usage: store_bench [DB_PATH] [ROWS]   (default: a temporary file, 1,000,000 rows)
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "app/store/run_store.h"
#include "app/store/store_writer.h"
#include "engine/train/stats.h"
#include "tests/store/store_test_util.h"

int main(int argc, char** argv) {
  using namespace mixlab;
  using namespace mixlab::store;
  using Clock = std::chrono::steady_clock;
  testing::TempDir dir;
  const std::filesystem::path db = argc > 1 ? std::filesystem::path(argv[1]) : dir / "bench.sqlite";
  const long rows = argc > 2 ? std::atol(argv[2]) : 1'000'000;
  std::printf("SQLite %s, database %s\n", sqlite3_libversion(), db.c_str());
  try {
    StoreWriter writer(db);
    // 1. Throughput.
    const std::int64_t id = writer.begin_run(testing::sample_run("throughput"));
    std::vector<StepMetrics> steps;
    for (long i = 0; i < rows; ++i) steps.push_back(testing::sample_step(i));
    const auto t0 = Clock::now();
    for (const StepMetrics& s : steps) writer.step(id, s);
    const auto queued = Clock::now();
    writer.flush();
    const auto t1 = Clock::now();
    const double total_s = std::chrono::duration<double>(t1 - t0).count();
    const double queue_s = std::chrono::duration<double>(queued - t0).count();
    std::printf(
        "throughput: %ld step rows committed in %.3f s = %.0f rows/s (queueing alone: "
        "%.0f rows/s; target >= 200,000 rows/s)\n",
        rows, total_s, rows / total_s, rows / queue_s);

    // 2. A trainer at 5,000 steps/s for 5 s: each step's time to hand its row over. The same
    // loop appending to a locked vector that nothing else touches gives this machine's noise
    // floor (preemption, page faults) to read the store's figure against.
    constexpr int kSteps = 25'000;
    const auto paced = [&](const auto& push) {
      std::vector<double> wait_ms(kSteps);
      const auto start = Clock::now();
      for (int i = 0; i < kSteps; ++i) {
        std::this_thread::sleep_until(start + i * std::chrono::microseconds(200));
        const StepMetrics s = testing::sample_step(i);
        const auto before = Clock::now();
        push(s);
        wait_ms[i] = std::chrono::duration<double, std::milli>(Clock::now() - before).count();
      }
      return wait_ms;
    };
    const auto report = [](const char* what, const std::vector<double>& wait_ms) {
      std::printf("%s: wait per step median %.4f ms, p99.9 %.4f ms, max %.4f ms, %zu over 1 ms\n",
                  what, quantile(wait_ms, 0.5), quantile(wait_ms, 0.999),
                  *std::max_element(wait_ms.begin(), wait_ms.end()),
                  static_cast<std::size_t>(std::count_if(wait_ms.begin(), wait_ms.end(),
                                                         [](double ms) { return ms > 1.0; })));
    };
    std::mutex mutex;
    std::vector<StepMetrics> sink;
    sink.reserve(kSteps);
    report("noise floor (a locked vector, no store)", paced([&](const StepMetrics& s) {
             std::lock_guard lock(mutex);
             sink.push_back(s);
           }));

    const std::int64_t paced_run = writer.begin_run(testing::sample_run("paced"));
    const auto start = Clock::now();
    const std::vector<double> wait_ms =
        paced([&](const StepMetrics& s) { writer.step(paced_run, s); });
    const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
    writer.flush();
    RunStore reader = RunStore::open(db, StoreOptions{.read_only = true});
    const std::int64_t stored = reader.step_count(paced_run);
    std::printf("paced trainer: %d steps in %.2f s (%.0f steps/s), %lld rows stored, %lld lost\n",
                kSteps, elapsed_s, kSteps / elapsed_s, static_cast<long long>(stored),
                static_cast<long long>(kSteps - stored));
    report("paced trainer through the store (target: max <= 1 ms)", wait_ms);
    return stored == kSteps ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "store_bench: %s\n", e.what());
    return 1;
  }
}
