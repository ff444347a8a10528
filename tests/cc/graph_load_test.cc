// Unit tests of GraphLoad: overlapping top-level steps, the load class they
// put a graph in, and which adoption is in force for it.
#include "cc/tuning/graph_load.h"

#include <gtest/gtest.h>

namespace graphi {
namespace {

Adoption AdoptionFor(LoadClass load_class, int executors) {
  Adoption adoption;
  adoption.setting = TeamsSetting(executors, 1);
  adoption.source = SettingSource::kCache;
  adoption.load_class = load_class;
  return adoption;
}

TEST(GraphLoadTest, AStepAloneDoesNotOverlap) {
  GraphLoad load;
  uint64_t epoch = 0;
  int in_flight = 0;
  EXPECT_FALSE(load.BeginTopLevelStep(&epoch, &in_flight));
  EXPECT_EQ(in_flight, 1);
  EXPECT_FALSE(load.EndTopLevelStep(epoch, &in_flight));
  EXPECT_EQ(in_flight, 1);
}

TEST(GraphLoadTest, TwoStepsInFlightOverlapBothWays) {
  GraphLoad load;
  uint64_t first = 0, second = 0;
  int in_flight = 0;
  EXPECT_FALSE(load.BeginTopLevelStep(&first, &in_flight));
  EXPECT_TRUE(load.BeginTopLevelStep(&second, &in_flight));
  EXPECT_EQ(in_flight, 2);
  EXPECT_FALSE(load.EndTopLevelStep(second, &in_flight));  // nothing started while it ran
  EXPECT_EQ(in_flight, 2);
  EXPECT_TRUE(load.EndTopLevelStep(first, &in_flight));  // the second one started while it ran
  EXPECT_EQ(in_flight, 1);
}

TEST(GraphLoadTest, AStepCountsTheMostStepsInFlightItSaw) {
  EXPECT_EQ(GraphLoad::StepInFlight(1, 1, /*overlapped=*/false), 1);
  EXPECT_EQ(GraphLoad::StepInFlight(3, 5, /*overlapped=*/true), 5);
  EXPECT_EQ(GraphLoad::StepInFlight(4, 2, /*overlapped=*/true), 4);
  // Alone at both ends, but another step came and went while it ran.
  EXPECT_EQ(GraphLoad::StepInFlight(1, 1, /*overlapped=*/true), 2);
}

TEST(GraphLoadTest, OverlappingStepsMoveTheGraphUnderLoad) {
  GraphLoad load;
  EXPECT_EQ(load.load_class(), LoadClass::kAlone);
  bool changed = false;
  for (int i = 0; i < LoadClassTracker::kDefaultStepsToSwitch; ++i) {
    changed = load.NoteTopLevelStepEnd(/*in_flight=*/4).load_class_changed || changed;
  }
  EXPECT_TRUE(changed);
  EXPECT_EQ(load.load_class(), LoadClass::kUnderLoad4);
}

TEST(GraphLoadTest, TheAdoptionInForceFollowsTheLoadClass) {
  GraphLoad load;
  Adoption in_force;
  EXPECT_FALSE(load.InForce(&in_force));
  load.Adopt(AdoptionFor(LoadClass::kAlone, 1));
  load.Adopt(AdoptionFor(LoadClass::kUnderLoad4, 2));
  ASSERT_TRUE(load.InForce(&in_force));
  EXPECT_EQ(in_force.setting.executors, 1);
  TopLevelStepEnd end;
  for (int i = 0; i < LoadClassTracker::kDefaultStepsToSwitch; ++i) {
    end = load.NoteTopLevelStepEnd(/*in_flight=*/4);
  }
  EXPECT_TRUE(end.adopted[static_cast<int>(LoadClass::kAlone)]);
  EXPECT_TRUE(end.adopted[static_cast<int>(LoadClass::kUnderLoad4)]);
  ASSERT_TRUE(load.InForce(&in_force));
  EXPECT_EQ(in_force.setting.executors, 2);
  load.ClearAdoptions();
  EXPECT_FALSE(load.InForce(&in_force));
}

}  // namespace
}  // namespace graphi
