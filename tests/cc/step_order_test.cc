// Unit tests of step arrival numbers (step_order.h).
#include "cc/teams/step_order.h"

#include <gtest/gtest.h>

#include <thread>

namespace graphi {
namespace {

TEST(StepOrderTest, TopLevelStepsGetIncreasingNumbers) {
  const uint64_t first = StepOrderForNewStep();
  const uint64_t second = StepOrderForNewStep();
  EXPECT_NE(first, kNoStepOrder);
  EXPECT_GT(second, first);
}

TEST(StepOrderTest, AStepStartedWhileRunningAnotherStepsOpSharesItsNumber) {
  const uint64_t parent = StepOrderForNewStep();
  ScopedStepOrder running(parent);
  EXPECT_EQ(StepOrderForNewStep(), parent);
}

TEST(StepOrderTest, TheScopeRestoresTheOuterStep) {
  EXPECT_EQ(CurrentStepOrder(), kNoStepOrder);
  {
    ScopedStepOrder outer(7);
    {
      ScopedStepOrder inner(9);
      EXPECT_EQ(CurrentStepOrder(), 9u);
    }
    EXPECT_EQ(CurrentStepOrder(), 7u);
  }
  EXPECT_EQ(CurrentStepOrder(), kNoStepOrder);
}

TEST(StepOrderTest, TheCurrentStepIsPerThread) {
  ScopedStepOrder running(5);
  uint64_t seen = 1;
  std::thread other([&] { seen = CurrentStepOrder(); });
  other.join();
  EXPECT_EQ(seen, kNoStepOrder);
}

}  // namespace
}  // namespace graphi
