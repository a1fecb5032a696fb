#include "app/cli/progress_sink.h"

#include <algorithm>
#include <cmath>

#include "app/cli/common.h"

namespace mixlab::cli {

ProgressSink::ProgressSink(std::FILE* out, bool interactive, int epochs)
    : out_(out), interactive_(interactive), epochs_(epochs) {}

void ProgressSink::on_start(const RunInfo& info) {
  total_steps_ = info.total_steps;
  steps_per_epoch_ = info.steps_per_epoch;
  epochs_ = static_cast<int>((total_steps_ + steps_per_epoch_ - 1) /
                             std::max<std::int64_t>(1, steps_per_epoch_));
  std::fprintf(out_, "training '%s': %s parameters, %s steps (%s per epoch) on %s samples\n",
               info.model_name.c_str(), group_digits(info.table.params_total).c_str(),
               group_digits(total_steps_).c_str(), group_digits(steps_per_epoch_).c_str(),
               group_digits(info.train_samples).c_str());
  if (info.device.kind == "cpu") {
    std::fprintf(out_, "device: cpu, %s (%d threads); model memory %s\n", info.device.name.c_str(),
                 info.device.threads, format_bytes(info.memory.total()).c_str());
  } else {
    std::fprintf(out_, "device: %s, %s (compute capability %s); model memory %s\n",
                 info.device.kind.c_str(), info.device.name.c_str(),
                 info.device.compute_capability.c_str(), format_bytes(info.memory.total()).c_str());
  }
  for (const std::string& note : info.notes) std::fprintf(out_, "note: %s\n", note.c_str());
  std::fflush(out_);
}

void ProgressSink::on_step(const StepMetrics& step) {
  window_samples_ += step.samples;
  window_ms_ += step.step_ms;
  if (!interactive_) return;
  const auto now = std::chrono::steady_clock::now();
  const bool last = step.step + 1 == total_steps_;
  if (!last && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  if (window_ms_ > 0) rate_ = window_samples_ / (window_ms_ / 1000.0);
  window_samples_ = window_ms_ = 0.0;
  draw(step);
}

void ProgressSink::draw(const StepMetrics& step) {
  constexpr int kWidth = 24;
  const std::int64_t in_epoch =
      step.step - static_cast<std::int64_t>(step.epoch) * steps_per_epoch_ + 1;
  const std::int64_t epoch_steps = std::min(
      steps_per_epoch_, total_steps_ - static_cast<std::int64_t>(step.epoch) * steps_per_epoch_);
  const int filled = static_cast<int>(kWidth * in_epoch / std::max<std::int64_t>(1, epoch_steps));
  std::string bar(static_cast<std::size_t>(kWidth), ' ');
  for (int i = 0; i < filled && i < kWidth; ++i) bar[static_cast<std::size_t>(i)] = '=';
  if (filled < kWidth) bar[static_cast<std::size_t>(filled)] = '>';
  std::fprintf(out_,
               "\r\033[Kepoch %d/%d [%s] %lld/%lld  %s samples/s  loss %.4f  acc %.4f  scale %g%s",
               step.epoch + 1, epochs_, bar.c_str(), static_cast<long long>(in_epoch),
               static_cast<long long>(epoch_steps), group_digits(std::llround(rate_)).c_str(),
               step.loss, step.accuracy, step.loss_scale, step.skipped ? "  (skipped)" : "");
  std::fflush(out_);
  bar_shown_ = true;
}

void ProgressSink::clear_bar() {
  if (bar_shown_) std::fprintf(out_, "\r\033[K");
  bar_shown_ = false;
}

void ProgressSink::on_epoch(const EpochMetrics& e) {
  clear_bar();
  std::fprintf(out_, "epoch %d/%d: loss %s, accuracy %s", e.epoch + 1, epochs_,
               format_fixed(e.train_loss, 4).c_str(), format_fixed(e.train_accuracy, 4).c_str());
  if (!std::isnan(e.test_loss)) {
    std::fprintf(out_, " | test loss %s, accuracy %s", format_fixed(e.test_loss, 4).c_str(),
                 format_fixed(e.test_accuracy, 4).c_str());
  }
  std::fprintf(out_, " | %.1f s, %s samples/s\n", e.time_s,
               group_digits(std::llround(e.samples_per_s)).c_str());
  std::fflush(out_);
}

void ProgressSink::on_finish(const RunSummary&) {
  clear_bar();
  std::fflush(out_);
}

}  // namespace mixlab::cli
