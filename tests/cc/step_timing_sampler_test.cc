// Unit tests of the choice of steps that time their kernels
// (step_timing_sampler.h).
#include "cc/profiler/step_timing_sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace graphi {
namespace {

TEST(StepTimingSamplerTest, EveryStepIsTimedDuringTheWarmup) {
  StepTimingSampler sampler(/*timed_warmup_steps=*/5, /*stride=*/4);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(sampler.TakeTurn()) << "step " << i;
}

TEST(StepTimingSamplerTest, AfterTheWarmupOneStepInEachStrideIsTimed) {
  StepTimingSampler sampler(/*timed_warmup_steps=*/2, /*stride=*/4);
  sampler.TakeTurn();
  sampler.TakeTurn();
  std::vector<bool> turns;
  for (int i = 0; i < 8; ++i) turns.push_back(sampler.TakeTurn());
  EXPECT_EQ(turns, (std::vector<bool>{true, false, false, false, true, false, false, false}));
}

TEST(StepTimingSamplerTest, AStrideOfOneTimesEveryStep) {
  StepTimingSampler sampler(/*timed_warmup_steps=*/0, /*stride=*/1);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(sampler.TakeTurn());
}

TEST(StepTimingSamplerTest, TheDefaultsTimeTheFirstHundredStepsThenOneInEight) {
  StepTimingSampler sampler;
  int timed = 0;
  for (int i = 0; i < kTimedWarmupSteps; ++i) timed += sampler.TakeTurn();
  EXPECT_EQ(timed, kTimedWarmupSteps);
  timed = 0;
  for (int i = 0; i < 8 * kTimedStepStride; ++i) timed += sampler.TakeTurn();
  EXPECT_EQ(timed, 8);
}

TEST(StepTimingSamplerTest, TakeTurnReportsHowManyStepsStartedBefore) {
  StepTimingSampler sampler(/*timed_warmup_steps=*/1, /*stride=*/2);
  int64_t step = -1;
  sampler.TakeTurn(&step);
  EXPECT_EQ(step, 0);
  sampler.TakeTurn(&step);
  EXPECT_EQ(step, 1);
}

TEST(StepTimingSamplerTest, AWidenedStrideTimesOneStepInTheNewStride) {
  StepTimingSampler sampler(/*timed_warmup_steps=*/0, /*stride=*/2);
  sampler.set_stride(5);
  EXPECT_EQ(sampler.stride(), 5);
  int timed = 0;
  for (int i = 0; i < 50; ++i) timed += sampler.TakeTurn();
  EXPECT_EQ(timed, 10);
}

TEST(StepTimingSamplerTest, AStrideBelowOneCountsAsOne) {
  StepTimingSampler sampler(/*timed_warmup_steps=*/0, /*stride=*/4);
  sampler.set_stride(0);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(sampler.TakeTurn());
}

TEST(StrideForOpCostTest, TinyOpsGetAWideStrideThatKeepsTimingWithinTheBudget) {
  // 1 us ops, 50 ns reads: 100 ns of reads per timed op, at most 0.2% of
  // op time on average -> one step in 50.
  EXPECT_EQ(StrideForOpCost(/*mean_op_ns=*/1000, /*clock_read_ns=*/50), 50);
}

TEST(StrideForOpCostTest, LargeOpsKeepTheDefaultStride) {
  EXPECT_EQ(StrideForOpCost(/*mean_op_ns=*/50000, /*clock_read_ns=*/50), kTimedStepStride);
}

TEST(StrideForOpCostTest, TheStrideIsCappedForOpsNearlyAsCheapAsAClockRead) {
  EXPECT_EQ(StrideForOpCost(/*mean_op_ns=*/20, /*clock_read_ns=*/50), kMaxTimedStepStride);
}

TEST(StrideForOpCostTest, AnUnknownCostKeepsTheDefaultStride) {
  EXPECT_EQ(StrideForOpCost(/*mean_op_ns=*/-1, /*clock_read_ns=*/50), kTimedStepStride);
  EXPECT_EQ(StrideForOpCost(/*mean_op_ns=*/0, /*clock_read_ns=*/50), kTimedStepStride);
}

TEST(StepTimingSamplerTest, ConcurrentStepsShareOneCountAndGetTheSameNumberOfTurns) {
  StepTimingSampler sampler(/*timed_warmup_steps=*/0, /*stride=*/4);
  std::atomic<int> timed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) timed += sampler.TakeTurn();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(timed.load(), 1000);  // 4000 steps, one in four
}

}  // namespace
}  // namespace graphi
