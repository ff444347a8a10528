// The do-no-harm rule of tuning_decision.h.
#include "cc/tuning/tuning_decision.h"

#include <gtest/gtest.h>

namespace graphi {
namespace {

const Setting kDefault{2, 1};
const Setting kOther{1, 2};
const std::vector<Setting> kOrder{kDefault, kOther};

// One round per ratio: the default at 10, kOther at 10 x the ratio.
std::vector<std::map<Setting, double>> RoundsWithRatios(const std::vector<double>& ratios) {
  std::vector<std::map<Setting, double>> rounds;
  for (double ratio : ratios) rounds.push_back({{kDefault, 10}, {kOther, 10 * ratio}});
  return rounds;
}

TEST(TuningDecisionTest, WinsNeededIsTheSignTestsCountAtOneInFive) {
  // The least k with P(at least k of n fair coin flips) <= 1/5.
  EXPECT_EQ(kSignTestAlpha, 0.2);
  EXPECT_EQ(WinsNeeded(0), 1);
  EXPECT_EQ(WinsNeeded(2), 3);  // 1/4 even for 2 of 2: no count is enough
  EXPECT_EQ(WinsNeeded(3), 3);  // 1/8
  EXPECT_EQ(WinsNeeded(4), 4);  // 1/16; 3 of 4 is 5/16
  EXPECT_EQ(WinsNeeded(5), 4);  // 6/32
  EXPECT_EQ(WinsNeeded(6), 5);  // 7/64; 4 of 6 is 22/64
  EXPECT_EQ(WinsNeeded(8), 6);  // 37/256; 5 of 8 is 93/256
  EXPECT_EQ(WinsNeeded(12), 8);  // 794/4096
  EXPECT_EQ(WinsNeeded(16), 11);  // 6885/65536; 10 of 16 is 14893/65536
}

TEST(TuningDecisionTest, AdoptsASettingFasterInEveryRoundBeyondItsSpread) {
  const TuningDecision d = DecideSetting(
      {{{kDefault, 10}, {kOther, 8}}, {{kDefault, 20}, {kOther, 16.4}}, {{kDefault, 10}, {kOther, 7.9}}},
      kDefault, kOrder);
  EXPECT_TRUE(d.adopted);
  EXPECT_EQ(d.chosen, kOther);
  EXPECT_NEAR(d.evidence[1].ratio_median, 0.8, 1e-9);
  // Three of three needed: the bound is the largest ratio.
  EXPECT_NEAR(d.evidence[1].ratio_spread, 0.82 - 0.8, 1e-9);
  EXPECT_EQ(d.evidence[1].wins, 3);
  EXPECT_EQ(d.reason, "1x2 adopted: 0.80 of the default 2x1, faster in 3 of 3 rounds, 3 needed");
}

TEST(TuningDecisionTest, KeepsTheDefaultWhenTheSpreadCoversTheGain) {
  // Median 0.9, but one round of three at 1.1.
  const TuningDecision d = DecideSetting(RoundsWithRatios({0.9, 1.1, 0.9}), kDefault, kOrder);
  EXPECT_FALSE(d.adopted);
  EXPECT_EQ(d.chosen, kDefault);
  EXPECT_NEAR(d.evidence[1].ratio_median + d.evidence[1].ratio_spread, 1.1, 1e-9);
  EXPECT_EQ(d.reason,
            "kept the default 2x1: no setting beat it by more than its spread (closest: 1x2 at "
            "0.90, faster in 2 of 3 rounds, 3 needed)");
}

TEST(TuningDecisionTest, ABurstCountsAsOneLostRoundWhateverItsSize) {
  // Faster in 10 of 12 rounds, 8 needed; one of the two lost rounds is 1.6x.
  const TuningDecision d = DecideSetting(
      RoundsWithRatios({0.95, 0.97, 1.6, 0.96, 0.94, 0.98, 0.95, 1.01, 0.97, 0.96, 0.95, 0.97}),
      kDefault, kOrder);
  ASSERT_TRUE(d.adopted) << d.reason;
  const SettingEvidence& e = d.evidence[1];
  EXPECT_EQ(e.wins, 10);
  EXPECT_NEAR(e.ratio_median, 0.965, 1e-9);
  EXPECT_NEAR(e.ratio_median + e.ratio_spread, 0.97, 1e-9);  // the 8th smallest
}

TEST(TuningDecisionTest, MoreRoundsMakeTheRuleSurerNotStricter) {
  // Faster in 3 of 4: not enough. The same share over 12 rounds, 9 of 12, is.
  EXPECT_FALSE(DecideSetting(RoundsWithRatios({0.95, 1.02, 0.96, 0.94}), kDefault, kOrder).adopted);
  EXPECT_TRUE(DecideSetting(RoundsWithRatios({0.95, 1.02, 0.96, 0.94, 0.95, 1.03, 0.96, 0.94,
                                              0.95, 1.02, 0.96, 0.94}),
                            kDefault, kOrder)
                  .adopted);
}

TEST(TuningDecisionTest, TwoRoundsAreNotEnoughEvidence) {
  const TuningDecision d = DecideSetting(RoundsWithRatios({0.5, 0.5}), kDefault, kOrder);
  EXPECT_FALSE(d.adopted);
  EXPECT_NE(d.reason.find("1x2 at 0.50 in only 2 rounds, 3 needed"), std::string::npos) << d.reason;
}

TEST(TuningDecisionTest, TiesGoToTheEarlierSettingInOrder) {
  const Setting third{1, 1};
  const std::map<Setting, double> round = {{kDefault, 10}, {kOther, 8}, {third, 8}};
  const TuningDecision d = DecideSetting({round, round, round}, kDefault, {kDefault, third, kOther});
  EXPECT_EQ(d.chosen, third);
}

TEST(TuningDecisionTest, EliminatesOnlyAfterTwoClearlySlowerRounds) {
  EXPECT_FALSE(ShouldEliminate({2.0}));
  EXPECT_FALSE(ShouldEliminate({2.0, 1.1}));
  EXPECT_TRUE(ShouldEliminate({1.3, 1.25}));
}

TEST(TuningDecisionTest, ASettingFarSlowerThanOneThatBeatsTheDefaultIsEliminated) {
  const Setting third{1, 1};
  // third is 0.9x the default but 1.29x kOther, which beats the default by
  // more than its spread.
  const std::map<Setting, double> round = {{kDefault, 10}, {kOther, 7}, {third, 9}};
  const std::vector<std::map<Setting, double>> rounds = {round, round, round};
  EXPECT_EQ(SettingsToEliminate(rounds, {kDefault, kOther, third}, kDefault),
            std::vector<Setting>{third});
}

TEST(TuningDecisionTest, ASettingIsNotEliminatedBehindOneThatDoesNotQualify) {
  const Setting third{1, 1};
  // kOther at 0.7 and 1.05 does not qualify; third is 1.29x and 1.105x
  // kOther and below 1.1x the default.
  const std::vector<std::map<Setting, double>> rounds = {
      {{kDefault, 10}, {kOther, 7}, {third, 9}}, {{kDefault, 10}, {kOther, 10.5}, {third, 11.6}}};
  EXPECT_TRUE(SettingsToEliminate(rounds, {kDefault, kOther, third}, kDefault).empty());
}

TEST(TuningDecisionTest, TheDefaultIsNeverEliminated) {
  const std::vector<std::map<Setting, double>> rounds = {{{kDefault, 20}, {kOther, 10}},
                                                         {{kDefault, 20}, {kOther, 10}}};
  EXPECT_TRUE(SettingsToEliminate(rounds, {kDefault, kOther}, kDefault).empty());
}

TEST(TuningDecisionTest, ScreensOutOnlyASettingFarSlowerInItsFirstVisit) {
  const Setting third{1, 1};
  const std::vector<Setting> timed = {kDefault, kOther, third};
  EXPECT_EQ(SettingsToScreenOut({{kDefault, 10}, {kOther, 12.5}, {third, 13.5}}, timed, kDefault),
            std::vector<Setting>{third});
  EXPECT_EQ(SettingsToScreenOut({{kDefault, 10}, {kOther, 10 * kScreenOutRatio}, {third, 13.5}},
                                timed, kDefault),
            std::vector<Setting>{third});
}

TEST(TuningDecisionTest, TheScreeningNeverDropsEveryOtherSetting) {
  const Setting third{1, 1};
  // Both far slower in their first visits: the closer one stays.
  EXPECT_EQ(SettingsToScreenOut({{kDefault, 10}, {kOther, 17}, {third, 14}},
                                {kDefault, kOther, third}, kDefault),
            std::vector<Setting>{kOther});
  EXPECT_TRUE(SettingsToScreenOut({{kDefault, 10}, {kOther, 17}}, kOrder, kDefault).empty());
}

TEST(TuningDecisionTest, TheScreeningRoundIsEvidenceButNotARound) {
  // kOther was 1.2x the default in its (cold) screening visit, then 0.8x in
  // all three rounds: the rounds decide.
  const TuningDecision d = DecideSetting(RoundsWithRatios({0.8, 0.8, 0.8}), kDefault, kOrder,
                                         {{kDefault, 10}, {kOther, 12}});
  EXPECT_TRUE(d.adopted);
  EXPECT_EQ(d.evidence[1].ratios.size(), 3u);
  EXPECT_NEAR(d.evidence[1].screening_ratio, 1.2, 1e-9);
  EXPECT_FALSE(d.evidence[1].screened_out);
}

TEST(TuningDecisionTest, TheClosestSettingBelowTheRunoffRatioEarnsARunoff) {
  const Setting third{1, 1};
  // kOther 0.95 and third 0.97, both faster in 2 of 3 rounds: kOther is closer.
  const TuningDecision d = DecideSetting(
      {{{kDefault, 10}, {kOther, 9}, {third, 9.2}}, {{kDefault, 10}, {kOther, 10.1}, {third, 10.2}},
       {{kDefault, 10}, {kOther, 9.5}, {third, 9.7}}},
      kDefault, {kDefault, third, kOther});
  ASSERT_FALSE(d.adopted);
  const SettingEvidence* runoff = RunoffCandidate(d);
  ASSERT_NE(runoff, nullptr);
  EXPECT_EQ(runoff->setting, kOther);
}

TEST(TuningDecisionTest, NoRunoffWithoutASettingCloseEnoughOrAfterAnAdoption) {
  // 0.985: not close enough.
  EXPECT_EQ(RunoffCandidate(DecideSetting(RoundsWithRatios({0.935, 1.035, 0.985}), kDefault, kOrder)),
            nullptr);
  // Two rounds: not enough to earn one.
  EXPECT_EQ(RunoffCandidate(DecideSetting(RoundsWithRatios({0.9, 0.9}), kDefault, kOrder)), nullptr);
  // Adopted: nothing to run off.
  EXPECT_EQ(RunoffCandidate(DecideSetting(RoundsWithRatios({0.8, 0.8, 0.8}), kDefault, kOrder)),
            nullptr);
}

TEST(TuningDecisionTest, ASettingThatCannotQualifyInTheRoundsLeftIsDropped) {
  // Faster in 0 of 5, 7 rounds left: at most 7 of 12, 8 needed.
  const auto rounds = RoundsWithRatios({1.01, 1.0, 1.02, 1.03, 1.0});
  EXPECT_EQ(SettingsThatCannotQualify(rounds, kOrder, kDefault, 7), std::vector<Setting>{kOther});
  // 8 left: at most 8 of 13, 9 needed. 10 left: 10 of 15, 10 needed.
  EXPECT_EQ(SettingsThatCannotQualify(rounds, kOrder, kDefault, 8), std::vector<Setting>{kOther});
  EXPECT_TRUE(SettingsThatCannotQualify(rounds, kOrder, kDefault, 10).empty());
}

TEST(TuningDecisionTest, ASettingCloseEnoughForARunoffIsNotDroppedForCountingLost) {
  // Faster in 3 of 6 with 3 left (at most 6 of 9, 7 needed), but at a median of 0.97.
  const auto rounds = RoundsWithRatios({0.90, 1.01, 0.93, 1.02, 1.03, 0.91});
  EXPECT_LT(MedianOf({0.90, 1.01, 0.93, 1.02, 1.03, 0.91}), kRunoffBelowRatio);
  EXPECT_TRUE(SettingsThatCannotQualify(rounds, kOrder, kDefault, 3).empty());
  // The same count at a median of 1.00 is dropped.
  EXPECT_EQ(SettingsThatCannotQualify(RoundsWithRatios({0.99, 1.01, 0.99, 1.02, 1.03, 0.99}),
                                      kOrder, kDefault, 3),
            std::vector<Setting>{kOther});
}

TEST(TuningDecisionTest, TheRoundsAreSettledWhenOneSettingMustQualifyOrNoneCan) {
  // Faster in 8 of 8 with 4 left: 8 of 12 is enough whatever they show.
  EXPECT_TRUE(RoundsSettled(RoundsWithRatios(std::vector<double>(8, 0.8)), kOrder, kDefault, 4));
  // 7 of 7 with 5 left: not yet.
  EXPECT_FALSE(RoundsSettled(RoundsWithRatios(std::vector<double>(7, 0.8)), kOrder, kDefault, 5));
  // Faster in 0 of 5 with 7 left: it cannot reach 8 of 12.
  EXPECT_TRUE(RoundsSettled(RoundsWithRatios({1.1, 1.2, 1.1, 1.0, 1.05}), kOrder, kDefault, 7));
  // Only the default live.
  EXPECT_TRUE(RoundsSettled(RoundsWithRatios({0.8}), {kDefault}, kDefault, 8));
}

TEST(TuningDecisionTest, TheRoundsAreNotSettledWhileTwoSettingsCanStillQualify) {
  const Setting third{1, 1};
  const std::map<Setting, double> round = {{kDefault, 10}, {kOther, 8}, {third, 7}};
  const std::vector<std::map<Setting, double>> rounds(9, round);
  // Both sure to qualify, but which has the lower median is not settled.
  EXPECT_FALSE(RoundsSettled(rounds, {kDefault, kOther, third}, kDefault, 3));
}

TEST(TuningDecisionTest, ASettingScreenedOutIsMarkedSoInTheEvidence) {
  const Setting third{1, 1};
  const TuningDecision d =
      DecideSetting(RoundsWithRatios({1.1, 1.1, 1.1}), kDefault, {kDefault, kOther, third},
                    {{kDefault, 10}, {kOther, 12}, {third, 17}});
  EXPECT_FALSE(d.adopted);
  EXPECT_FALSE(d.evidence[1].screened_out);
  EXPECT_TRUE(d.evidence[2].screened_out);
  EXPECT_NEAR(d.evidence[2].screening_ratio, 1.7, 1e-9);
}

}  // namespace
}  // namespace graphi
