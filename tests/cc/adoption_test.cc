// Unit tests of GraphSettingSource: where info() says a graph's setting came
// from, given the process-wide setting in force and the graph's own adoption.
#include "cc/tuning/adoption.h"

#include <gtest/gtest.h>

#include <string>

namespace graphi {
namespace {

Adoption AdoptionOf(int executors, int threads_per_executor, const std::string& source) {
  Adoption adoption;
  adoption.setting.executors = executors;
  adoption.setting.threads_per_executor = threads_per_executor;
  adoption.source = source;
  return adoption;
}

TEST(GraphSettingSourceTest, AGraphWhoseOwnAdoptionIsInForceReportsItsSource) {
  const Adoption own = AdoptionOf(2, 4, "cache");
  EXPECT_EQ(GraphSettingSource("cache", 2, 4, &own), "cache");
}

TEST(GraphSettingSourceTest, AGraphReportsItsOwnSourceEvenWhenAnotherSourceKindIsInForce) {
  // Another graph's "tuned" setting is in force and happens to be this
  // graph's autotuned layout: the graph's own adoption is what it runs.
  const Adoption own = AdoptionOf(1, 8, "autotuned");
  EXPECT_EQ(GraphSettingSource("tuned", 1, 8, &own), "autotuned");
}

TEST(GraphSettingSourceTest, AGraphRunningOnAnotherGraphsAdoptionReportsDefault) {
  const Adoption own = AdoptionOf(2, 4, "cache");
  EXPECT_EQ(GraphSettingSource("tuned", 4, 2, &own), "default");
}

TEST(GraphSettingSourceTest, AGraphWithoutAdoptionUnderAnAdoptedSettingReportsDefault) {
  EXPECT_EQ(GraphSettingSource("autotuned", 2, 4, nullptr), "default");
}

TEST(GraphSettingSourceTest, AnExplicitOrDefaultSettingIsReportedAsIs) {
  const Adoption own = AdoptionOf(2, 4, "cache");
  for (const char* source : {"configure", "environment", "autotune", "default"}) {
    EXPECT_EQ(GraphSettingSource(source, 2, 4, &own), source);
    EXPECT_EQ(GraphSettingSource(source, 2, 4, nullptr), source);
  }
}

TEST(AdoptionSlotsTest, EachLoadClassKeepsItsOwnAdoption) {
  AdoptionSlots slots;
  Adoption alone = AdoptionOf(1, 1, "cache");
  Adoption loaded = AdoptionOf(2, 1, "autotuned");
  loaded.load_class = LoadClass::kUnderLoad;
  slots.Set(alone);
  slots.Set(loaded);
  ASSERT_NE(slots.For(LoadClass::kAlone), nullptr);
  ASSERT_NE(slots.For(LoadClass::kUnderLoad), nullptr);
  EXPECT_EQ(slots.For(LoadClass::kAlone)->setting.executors, 1);
  EXPECT_EQ(slots.InForce(LoadClass::kUnderLoad)->setting.executors, 2);
}

TEST(AdoptionSlotsTest, AClassWithoutItsOwnAdoptionRunsWithTheOtherClasss) {
  AdoptionSlots slots;
  EXPECT_TRUE(slots.empty());
  EXPECT_EQ(slots.InForce(LoadClass::kAlone), nullptr);
  slots.Set(AdoptionOf(1, 2, "tuned"));
  EXPECT_FALSE(slots.empty());
  EXPECT_EQ(slots.For(LoadClass::kUnderLoad), nullptr);
  ASSERT_NE(slots.InForce(LoadClass::kUnderLoad), nullptr);
  EXPECT_EQ(slots.InForce(LoadClass::kUnderLoad)->source, "tuned");
}

TEST(AdoptionSlotsTest, ALaterAdoptionReplacesOnlyItsOwnClass) {
  AdoptionSlots slots;
  slots.Set(AdoptionOf(1, 2, "cache"));
  Adoption loaded = AdoptionOf(2, 1, "cache");
  loaded.load_class = LoadClass::kUnderLoad;
  slots.Set(loaded);
  slots.Set(AdoptionOf(1, 1, "autotuned"));
  EXPECT_EQ(slots.For(LoadClass::kAlone)->setting.threads_per_executor, 1);
  EXPECT_EQ(slots.For(LoadClass::kAlone)->source, "autotuned");
  EXPECT_EQ(slots.For(LoadClass::kUnderLoad)->setting.executors, 2);
}

}  // namespace
}  // namespace graphi
