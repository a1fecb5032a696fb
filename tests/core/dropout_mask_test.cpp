// Dropout's counter-based mask: keeps about 1 - rate of the elements, scales the kept ones by
// 1 / (1 - rate), and changes with the seed, the layer and the step (but not with the thread
// count: it is a pure function of the element index).
#include <gtest/gtest.h>

#include "engine/ops/dropout.h"

namespace mixlab {
namespace {

double kept_fraction(const DropoutMask& m, int n) {
  int kept = 0;
  for (int i = 0; i < n; ++i) kept += m.factor(static_cast<std::uint64_t>(i)) != 0.0f;
  return static_cast<double>(kept) / n;
}

TEST(DropoutMask, KeepsOneMinusRateAndScalesTheKept) {
  for (double rate : {0.1, 0.2, 0.5, 0.9}) {
    const DropoutMask m = make_dropout_mask(rate, 42, 3, 17);
    EXPECT_NEAR(kept_fraction(m, 200000), 1.0 - rate, 0.005) << rate;
    for (int i = 0; i < 1000; ++i) {
      const float f = m.factor(static_cast<std::uint64_t>(i));
      EXPECT_TRUE(f == 0.0f || f == static_cast<float>(1.0 / (1.0 - rate)));
    }
  }
}

TEST(DropoutMask, DiffersBySeedLayerAndStepAndRepeatsForTheSame) {
  const auto same = [](const DropoutMask& a, const DropoutMask& b) {
    int equal = 0;
    for (int i = 0; i < 10000; ++i) equal += a.factor(i) == b.factor(i);
    return equal;
  };
  const DropoutMask base = make_dropout_mask(0.5, 1, 2, 3);
  EXPECT_EQ(same(base, make_dropout_mask(0.5, 1, 2, 3)), 10000);
  // Independent masks at rate 0.5 agree on about half the elements.
  EXPECT_NEAR(same(base, make_dropout_mask(0.5, 9, 2, 3)), 5000, 300);
  EXPECT_NEAR(same(base, make_dropout_mask(0.5, 1, 4, 3)), 5000, 300);
  EXPECT_NEAR(same(base, make_dropout_mask(0.5, 1, 2, 4)), 5000, 300);
}

TEST(DropoutMask, NeighbouringElementsAreUncorrelated) {
  const DropoutMask m = make_dropout_mask(0.5, 7, 0, 0);
  int both = 0;
  for (int i = 0; i < 100000; i += 2) both += m.factor(i) != 0.0f && m.factor(i + 1) != 0.0f;
  EXPECT_NEAR(both / 50000.0, 0.25, 0.01);
}

}  // namespace
}  // namespace mixlab
