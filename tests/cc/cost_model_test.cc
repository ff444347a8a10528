// Unit tests of the cost model: estimates and upward ranks (remaining
// critical path), checked against brute-force longest paths.
#include "cc/profiler/cost_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

namespace graphi {
namespace {

// Longest path starting at `v` by exhaustive recursion (exponential; tiny graphs only).
int64_t BruteForceRank(int v, const std::vector<std::vector<int>>& succ,
                       const std::vector<int64_t>& cost) {
  int64_t best = 0;
  for (int s : succ[v]) best = std::max(best, BruteForceRank(s, succ, cost));
  return std::max<int64_t>(cost[v], 0) + best;
}

TEST(CostModelTest, RankOfAChainIsTheSumOfTheRest) {
  std::vector<std::vector<int>> succ = {{1}, {2}, {}};
  EXPECT_EQ(CostModel::UpwardRanks(succ, {5, 7, 11}), (std::vector<int64_t>{23, 18, 11}));
}

TEST(CostModelTest, RankOfADiamondFollowsTheHeavierBranch) {
  // 0 -> {1, 2} -> 3
  std::vector<std::vector<int>> succ = {{1, 2}, {3}, {3}, {}};
  EXPECT_EQ(CostModel::UpwardRanks(succ, {1, 10, 2, 1}), (std::vector<int64_t>{12, 11, 3, 1}));
}

TEST(CostModelTest, UnknownCostsCountAsZero) {
  std::vector<std::vector<int>> succ = {{1}, {}};
  EXPECT_EQ(CostModel::UpwardRanks(succ, {CostModel::kUnknown, 4}), (std::vector<int64_t>{4, 4}));
}

TEST(CostModelTest, RanksMatchBruteForceOnRandomDags) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 2 + trial % 10;
    std::vector<std::vector<int>> succ(n);
    std::vector<int64_t> cost(n);
    for (int v = 0; v < n; ++v) {
      cost[v] = rng() % 100;
      for (int w = v + 1; w < n; ++w) {
        if (rng() % 3 == 0) succ[v].push_back(w);
      }
    }
    const std::vector<int64_t> ranks = CostModel::UpwardRanks(succ, cost);
    for (int v = 0; v < n; ++v) {
      EXPECT_EQ(ranks[v], BruteForceRank(v, succ, cost)) << "trial " << trial << " node " << v;
    }
  }
}

TEST(CostModelTest, RecordedCostsDriveRanksAfterRefresh) {
  CostModel model(std::vector<std::vector<int>>{{1}, {}});
  EXPECT_FALSE(model.costs_known());
  EXPECT_EQ(model.Rank(0), 0);
  model.Record(0, 100);
  model.Record(1, 50);
  model.RefreshRanks();
  EXPECT_TRUE(model.costs_known());
  EXPECT_EQ(model.Rank(0), 150);
  EXPECT_EQ(model.Rank(1), 50);
}

TEST(CostModelTest, EstimateIsADecayedMeanThatFollowsDrift) {
  CostModel model(std::vector<std::vector<int>>(1));
  model.Record(0, 800);
  EXPECT_EQ(model.Estimate(0), 800);
  model.Record(0, 1600);  // one sample moves it 1/8 of the way
  EXPECT_EQ(model.Estimate(0), 900);
  for (int i = 0; i < 100; ++i) model.Record(0, 1600);
  EXPECT_NEAR(model.Estimate(0), 1600, 10);
}

TEST(CostModelTest, SlowFirstRunIsForgottenAtTheFirstNormalRun) {
  CostModel model(std::vector<std::vector<int>>(1));
  model.Record(0, 50000);  // first run: builds its primitives
  model.Record(0, 1000);
  EXPECT_EQ(model.Estimate(0), 1000);
}

TEST(CostModelTest, SetEstimatesRejectsAnotherGraphsSize) {
  CostModel model(std::vector<std::vector<int>>{{1}, {}});
  EXPECT_FALSE(model.SetEstimates({1, 2, 3}));
  EXPECT_EQ(model.Estimate(0), CostModel::kUnknown);
  EXPECT_TRUE(model.SetEstimates({3, 4}));
  EXPECT_EQ(model.Estimate(1), 4);
}

TEST(CostModelTest, MeanEstimateAveragesOnlyTheNodesThatRan) {
  CostModel model({{1}, {2}, {}});
  EXPECT_EQ(model.MeanEstimate(), CostModel::kUnknown);
  model.Record(0, 100);
  model.Record(2, 300);
  EXPECT_EQ(model.MeanEstimate(), 200);
}

}  // namespace
}  // namespace graphi
