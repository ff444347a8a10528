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

TEST(TuningDecisionTest, ASettingFarSlowerThanOneThatBeatsTheDefaultIsEliminated) {
  const Setting third{1, 1};
  // third is 0.9x the default but 1.29x kOther, which beats the default by
  // more than its spread.
  const std::vector<std::map<Setting, double>> rounds = {
      {{kDefault, 10}, {kOther, 7}, {third, 9}}, {{kDefault, 10}, {kOther, 7}, {third, 9}}};
  EXPECT_EQ(SettingsToEliminate(rounds, {kDefault, kOther, third}, kDefault),
            std::vector<Setting>{third});
}

TEST(TuningDecisionTest, ASettingIsNotEliminatedBehindOneThatDoesNotQualify) {
  const Setting third{1, 1};
  // kOther at 0.7 and 1.05 (0.875 ± 0.175) does not qualify; third is 1.29x
  // and 1.105x kOther and below 1.1x the default.
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
  // both rounds: the rounds decide.
  const TuningDecision d =
      DecideSetting({{{kDefault, 10}, {kOther, 8}}, {{kDefault, 10}, {kOther, 8}}}, kDefault,
                    kOrder, {{kDefault, 10}, {kOther, 12}});
  EXPECT_TRUE(d.adopted);
  EXPECT_EQ(d.evidence[1].ratios.size(), 2u);
  EXPECT_NEAR(d.evidence[1].screening_ratio, 1.2, 1e-9);
  EXPECT_FALSE(d.evidence[1].screened_out);
}

TEST(TuningDecisionTest, TheClosestSettingBelowTheRunoffRatioEarnsARunoff) {
  const Setting third{1, 1};
  // kOther 0.95 and third 0.97, both within their spread: kOther is closer.
  const TuningDecision d = DecideSetting(
      {{{kDefault, 10}, {kOther, 9}, {third, 9.2}}, {{kDefault, 10}, {kOther, 10}, {third, 10.2}}},
      kDefault, {kDefault, third, kOther});
  ASSERT_FALSE(d.adopted);
  const SettingEvidence* runoff = RunoffCandidate(d);
  ASSERT_NE(runoff, nullptr);
  EXPECT_EQ(runoff->setting, kOther);
}

TEST(TuningDecisionTest, NoRunoffWithoutASettingCloseEnoughOrAfterAnAdoption) {
  // 0.985: not close enough.
  EXPECT_EQ(RunoffCandidate(DecideSetting({{{kDefault, 10}, {kOther, 9.35}}, {{kDefault, 10}, {kOther, 10.35}}},
                                          kDefault, kOrder)),
            nullptr);
  // One round: not enough to earn one.
  EXPECT_EQ(RunoffCandidate(DecideSetting({{{kDefault, 10}, {kOther, 9}}}, kDefault, kOrder)), nullptr);
  // Adopted: nothing to run off.
  EXPECT_EQ(RunoffCandidate(DecideSetting({{{kDefault, 10}, {kOther, 8}}, {{kDefault, 10}, {kOther, 8}}},
                                          kDefault, kOrder)),
            nullptr);
}

// One round per ratio: the default at 10, kOther at 10 x the ratio.
std::vector<std::map<Setting, double>> RoundsWithRatios(const std::vector<double>& ratios) {
  std::vector<std::map<Setting, double>> rounds;
  for (double ratio : ratios) rounds.push_back({{kDefault, 10}, {kOther, 10 * ratio}});
  return rounds;
}

// Four rounds: 0.97, 0.955, 1.19 (a burst in the setting's visit), 0.905.
std::vector<std::map<Setting, double>> FourRoundsWithOneBurst() {
  return RoundsWithRatios({0.97, 0.955, 1.19, 0.905});
}

TEST(TuningDecisionTest, EveryRoundCountsInTheSpreadOfTheRounds) {
  const TuningDecision d = DecideSetting(FourRoundsWithOneBurst(), kDefault, kOrder);
  EXPECT_FALSE(d.adopted) << d.reason;
  EXPECT_NEAR(d.evidence[1].ratio_spread, (1.19 - 0.905) / 2, 1e-9);
  EXPECT_EQ(d.evidence[1].set_aside_ratio, 0.0);
}

TEST(TuningDecisionTest, ARunoffSetsAsideTheOneRoundFarthestFromTheMedian) {
  const TuningDecision d = DecideSetting(FourRoundsWithOneBurst(), kDefault, kOrder, {},
                                         SpreadOver::kAllButTheFarthest);
  ASSERT_TRUE(d.adopted) << d.reason;
  const SettingEvidence& e = d.evidence[1];
  EXPECT_NEAR(e.ratio_median, (0.955 + 0.97) / 2, 1e-9);  // every round
  EXPECT_NEAR(e.ratio_spread, (0.97 - 0.905) / 2, 1e-9);  // all but 1.19
  EXPECT_NEAR(e.set_aside_ratio, 1.19, 1e-9);
  EXPECT_NE(d.reason.find("over 4 rounds, the one at 1.19 set aside"), std::string::npos) << d.reason;
}

TEST(TuningDecisionTest, NoRoundIsSetAsideFromFewerThanFourRounds) {
  // Setting 1.10 aside would adopt.
  const TuningDecision d = DecideSetting(RoundsWithRatios({0.95, 0.96, 1.10}), kDefault, kOrder, {},
                                         SpreadOver::kAllButTheFarthest);
  EXPECT_FALSE(d.adopted) << d.reason;
  EXPECT_EQ(d.evidence[1].set_aside_ratio, 0.0);
}

TEST(TuningDecisionTest, TwoSlowRoundsOfFourStillKeepTheDefault) {
  // One slow round may be a burst; two are not.
  const TuningDecision d = DecideSetting(RoundsWithRatios({0.95, 1.08, 0.96, 1.10}), kDefault,
                                         kOrder, {}, SpreadOver::kAllButTheFarthest);
  EXPECT_FALSE(d.adopted) << d.reason;
}

TEST(TuningDecisionTest, OfTwoRoundsEquallyFarFromTheMedianTheOneInTheSettingsFavourIsSetAside) {
  // Median 0.96; a 0.91 goes, and the spread stays 0.05.
  const TuningDecision d = DecideSetting(RoundsWithRatios({0.91, 1.01, 0.91, 1.01}), kDefault,
                                         kOrder, {}, SpreadOver::kAllButTheFarthest);
  EXPECT_FALSE(d.adopted) << d.reason;
  EXPECT_NEAR(d.evidence[1].set_aside_ratio, 0.91, 1e-9);
  EXPECT_NEAR(d.evidence[1].ratio_spread, 0.05, 1e-9);
}

TEST(TuningDecisionTest, ASettingScreenedOutIsMarkedSoInTheEvidence) {
  const Setting third{1, 1};
  const TuningDecision d =
      DecideSetting({{{kDefault, 10}, {kOther, 11}}, {{kDefault, 10}, {kOther, 11}}}, kDefault,
                    {kDefault, kOther, third}, {{kDefault, 10}, {kOther, 12}, {third, 17}});
  EXPECT_FALSE(d.adopted);
  EXPECT_FALSE(d.evidence[1].screened_out);
  EXPECT_TRUE(d.evidence[2].screened_out);
  EXPECT_NEAR(d.evidence[2].screening_ratio, 1.7, 1e-9);
}

}  // namespace
}  // namespace graphi
