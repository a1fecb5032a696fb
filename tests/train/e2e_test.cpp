// End to end on the real Fashion-MNIST (Debian's dataset-fashion-mnist): the built-in MLP
// learns to >= 84% test accuracy in 2 epochs in float32 and in mixed_bfloat16, the two within
// 1.5 points; under mixed_float16 a too-large static loss scale skips steps while dynamic scaling
// recovers from the same scale.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"
#include "resources/builtin_models.h"

namespace mixlab {
namespace {

class FashionMnist : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(std::filesystem::path(kDebianFashionMnistDir))) return;
    data_ = new DatasetPair(load_dataset(DatasetSpec{}));
  }
  static void TearDownTestSuite() {
    delete data_;
    data_ = nullptr;
  }
  void SetUp() override {
    if (!data_) {
      GTEST_SKIP() << "Fashion-MNIST is not installed at " << kDebianFashionMnistDir
                   << " (apt-get install dataset-fashion-mnist)";
    }
  }

  static RunSummary run(Policy policy, LossScaleConfig scaling, int epochs,
                        std::int64_t steps = 0) {
    const ModelSpec spec = parse_model_json(*builtin_model_json("fashion-mlp"));
    RunConfig config;
    config.precision = policy;
    config.loss_scale = scaling;
    config.epochs = epochs;
    config.steps = steps;
    config.batch_size = 32;
    config.threads = 2;
    config.seed = 3;
    auto backend = make_cpu_backend(config.threads);
    RunSink sink;
    std::atomic<bool> cancel{false};
    const RunSummary s = train(spec, config, *data_, *backend, sink, cancel);
    std::printf(
        "[ figures  ] fashion-mlp %s loss-scale %s: status %s, test accuracy %.4f, "
        "%lld steps (%lld skipped), median step %.3f ms, final scale %g\n",
        std::string(to_string(policy)).c_str(), scaling.to_string().c_str(),
        std::string(to_string(s.status)).c_str(), s.test_accuracy, static_cast<long long>(s.steps),
        static_cast<long long>(s.skipped_steps), s.median_step_ms, s.final_loss_scale);
    return s;
  }

  static DatasetPair* data_;
};

DatasetPair* FashionMnist::data_ = nullptr;

TEST_F(FashionMnist, MlpReaches84PercentInTwoEpochsInFloat32AndBfloat16) {
  const RunSummary f32 = run(Policy::float32, LossScaleConfig::none(), 2);
  const RunSummary bf16 = run(Policy::mixed_bfloat16, LossScaleConfig::none(), 2);
  ASSERT_EQ(f32.status, RunStatus::finished) << f32.message;
  ASSERT_EQ(bf16.status, RunStatus::finished) << bf16.message;
  EXPECT_GE(f32.test_accuracy, 0.84);
  EXPECT_GE(bf16.test_accuracy, 0.84);
  EXPECT_LE(std::abs(f32.test_accuracy - bf16.test_accuracy), 0.015);
  EXPECT_EQ(f32.steps, 2 * 1875);
  EXPECT_EQ(f32.skipped_steps, 0);
}

TEST_F(FashionMnist, Float16TooLargeStaticScaleSkipsStepsDynamicRecovers) {
  // 2^24 / batch 32 = 524288 > 65504: the loss gradient overflows float16 at its first layer.
  const RunSummary fixed = run(Policy::mixed_float16, LossScaleConfig::fixed(16777216.0), 1, 300);
  ASSERT_EQ(fixed.status, RunStatus::diverged) << fixed.message;
  EXPECT_EQ(fixed.skipped_steps, kSkippedStepsToDiverge);
  EXPECT_EQ(fixed.steps, kSkippedStepsToDiverge);

  const RunSummary dynamic = run(Policy::mixed_float16, *parse_loss_scale("dynamic:16777216"), 1);
  ASSERT_EQ(dynamic.status, RunStatus::finished) << dynamic.message;
  EXPECT_GE(dynamic.skipped_steps, 1);
  EXPECT_LE(dynamic.skipped_steps, 20);
  EXPECT_LT(dynamic.final_loss_scale, 16777216.0);
  EXPECT_GE(dynamic.test_accuracy, 0.80);
}

// The built-in tiny-gpt (issue 29: 4 blocks of causal self-attention, 4 heads, width 128, 128
// steps, bytes) on a text file: its loss falls from ln 256 in every policy, and the policies end
// close. 20 Adam steps at batch 4 measured 5.96 -> 2.2666 (the last 5 steps' mean) in float32,
// 2.2672 in mixed_bfloat16 and 2.2666 in mixed_float16 (2-core AVX-512 VM): the 16-bit roundings
// of the activations and weight copies move the loss by 3e-4 relative; 2% leaves room for the other
// kernel paths (bfloat16 emulated below AVX-512) and for another CPU's summation orders.
TEST(TinyGpt, LearnsATextInEveryPolicyAndThePoliciesEndClose) {
  const auto path = std::filesystem::temp_directory_path() / "mixlab-e2e-tiny-gpt.txt";
  {
    const char* words[] = {"the",  "quick", "brown",  "fox",   "jumps", "over",
                           "a",    "lazy",  "dog",    "and",   "then",  "runs",
                           "into", "the",   "forest", "where", "it",    "sleeps"};
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    unsigned state = 7;
    for (int i = 0; i < 12000; ++i) {
      state = state * 1103515245u + 12345u;
      std::fprintf(f, "%s ", words[(state >> 16) % (sizeof words / sizeof *words)]);
    }
    std::fclose(f);
  }
  const ModelSpec spec = parse_model_json(*builtin_model_json("tiny-gpt"));
  const DatasetPair data = load_dataset(parse_dataset_spec("text:" + path.string() + ":128"));
  std::vector<double> finals;
  for (const Policy policy : {Policy::float32, Policy::mixed_bfloat16, Policy::mixed_float16}) {
    SCOPED_TRACE(std::string(to_string(policy)));
    RunConfig config;
    config.precision = policy;
    config.loss_scale = LossScaleConfig::keras_default(policy);
    config.steps = 20;
    config.epochs = 5;
    config.batch_size = 4;
    config.threads = 2;
    config.seed = 3;
    config.evaluate = false;
    auto backend = make_cpu_backend(config.threads);
    struct Losses : RunSink {
      std::vector<double> loss;
      void on_step(const StepMetrics& s) override { loss.push_back(s.loss); }
    } sink;
    std::atomic<bool> cancel{false};
    const RunSummary s = train(spec, config, data, *backend, sink, cancel);
    ASSERT_EQ(s.status, RunStatus::finished) << s.message;
    ASSERT_EQ(sink.loss.size(), 20u);
    double last = 0;
    for (std::size_t i = 15; i < 20; ++i) last += sink.loss[i] / 5;
    std::printf(
        "[ figures  ] tiny-gpt %s: loss %.4f -> %.4f (last 5 steps' mean), median step %.1f ms\n",
        std::string(to_string(policy)).c_str(), sink.loss.front(), last, s.median_step_ms);
    EXPECT_GT(sink.loss.front(), 5.0);  // ln 256 = 5.55 at first
    EXPECT_LT(last, 3.6);
    finals.push_back(last);
  }
  EXPECT_NEAR(finals[1], finals[0], 0.02 * finals[0]) << "mixed_bfloat16 against float32";
  EXPECT_NEAR(finals[2], finals[0], 0.02 * finals[0]) << "mixed_float16 against float32";
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace mixlab
