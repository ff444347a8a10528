// The do-no-harm rule of tuning_decision.h.
#include "cc/tuning/tuning_decision.h"

#include <gtest/gtest.h>

namespace graphi {
namespace {

const Setting kDefault{2, 1};
const Setting kOther{1, 2};
const std::vector<Setting> kOrder{kDefault, kOther};

TEST(TuningDecisionTest, AdoptsASettingFasterInEveryRoundBeyondItsSpread) {
  const TuningDecision d = DecideSetting(
      {{{kDefault, 10}, {kOther, 8}}, {{kDefault, 20}, {kOther, 16.4}}, {{kDefault, 10}, {kOther, 7.9}}},
      kDefault, kOrder);
  EXPECT_TRUE(d.adopted);
  EXPECT_EQ(d.chosen, kOther);
  EXPECT_NEAR(d.evidence[1].ratio_median, 0.8, 1e-9);
  EXPECT_NEAR(d.evidence[1].ratio_spread, (0.82 - 0.79) / 2, 1e-9);
}

TEST(TuningDecisionTest, KeepsTheDefaultWhenTheSpreadCoversTheGain) {
  // Median 0.9, but one round at 1.1: spread 0.1 >= gain 0.1.
  const TuningDecision d = DecideSetting(
      {{{kDefault, 10}, {kOther, 9}}, {{kDefault, 10}, {kOther, 11}}, {{kDefault, 10}, {kOther, 9}}},
      kDefault, kOrder);
  EXPECT_FALSE(d.adopted);
  EXPECT_EQ(d.chosen, kDefault);
}

TEST(TuningDecisionTest, OneRoundIsNotEnoughEvidence) {
  const TuningDecision d = DecideSetting({{{kDefault, 10}, {kOther, 5}}}, kDefault, kOrder);
  EXPECT_FALSE(d.adopted);
}

TEST(TuningDecisionTest, TiesGoToTheEarlierSettingInOrder) {
  const Setting third{1, 1};
  const TuningDecision d = DecideSetting(
      {{{kDefault, 10}, {kOther, 8}, {third, 8}}, {{kDefault, 10}, {kOther, 8}, {third, 8}}},
      kDefault, {kDefault, third, kOther});
  EXPECT_EQ(d.chosen, third);
}

TEST(TuningDecisionTest, EliminatesOnlyAfterTwoClearlySlowerRounds) {
  EXPECT_FALSE(ShouldEliminate({2.0}));
  EXPECT_FALSE(ShouldEliminate({2.0, 1.1}));
  EXPECT_TRUE(ShouldEliminate({1.3, 1.25}));
}

}  // namespace
}  // namespace graphi
