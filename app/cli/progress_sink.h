// Shows a run on the terminal: a live progress bar (step, samples/s, loss, loss scale) redrawn
// at most 10 times a second on a terminal, and one line per epoch. Writes to stderr, so that
// stdout carries only the summary (or the --json object).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "engine/train/run_types.h"

namespace mixlab::cli {

class ProgressSink : public RunSink {
 public:
  // interactive: redraw a bar in place (a terminal); otherwise epoch lines only.
  ProgressSink(std::FILE* out, bool interactive, int epochs);

  void on_start(const RunInfo& info) override;
  void on_step(const StepMetrics& step) override;
  void on_epoch(const EpochMetrics& epoch) override;
  void on_finish(const RunSummary& summary) override;

 private:
  void draw(const StepMetrics& step);
  void clear_bar();

  std::FILE* out_;
  bool interactive_;
  int epochs_;
  std::int64_t total_steps_ = 0;
  std::int64_t steps_per_epoch_ = 0;
  bool bar_shown_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
  double window_samples_ = 0.0;
  double window_ms_ = 0.0;
  double rate_ = 0.0;  // samples/s over the last redraw window
};

}  // namespace mixlab::cli
