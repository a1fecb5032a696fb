// The trainer on small synthetic data: learning, determinism, metrics, cancellation, divergence,
// failed allocation, loss scaling under mixed_float16, and validation against the dataset.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"

namespace mixlab {
namespace {

struct RecordingSink : RunSink {
  std::optional<RunInfo> info;
  std::vector<StepMetrics> steps;
  std::vector<EpochMetrics> epochs;
  std::optional<RunSummary> summary;
  std::vector<std::pair<std::int64_t, std::vector<LayerOverflow>>> overflows;
  std::atomic<bool>* cancel = nullptr;
  std::int64_t cancel_at_step = -1;

  void on_start(const RunInfo& i) override { info = i; }
  void on_step(const StepMetrics& s) override {
    steps.push_back(s);
    if (cancel && s.step == cancel_at_step) cancel->store(true);
  }
  void on_epoch(const EpochMetrics& e) override { epochs.push_back(e); }
  void on_layer_overflows(std::int64_t step, const std::vector<LayerOverflow>& layers) override {
    // Reported before the step itself.
    EXPECT_EQ(static_cast<std::int64_t>(steps.size()), step);
    overflows.emplace_back(step, layers);
  }
  void on_finish(const RunSummary& s) override { summary = s; }
};

LayerSpec layer(LayerType type) {
  LayerSpec l;
  l.type = type;
  return l;
}

LayerSpec dense(int units, ActivationFn fn = ActivationFn::linear) {
  LayerSpec l = layer(LayerType::Dense);
  l.units = units;
  l.activation = fn;
  return l;
}

// Rescaling(1/255) -> Flatten -> Dense(32, relu) -> Dense(classes) -> softmax (float32)
ModelSpec small_mlp(int classes, double rescale = 1.0 / 255) {
  ModelSpec spec;
  spec.name = "small-mlp";
  spec.input_shape = {8, 8, 1};
  LayerSpec r = layer(LayerType::Rescaling);
  r.scale = rescale;
  LayerSpec softmax = layer(LayerType::Activation);
  softmax.activation = ActivationFn::softmax;
  softmax.force_float32 = true;
  spec.layers = {r, layer(LayerType::Flatten), dense(32, ActivationFn::relu), dense(classes),
                 softmax};
  return spec;
}

DatasetPair synthetic(int classes, std::int64_t n) {
  DatasetSpec ds;
  ds.kind = DatasetSpec::Kind::synthetic;
  ds.shape = {8, 8, 1};
  ds.classes = classes;
  ds.train_size = n;
  return load_dataset(ds);
}

RunConfig small_config() {
  RunConfig c;
  c.batch_size = 32;
  c.epochs = 3;
  c.threads = 2;
  c.seed = 7;
  c.warmup_steps = 2;
  c.optimizer.learning_rate = 0.01;
  return c;
}

struct RunResult {
  RecordingSink sink;
  RunSummary summary;
};

RunResult run(const ModelSpec& spec, const RunConfig& config, const DatasetPair& data,
              std::atomic<bool>* cancel_flag = nullptr, std::int64_t cancel_at = -1) {
  auto backend = make_cpu_backend(config.threads);
  std::atomic<bool> local{false};
  std::atomic<bool>& cancel = cancel_flag ? *cancel_flag : local;
  RunResult r;
  r.sink.cancel = &cancel;
  r.sink.cancel_at_step = cancel_at;
  r.summary = train(spec, config, data, *backend, r.sink, cancel);
  return r;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}
bool contains_text(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return true;
  ADD_FAILURE() << "'" << part << "' not in: " << text;
  return false;
}

double mean_loss(const std::vector<StepMetrics>& steps, std::size_t from, std::size_t to) {
  double s = 0;
  for (std::size_t i = from; i < to; ++i) s += steps[i].loss;
  return s / static_cast<double>(to - from);
}

TEST(Trainer, LearnsSyntheticData) {
  const auto data = synthetic(4, 640);
  const RunResult r = run(small_mlp(4), small_config(), data);
  ASSERT_EQ(r.summary.status, RunStatus::finished) << r.summary.message;
  const auto& steps = r.sink.steps;
  ASSERT_EQ(steps.size(), 60u);  // 640 / 32 * 3
  EXPECT_LT(mean_loss(steps, 50, 60), 0.5 * mean_loss(steps, 0, 5));
  EXPECT_GT(r.summary.test_accuracy, 0.8);
  EXPECT_EQ(r.sink.epochs.size(), 3u);
  EXPECT_EQ(r.summary.epochs_completed, 3);
}

TEST(Trainer, SameSeedAndThreadsGiveTheSameLosses) {
  const auto data = synthetic(4, 320);
  RunConfig c = small_config();
  c.epochs = 2;
  c.optimizer = default_optimizer(OptimizerKind::sgd);
  c.optimizer.momentum = 0.9;
  ModelSpec spec = small_mlp(4);
  LayerSpec drop = layer(LayerType::Dropout);
  drop.rate = 0.25;
  spec.layers.insert(spec.layers.begin() + 3, drop);
  const RunResult a = run(spec, c, data), b = run(spec, c, data);
  ASSERT_EQ(a.sink.steps.size(), b.sink.steps.size());
  for (std::size_t i = 0; i < a.sink.steps.size(); ++i) {
    ASSERT_EQ(a.sink.steps[i].loss, b.sink.steps[i].loss) << "step " << i;
  }
  c.seed = 8;
  const RunResult other = run(spec, c, data);
  EXPECT_NE(a.sink.steps.back().loss, other.sink.steps.back().loss);
}

TEST(Trainer, ReportsConsistentStepAndEpochFigures) {
  const auto data = synthetic(4, 100);  // 4 steps per epoch, the last with 4 samples
  RunConfig c = small_config();
  c.epochs = 2;
  const RunResult r = run(small_mlp(4), c, data);
  ASSERT_EQ(r.summary.status, RunStatus::finished);
  ASSERT_TRUE(r.sink.info);
  EXPECT_EQ(r.sink.info->steps_per_epoch, 4);
  EXPECT_EQ(r.sink.info->total_steps, 8);
  EXPECT_GT(r.sink.info->memory.total(), 0);
  int samples = 0;
  for (std::size_t i = 0; i < r.sink.steps.size(); ++i) {
    const StepMetrics& s = r.sink.steps[i];
    EXPECT_EQ(s.step, static_cast<std::int64_t>(i));
    EXPECT_EQ(s.epoch, static_cast<int>(i / 4));
    EXPECT_GE(s.data_wait_ms, 0.0);
    EXPECT_GE(s.step_ms + 1e-9,
              s.data_wait_ms + s.forward_ms + s.backward_ms + s.optimizer_ms - 1e-3);
    EXPECT_EQ(s.loss_scale, 1.0);
    EXPECT_FALSE(s.skipped);
    if (s.epoch == 0) samples += s.samples;
  }
  EXPECT_EQ(samples, 100) << "the short last batch must count only its real samples";
  EXPECT_EQ(r.sink.steps[3].samples, 4);
  EXPECT_EQ(r.summary.warmup_steps, 2);
  EXPECT_LE(r.summary.p5_step_ms, r.summary.median_step_ms);
  EXPECT_LE(r.summary.median_step_ms, r.summary.p95_step_ms);
  EXPECT_GT(r.summary.samples_per_s, 0.0);
  EXPECT_FALSE(std::isnan(r.sink.epochs[1].test_accuracy));
}

TEST(Trainer, CancelStopsWithinOneStep) {
  const auto data = synthetic(4, 640);
  std::atomic<bool> cancel{false};
  const RunResult r = run(small_mlp(4), small_config(), data, &cancel, 3);
  EXPECT_EQ(r.summary.status, RunStatus::stopped);
  EXPECT_EQ(r.summary.steps, 4);
  EXPECT_EQ(r.sink.steps.size(), 4u);
  ASSERT_TRUE(r.sink.summary);
  EXPECT_EQ(r.sink.summary->status, RunStatus::stopped);
}

TEST(Trainer, NonFiniteLossWithoutLossScalingDiverges) {
  const auto data = synthetic(4, 320);
  // Inputs scaled by 1e37 overflow float32 in the first Dense: the loss is not finite.
  const RunResult r = run(small_mlp(4, 1e37), small_config(), data);
  EXPECT_EQ(r.summary.status, RunStatus::diverged);
  EXPECT_EQ(r.summary.diverged_at_step, 0);
  EXPECT_NE(r.summary.message.find("step 0"), std::string::npos) << r.summary.message;
}

TEST(Trainer, FailedAllocationEndsAsFailedWithTheBytesAsked) {
  const auto data = synthetic(4, 64);
  ModelSpec spec = small_mlp(4);
  spec.layers.insert(spec.layers.begin() + 3, dense(100000));  // 32 x 1e5 then 1e5 x 4
  spec.layers.insert(spec.layers.begin() + 3, dense(100000));  // + 1e10 parameters
  const RunResult r = run(spec, small_config(), data);
  EXPECT_EQ(r.summary.status, RunStatus::failed);
  EXPECT_GT(r.summary.failed_allocation_bytes, std::int64_t{100'000'000'000});
  EXPECT_NE(r.summary.message.find(std::to_string(r.summary.failed_allocation_bytes)),
            std::string::npos)
      << r.summary.message;
  EXPECT_EQ(r.summary.steps, 0);
}

TEST(Trainer, MixedFloat16TooLargeStaticScaleSkipsEveryStepDynamicRecovers) {
  const auto data = synthetic(4, 640);
  RunConfig c = small_config();
  c.precision = Policy::mixed_float16;
  c.loss_scale = LossScaleConfig::fixed(16777216.0);  // 2^24: the scaled gradient overflows float16
  const RunResult fixed = run(small_mlp(4), c, data);
  // No update reaches the weights: after kSkippedStepsToDiverge skipped steps in a row (of the
  // 60 planned) the run ends diverged, saying why, rather than "finished" having learnt nothing.
  ASSERT_EQ(fixed.summary.status, RunStatus::diverged) << fixed.summary.message;
  EXPECT_EQ(fixed.summary.steps, kSkippedStepsToDiverge);
  EXPECT_EQ(fixed.summary.skipped_steps, fixed.summary.steps);
  EXPECT_EQ(fixed.summary.diverged_at_step, kSkippedStepsToDiverge - 1);
  EXPECT_EQ(fixed.summary.final_loss_scale, 16777216.0);
  EXPECT_NE(fixed.summary.message.find("static scale"), std::string::npos)
      << fixed.summary.message;

  c.loss_scale = *parse_loss_scale("dynamic:16777216");
  const RunResult dynamic = run(small_mlp(4), c, data);
  ASSERT_EQ(dynamic.summary.status, RunStatus::finished) << dynamic.summary.message;
  EXPECT_GE(dynamic.summary.skipped_steps, 1);
  EXPECT_LE(dynamic.summary.skipped_steps, 12);
  EXPECT_LT(dynamic.summary.final_loss_scale, 16777216.0);
  EXPECT_GT(dynamic.summary.test_accuracy, 0.8);
  // Skipped steps come first, at halving scales, then updates apply.
  const auto& steps = dynamic.sink.steps;
  EXPECT_TRUE(steps[0].skipped);
  EXPECT_EQ(steps[1].loss_scale, steps[0].loss_scale / 2);
  EXPECT_FALSE(steps.back().skipped);

  // Issue 29: every skipped step names the layers whose gradients overflowed, with counts: the
  // two Dense layers (2 and 3; Rescaling, Flatten and the softmax have no weights), of their
  // 64 * 32 + 32 and 32 * 4 + 4 gradient values.
  for (const RunResult* r : {&fixed, &dynamic}) {
    ASSERT_EQ(static_cast<std::int64_t>(r->sink.overflows.size()), r->summary.skipped_steps);
    for (const auto& [step, layers] : r->sink.overflows) {
      EXPECT_TRUE(r->sink.steps[static_cast<std::size_t>(step)].skipped) << step;
      ASSERT_FALSE(layers.empty()) << step;
      for (const LayerOverflow& o : layers) {
        EXPECT_TRUE(o.layer == 2 || o.layer == 3) << o.layer;
        EXPECT_EQ(o.values, o.layer == 2 ? 64 * 32 + 32 : 32 * 4 + 4);
        EXPECT_GE(o.nonfinite, 1);
        EXPECT_LE(o.nonfinite, o.values);
      }
    }
  }
  // The output layer's gradients are the largest (the loss's gradient times 2^24 reaches them
  // first): it overflows on the first step.
  ASSERT_FALSE(fixed.sink.overflows.empty());
  EXPECT_EQ(fixed.sink.overflows.front().second.back().layer, 3);
}

TEST(Trainer, RejectsAModelThatDoesNotFitTheDataset) {
  const auto data = synthetic(4, 64);
  auto backend = make_cpu_backend(2);
  RecordingSink sink;
  std::atomic<bool> cancel{false};
  ModelSpec wrong_input = small_mlp(4);
  wrong_input.input_shape = {28, 28, 1};
  try {
    train(wrong_input, small_config(), data, *backend, sink, cancel);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("28x28x1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("8x8x1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(train(small_mlp(10), small_config(), data, *backend, sink, cancel), ConfigError);
  RunConfig bad = small_config();
  bad.batch_size = 0;
  EXPECT_THROW(train(small_mlp(4), bad, data, *backend, sink, cancel), ConfigError);
  EXPECT_FALSE(sink.summary) << "nothing runs when validation fails";
}

// A language model of tokens (issue 29): Embedding, PositionEmbedding added, LayerNormalization,
// Dense on every step and a softmax over the vocabulary at each one; the loss is the mean over
// every step's label.
ModelSpec token_lm(int vocabulary, int steps) {
  ModelSpec spec;
  spec.name = "token-lm";
  spec.input_shape = {steps};
  LayerSpec tokens = layer(LayerType::Embedding);
  tokens.name = "tokens";
  tokens.input_dim = vocabulary;
  tokens.output_dim = 16;
  LayerSpec positions = layer(LayerType::PositionEmbedding);
  positions.name = "positions";
  positions.sequence_length = steps;
  LayerSpec add = layer(LayerType::Add);
  add.inputs = {"tokens", "positions"};
  LayerSpec softmax = layer(LayerType::Activation);
  softmax.activation = ActivationFn::softmax;
  softmax.force_float32 = true;
  spec.layers = {tokens,
                 positions,
                 add,
                 layer(LayerType::LayerNormalization),
                 dense(32, ActivationFn::relu),
                 dense(vocabulary),
                 softmax};
  return spec;
}

TEST(Trainer, LanguageModelLearnsTheNextTokenInEveryPolicy) {
  DatasetSpec ds = parse_dataset_spec("tokens:synthetic:12:20:0:640");
  const DatasetPair data = load_dataset(ds);
  for (const Policy policy : {Policy::float32, Policy::mixed_bfloat16, Policy::mixed_float16}) {
    SCOPED_TRACE(std::string(to_string(policy)));
    RunConfig config = small_config();
    config.precision = policy;
    config.loss_scale = LossScaleConfig::keras_default(policy);
    const RunResult r = run(token_lm(20, 12), config, data);
    ASSERT_EQ(r.summary.status, RunStatus::finished) << r.summary.message;
    const auto& steps = r.sink.steps;
    ASSERT_EQ(steps.size(), 60u);
    // ln 20 = 3.0 at first; the chain's next token is one of 4 nine times in ten (about 1.9).
    EXPECT_GT(steps.front().loss, 2.7);
    EXPECT_LT(mean_loss(steps, 50, 60), 2.4);
    // Accuracy is per step: a fraction of the sample's steps, never above 1.
    EXPECT_GT(r.summary.test_accuracy, 0.15);
    EXPECT_LE(r.summary.test_accuracy, 1.0);
  }
}

TEST(Trainer, TokenDataMustFitTheModelsLabelsAndVocabulary) {
  auto backend = make_cpu_backend(2);
  RecordingSink sink;
  std::atomic<bool> cancel{false};
  // A label per sample against a model with one per step, and the other way round.
  const DatasetPair classes = load_dataset(parse_dataset_spec("tokens:synthetic:12:20:3:64"));
  EXPECT_TRUE(contains_text(
      error_of([&] { train(token_lm(20, 12), small_config(), classes, *backend, sink, cancel); }),
      "predicts a label at each of 12 steps"));
  // Ids up to 29 for an Embedding of 20 rows.
  const DatasetPair wide = load_dataset(parse_dataset_spec("tokens:synthetic:12:30"));
  EXPECT_TRUE(contains_text(
      error_of([&] { train(token_lm(20, 12), small_config(), wide, *backend, sink, cancel); }),
      "input_dim 20 has no row for token ids up to 29"));
  EXPECT_FALSE(sink.summary);
}

}  // namespace
}  // namespace mixlab
