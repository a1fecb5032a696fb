#include "app/store/run_recorder.h"

namespace mixlab::store {

RunRecorder::RunRecorder(StoreWriter& writer, RunRecord record)
    : writer_(writer), mixlab_version_(record.environment.mixlab_version) {
  run_id_ = writer_.begin_run(record);
}

void RunRecorder::on_start(const RunInfo& info) {
  writer_.started(run_id_, now_utc_ms(), describe_environment(info.device, mixlab_version_),
                  info.total_steps, info.memory.total());
}

void RunRecorder::on_step(const StepMetrics& step) {
  // A store that cannot record (a full disk, the run deleted under it) stops the run as
  // `failed` with the reason: training on would only produce figures nobody keeps.
  if (const std::string why = writer_.stuck_error(); !why.empty())
    throw StoreError("the run store cannot record this run: " + why);
  writer_.step(run_id_, step);
}

void RunRecorder::on_epoch(const EpochMetrics& epoch) {
  writer_.epoch(run_id_, epoch);
}

void RunRecorder::on_layer_timings(std::int64_t step, const std::vector<LayerTiming>& layers) {
  writer_.layer_times(run_id_, step, layers);
}

void RunRecorder::on_layer_overflows(std::int64_t step, const std::vector<LayerOverflow>& layers) {
  writer_.layer_overflows(run_id_, step, layers);
}

void RunRecorder::on_fp8_tensors(std::int64_t step, const std::vector<Fp8TensorStep>& tensors) {
  writer_.fp8_tensors(run_id_, step, tensors);
}

void RunRecorder::on_finish(const RunSummary& summary) {
  finished_ = true;
  writer_.finished(run_id_, summary, now_utc_ms());
}

void RunRecorder::fail(const std::string& message) {
  if (finished_) return;
  RunSummary summary;
  summary.status = RunStatus::failed;
  summary.message = message;
  summary.final_loss_scale = kNotMeasured;
  on_finish(summary);
}

void FanoutSink::on_start(const RunInfo& info) {
  for (RunSink* s : sinks_) s->on_start(info);
}

void FanoutSink::on_step(const StepMetrics& step) {
  for (RunSink* s : sinks_) s->on_step(step);
}

void FanoutSink::on_epoch(const EpochMetrics& epoch) {
  for (RunSink* s : sinks_) s->on_epoch(epoch);
}

void FanoutSink::on_layer_timings(std::int64_t step, const std::vector<LayerTiming>& layers) {
  for (RunSink* s : sinks_) s->on_layer_timings(step, layers);
}

void FanoutSink::on_layer_overflows(std::int64_t step, const std::vector<LayerOverflow>& layers) {
  for (RunSink* s : sinks_) s->on_layer_overflows(step, layers);
}

void FanoutSink::on_fp8_tensors(std::int64_t step, const std::vector<Fp8TensorStep>& tensors) {
  for (RunSink* s : sinks_) s->on_fp8_tensors(step, tensors);
}

void FanoutSink::on_finish(const RunSummary& summary) {
  for (RunSink* s : sinks_) s->on_finish(summary);
}

}  // namespace mixlab::store
