// The loss row functions (engine/ops/loss.h) may write their gradient over their input row: the
// CUDA loss kernel computes in place in its float32 staging buffer, the CPU executor into a
// separate one. Both must give the same numbers.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/ops/loss.h"

namespace mixlab {
namespace {

using RowFn = RowLoss (*)(const float*, int, int, float, float*);

// `binary`: one output takes label 0 or 1; otherwise labels index the row's k classes.
void expect_in_place_equals_separate(RowFn fn, bool probabilities, bool binary) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> logit(-4.0f, 4.0f), prob(0.01f, 0.99f);
  for (int k : {1, 2, 3, 10, 37}) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> row(static_cast<std::size_t>(k));
      for (auto& v : row) v = probabilities ? prob(rng) : logit(rng);
      const int label = binary && k == 1 ? trial % 2 : trial % k;
      std::vector<float> separate(row.size());
      const RowLoss a = fn(row.data(), k, label, 0.75f, separate.data());
      std::vector<float> in_place = row;
      const RowLoss b = fn(in_place.data(), k, label, 0.75f, in_place.data());
      EXPECT_EQ(a.loss, b.loss);
      EXPECT_EQ(a.correct, b.correct);
      for (int j = 0; j < k; ++j) EXPECT_EQ(separate[j], in_place[j]) << "k " << k << " j " << j;
    }
  }
}

TEST(LossRows, InPlaceGradientEqualsSeparate) {
  expect_in_place_equals_separate(softmax_crossentropy_row, false, false);
  expect_in_place_equals_separate(sigmoid_binary_crossentropy_row, false, true);
  expect_in_place_equals_separate(crossentropy_probabilities_row, true, false);
  expect_in_place_equals_separate(binary_crossentropy_probabilities_row, true, true);
}

}  // namespace
}  // namespace mixlab
