// The trainer with an asynchronous executor, as the CUDA backend's is (one launch per step, the
// next batch loaded while a step runs, the dataset kept on the device), checked on the CPU
// through a test double: an executor that stages each batch as a device would (the trainer's
// buffers are recycled while a step runs) and hands it to a CPU executor only when the step
// starts, and that gathers batches from a dataset it keeps. The double computes exactly what the
// CPU executor computes, so any difference in the runs' figures is the trainer's (a batch out of
// order, a loss scale reported for the wrong step, evaluation batches mixed in).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/ops/loss_scale.h"
#include "engine/train/trainer.h"

namespace mixlab {
namespace {

// How often batches were loaded (kept by the backend: the executor ends with the run).
struct LoadCounts {
  int loads = 0, index_loads = 0;
};

class AsyncDouble final : public ModelExecutor {
 public:
  AsyncDouble(std::unique_ptr<ModelExecutor> inner, std::int64_t sample_elements,
              LoadCounts& counts)
      : inner_(std::move(inner)), sample_elements_(sample_elements), counts_(counts) {}

  const MemoryPlan& memory_plan() const override { return inner_->memory_plan(); }
  int batch_size() const override { return inner_->batch_size(); }
  void set_loss_scaling(const LossScaleConfig& config) override {
    inner_->set_loss_scaling(config);
  }
  void load_batch(std::span<const float> images, std::span<const std::int32_t> labels,
                  int n) override {
    // A device copies the batch into a staging buffer: keep our own copy, as the caller's
    // buffers are recycled while the step runs.
    staged_images_.assign(images.begin(), images.begin() + n * sample_elements_);
    staged_labels_.assign(labels.begin(), labels.begin() + n);
    staged_n_ = n;
    ++counts_.loads;
  }
  bool upload_dataset(std::span<const std::uint8_t> images,
                      std::span<const std::int32_t> labels) override {
    dataset_images_.assign(images.begin(), images.end());
    dataset_labels_.assign(labels.begin(), labels.end());
    return true;
  }
  void load_batch_indices(std::span<const std::int64_t> indices, int n) override {
    std::vector<float> images(static_cast<std::size_t>(n * sample_elements_));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      const auto s = static_cast<std::size_t>(indices[static_cast<std::size_t>(i)]);
      for (std::int64_t e = 0; e < sample_elements_; ++e) {
        images[static_cast<std::size_t>(i * sample_elements_ + e)] =
            dataset_images_[s * static_cast<std::size_t>(sample_elements_) +
                            static_cast<std::size_t>(e)];
      }
      labels[static_cast<std::size_t>(i)] = dataset_labels_[s];
    }
    load_batch(images, labels, n);
    ++counts_.index_loads;
  }
  void launch_step(Phase phase, std::uint64_t step) override {
    ASSERT_FALSE(in_flight_) << "launch_step() twice without finish_step()";
    in_flight_ = true;
    if (staged_n_ > 0) inner_->load_batch(staged_images_, staged_labels_, staged_n_);
    staged_n_ = 0;
    inner_->launch_step(phase, step);
  }
  StepResult finish_step() override {
    EXPECT_TRUE(in_flight_) << "finish_step() without launch_step()";
    in_flight_ = false;
    StepResult r = inner_->finish_step();
    r.device_ms = 1.0;
    return r;
  }
  std::vector<LayerTiming> layer_timings() const override { return inner_->layer_timings(); }
  std::int64_t device_memory_bytes() const override { return 0; }
  OpAccess& ops() override { return inner_->ops(); }

