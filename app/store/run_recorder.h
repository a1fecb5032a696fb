// Adapts a run to the store: a RunSink that hands the trainer's figures to the StoreWriter's
// queue (never the disk), and a sink that fans one run out to several sinks (progress display
// and recorder, or live charts and recorder).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "app/store/store_writer.h"
#include "engine/train/run_types.h"

namespace mixlab::store {

class RunRecorder final : public RunSink {
 public:
  // Inserts the run (as `running`) and waits for its id; throws StoreError if it cannot.
  RunRecorder(StoreWriter& writer, RunRecord record);

  std::int64_t run_id() const { return run_id_; }

  void on_start(const RunInfo& info) override;
  void on_step(const StepMetrics& step) override;
  void on_epoch(const EpochMetrics& epoch) override;
  void on_layer_timings(std::int64_t step, const std::vector<LayerTiming>& layers) override;
  void on_layer_overflows(std::int64_t step, const std::vector<LayerOverflow>& layers) override;
  void on_fp8_tensors(std::int64_t step, const std::vector<Fp8TensorStep>& tensors) override;
  void on_finish(const RunSummary& summary) override;

  // Records a run that ended before training began (its dataset could not be read, its model
  // does not fit the data): `failed` with the message.
  void fail(const std::string& message);

 private:
  StoreWriter& writer_;
  std::int64_t run_id_ = 0;
  std::string mixlab_version_;
  bool finished_ = false;
};

class FanoutSink final : public RunSink {
 public:
  FanoutSink(std::initializer_list<RunSink*> sinks) : sinks_(sinks) {}
  void on_start(const RunInfo& info) override;
  void on_step(const StepMetrics& step) override;
  void on_epoch(const EpochMetrics& epoch) override;
  void on_layer_timings(std::int64_t step, const std::vector<LayerTiming>& layers) override;
  void on_layer_overflows(std::int64_t step, const std::vector<LayerOverflow>& layers) override;
  void on_fp8_tensors(std::int64_t step, const std::vector<Fp8TensorStep>& tensors) override;
  void on_finish(const RunSummary& summary) override;

 private:
  std::vector<RunSink*> sinks_;
};

}  // namespace mixlab::store
