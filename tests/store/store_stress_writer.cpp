// A second process for the concurrency tests: records RUNS runs of STEPS steps each into the
// database at PATH through the real writer path, committing as often as it can (1 ms interval,
// 64-row batches) so that its transactions collide with another writer's. Prints each run's id.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/store/run_recorder.h"
#include "app/store/store_writer.h"
#include "tests/store/store_test_util.h"

int main(int argc, char** argv) {
  using namespace mixlab;
  using namespace mixlab::store;
  if (argc != 4) {
    std::fprintf(stderr, "usage: store_stress_writer PATH RUNS STEPS\n");
    return 2;
  }
  const int runs = std::atoi(argv[2]);
  const int steps = std::atoi(argv[3]);
  try {
    WriterOptions options;
    options.flush_interval = std::chrono::milliseconds(1);
    options.batch_rows = 64;
    StoreWriter writer(argv[1], options);
    for (int r = 0; r < runs; ++r) {
      RunRecorder recorder(writer, testing::sample_run("stress " + std::to_string(getpid()) + " #" +
                                                       std::to_string(r)));
      RunInfo info;
      info.total_steps = steps;
      recorder.on_start(info);
      for (int i = 0; i < steps; ++i) recorder.on_step(testing::sample_step(i));
      RunSummary summary;
      summary.status = RunStatus::finished;
      summary.steps = steps;
      recorder.on_finish(summary);
      std::printf("%lld\n", static_cast<long long>(recorder.run_id()));
    }
    writer.flush();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "store_stress_writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