 private:
  std::unique_ptr<ModelExecutor> inner_;
  std::int64_t sample_elements_;
  LoadCounts& counts_;
  std::vector<float> staged_images_;
  std::vector<std::int32_t> staged_labels_;
  int staged_n_ = 0;
  bool in_flight_ = false;
  std::vector<std::uint8_t> dataset_images_;
  std::vector<std::int32_t> dataset_labels_;
};

// A "GPU" (so that the trainer keeps the dataset on it when asked) whose executors are doubles.
class DeviceStepBackend final : public Backend {
 public:
  DeviceInfo device() const override {
    return gpu_device_info("Test double GPU (the CPU backend)", 8, 0, std::int64_t{1} << 30);
  }
  std::unique_ptr<ModelExecutor> compile(const ModelSpec& spec, const ShapeTable& table,
                                         const ExecutorOptions& options) override {
    return std::make_unique<AsyncDouble>(cpu_->compile(spec, table, options),
                                         num_elements(table.input_shape), counts);
  }
  LoadCounts counts;

 private:
  std::unique_ptr<Backend> cpu_ = make_cpu_backend(1);
};

struct Recorder : RunSink {
  std::vector<StepMetrics> steps;
  std::vector<EpochMetrics> epochs;
  std::optional<RunInfo> info;
  std::optional<RunSummary> summary;
  void on_start(const RunInfo& i) override { info = i; }
  void on_step(const StepMetrics& s) override { steps.push_back(s); }
  void on_epoch(const EpochMetrics& e) override { epochs.push_back(e); }
  void on_finish(const RunSummary& s) override { summary = s; }
};

LayerSpec dense(int units, ActivationFn fn = ActivationFn::linear) {
  LayerSpec l;
  l.type = LayerType::Dense;
  l.units = units;
  l.activation = fn;
  return l;
}

ModelSpec mlp() {
  ModelSpec spec;
  spec.name = "device-step-mlp";
  spec.input_shape = {6, 6, 1};
  LayerSpec rescale;
  rescale.type = LayerType::Rescaling;
  rescale.scale = 1.0 / 255;
  LayerSpec flatten;
  flatten.type = LayerType::Flatten;
  LayerSpec dropout;
  dropout.type = LayerType::Dropout;
  dropout.rate = 0.25;
  LayerSpec softmax;
  softmax.type = LayerType::Activation;
  softmax.activation = ActivationFn::softmax;
  softmax.force_float32 = true;
  spec.layers = {rescale, flatten, dense(24, ActivationFn::relu), dropout, dense(4), softmax};
  return spec;
}

DatasetPair data() {
  DatasetSpec spec;
  spec.kind = DatasetSpec::Kind::synthetic;
  spec.shape = {6, 6, 1};
  spec.classes = 4;
  spec.train_size = 150;  // 5 batches of 32, the last one short: 22 samples
  spec.seed = 3;
  return load_dataset(spec);
}

RunConfig config(Policy policy, LossScaleConfig scaling) {
  RunConfig c;
  c.precision = policy;
  c.loss_scale = scaling;
  c.batch_size = 32;
  c.epochs = 3;
  c.seed = 11;
  c.threads = 1;
  c.warmup_steps = 1;
  return c;
}

void expect_same_run(const Recorder& plain, const Recorder& device) {
  ASSERT_TRUE(plain.summary && device.summary);
  EXPECT_EQ(device.summary->status, plain.summary->status) << device.summary->message;
  ASSERT_EQ(device.steps.size(), plain.steps.size());
  for (std::size_t i = 0; i < plain.steps.size(); ++i) {
    const StepMetrics& a = plain.steps[i];
    const StepMetrics& b = device.steps[i];
    EXPECT_EQ(b.loss, a.loss) << "step " << i;
    EXPECT_EQ(b.accuracy, a.accuracy) << "step " << i;
    EXPECT_EQ(b.samples, a.samples) << "step " << i;
    EXPECT_EQ(b.loss_scale, a.loss_scale) << "step " << i;
    EXPECT_EQ(b.skipped, a.skipped) << "step " << i;
    EXPECT_EQ(b.epoch, a.epoch) << "step " << i;
    EXPECT_EQ(b.device_ms, 1.0) << "the device's time reaches the step's metrics";
  }
  ASSERT_EQ(device.epochs.size(), plain.epochs.size());
  for (std::size_t e = 0; e < plain.epochs.size(); ++e) {
    EXPECT_EQ(device.epochs[e].train_loss, plain.epochs[e].train_loss) << "epoch " << e;
    EXPECT_EQ(device.epochs[e].test_loss, plain.epochs[e].test_loss) << "epoch " << e;
    EXPECT_EQ(device.epochs[e].test_accuracy, plain.epochs[e].test_accuracy) << "epoch " << e;
  }
  EXPECT_EQ(device.summary->skipped_steps, plain.summary->skipped_steps);
  EXPECT_EQ(device.summary->final_loss_scale, plain.summary->final_loss_scale);
}

Recorder run(Backend& backend, const RunConfig& c, const DatasetPair& d) {
  Recorder sink;
  std::atomic<bool> cancel{false};
  train(mlp(), c, d, backend, sink, cancel);
  return sink;
}

TEST(DeviceStep, SameRunAsTheCpuWithBatchesLoadedAhead) {
  const DatasetPair d = data();
  const RunConfig c = config(Policy::float32, LossScaleConfig::none());
  auto cpu = make_cpu_backend(1);
  DeviceStepBackend device;
  const Recorder plain = run(*cpu, c, d);
  const Recorder dev = run(device, c, d);
  expect_same_run(plain, dev);
  ASSERT_TRUE(dev.summary);
  EXPECT_EQ(dev.summary->status, RunStatus::finished);
  // Every training batch once, plus the test split's after each epoch (30 samples: 1 batch).
  EXPECT_EQ(device.counts.loads, 15 + 3);
}

TEST(DeviceStep, LossScaleStepsMatchTheCpusWithBatchesLoadedAhead) {
  const DatasetPair d = data();
  LossScaleConfig scaling = LossScaleConfig::dynamic();
  scaling.initial_scale = 0x1p100;  // overflows float16 gradients: backs off step by step
  scaling.growth_interval = 3;      // and grows again: both directions within a few steps
  const RunConfig c = config(Policy::mixed_float16, scaling);
  auto cpu = make_cpu_backend(1);
  DeviceStepBackend device;
  const Recorder plain = run(*cpu, c, d);
  const Recorder dev = run(device, c, d);
  expect_same_run(plain, dev);
  ASSERT_TRUE(plain.summary);
  EXPECT_GT(plain.summary->skipped_steps, 0) << "the run was meant to overflow";
}

TEST(DeviceStep, DatasetOnTheDeviceGivesTheSameRun) {
  const DatasetPair d = data();
  RunConfig c = config(Policy::float32, LossScaleConfig::none());
  auto cpu = make_cpu_backend(1);
  const Recorder plain = run(*cpu, c, d);
  c.data_on_device = true;
  DeviceStepBackend device;
  const Recorder dev = run(device, c, d);
  expect_same_run(plain, dev);
  EXPECT_EQ(device.counts.index_loads, 15) << "training batches came as indices";
  ASSERT_TRUE(dev.info);
  ASSERT_EQ(dev.info->notes.size(), 1u);
  EXPECT_EQ(dev.info->notes[0], "the training split is kept on the device");
}

TEST(DeviceStep, StopsWithinOneStep) {
  const DatasetPair d = data();
  DeviceStepBackend device;
  struct StopSink : Recorder {
    std::atomic<bool>* cancel = nullptr;
    void on_step(const StepMetrics& s) override {
      Recorder::on_step(s);
      if (s.step == 6) cancel->store(true);
    }
  } sink;
  std::atomic<bool> cancel{false};
  sink.cancel = &cancel;
  const RunSummary summary =
      train(mlp(), config(Policy::float32, LossScaleConfig::none()), d, device, sink, cancel);
  EXPECT_EQ(summary.status, RunStatus::stopped);
  EXPECT_EQ(summary.steps, 7);
}

}  // namespace
}  // namespace mixlab
