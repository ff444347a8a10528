// Unit tests of GraphSettingSource: where info() says a graph's setting came
// from, given the process-wide setting in force and the graph's own adoption.
#include "cc/tuning/adoption.h"

#include <gtest/gtest.h>

#include <string>

namespace graphi {
namespace {

constexpr SettingSource kCache = SettingSource::kCache;
constexpr SettingSource kTuned = SettingSource::kTuned;
constexpr SettingSource kAutotuned = SettingSource::kAutotuned;
constexpr SettingSource kDefault = SettingSource::kDefault;

Adoption AdoptionOf(int executors, int threads_per_executor, SettingSource source) {
  Adoption adoption;
  adoption.setting = TeamsSetting(executors, threads_per_executor);
  adoption.source = source;
  return adoption;
}

TEST(GraphSettingSourceTest, AGraphWhoseOwnAdoptionIsInForceReportsItsSource) {
  const Adoption own = AdoptionOf(2, 4, kCache);
  EXPECT_EQ(GraphSettingSource(kCache, TeamsSetting(2, 4), &own), kCache);
}

TEST(GraphSettingSourceTest, AGraphReportsItsOwnSourceEvenWhenAnotherSourceKindIsInForce) {
  // Another graph's kTuned setting is in force and happens to be this
  // graph's autotuned layout: the graph's own adoption is what it runs.
  const Adoption own = AdoptionOf(1, 8, kAutotuned);
  EXPECT_EQ(GraphSettingSource(kTuned, TeamsSetting(1, 8), &own), kAutotuned);
}

TEST(GraphSettingSourceTest, AGraphRunningOnAnotherGraphsAdoptionReportsDefault) {
  const Adoption own = AdoptionOf(2, 4, kCache);
  EXPECT_EQ(GraphSettingSource(kTuned, TeamsSetting(4, 2), &own), kDefault);
}

TEST(GraphSettingSourceTest, AGraphWithoutAdoptionUnderAnAdoptedSettingReportsDefault) {
  EXPECT_EQ(GraphSettingSource(kAutotuned, TeamsSetting(2, 4), nullptr), kDefault);
}

TEST(GraphSettingSourceTest, AnExplicitOrDefaultSettingIsReportedAsIs) {
  const Adoption own = AdoptionOf(2, 4, kCache);
  for (SettingSource source : {SettingSource::kConfigure, SettingSource::kEnvironment,
                               SettingSource::kAutotune, kDefault}) {
    EXPECT_EQ(GraphSettingSource(source, TeamsSetting(2, 4), &own), source);
    EXPECT_EQ(GraphSettingSource(source, TeamsSetting(2, 4), nullptr), source);
  }
}

TEST(AdoptionSlotsTest, EachLoadClassKeepsItsOwnAdoption) {
  AdoptionSlots slots;
  Adoption alone = AdoptionOf(1, 1, kCache);
  Adoption loaded = AdoptionOf(2, 1, kAutotuned);
  loaded.load_class = LoadClass::kUnderLoad4;
  slots.Set(alone);
  slots.Set(loaded);
  ASSERT_NE(slots.For(LoadClass::kAlone), nullptr);
  ASSERT_NE(slots.For(LoadClass::kUnderLoad4), nullptr);
  EXPECT_EQ(slots.For(LoadClass::kAlone)->setting.executors, 1);
  EXPECT_EQ(slots.InForce(LoadClass::kUnderLoad4)->setting.executors, 2);
}

TEST(AdoptionSlotsTest, AClassWithoutItsOwnAdoptionRunsWithAnotherClasss) {
  AdoptionSlots slots;
  EXPECT_TRUE(slots.empty());
  EXPECT_EQ(slots.InForce(LoadClass::kAlone), nullptr);
  slots.Set(AdoptionOf(1, 2, kTuned));
  EXPECT_FALSE(slots.empty());
  EXPECT_EQ(slots.For(LoadClass::kUnderLoad4), nullptr);
  ASSERT_NE(slots.InForce(LoadClass::kUnderLoad4), nullptr);
  EXPECT_EQ(slots.InForce(LoadClass::kUnderLoad4)->source, kTuned);
}

TEST(AdoptionSlotsTest, ALaterAdoptionReplacesOnlyItsOwnClass) {
  AdoptionSlots slots;
  slots.Set(AdoptionOf(1, 2, kCache));
  Adoption loaded = AdoptionOf(2, 1, kCache);
  loaded.load_class = LoadClass::kUnderLoad4;
  slots.Set(loaded);
  slots.Set(AdoptionOf(1, 1, kAutotuned));
  EXPECT_EQ(slots.For(LoadClass::kAlone)->setting.threads_per_executor, 1);
  EXPECT_EQ(slots.For(LoadClass::kAlone)->source, kAutotuned);
  EXPECT_EQ(slots.For(LoadClass::kUnderLoad4)->setting.executors, 2);
}

TEST(AdoptionSlotsTest, AClassWithoutItsOwnAdoptionRunsWithTheNearestClasss) {
  AdoptionSlots slots;
  slots.Set(AdoptionOf(1, 2, kCache));  // alone
  Adoption four = AdoptionOf(2, 1, kAutotuned);
  four.load_class = LoadClass::kUnderLoad4;
  slots.Set(four);
  Adoption sixteen = AdoptionOf(1, 1, kAutotuned);
  sixteen.load_class = LoadClass::kUnderLoad16;
  slots.Set(sixteen);
  EXPECT_EQ(slots.InForce(LoadClass::kUnderLoad2)->load_class, LoadClass::kAlone);  // lighter of two
  EXPECT_EQ(slots.InForce(LoadClass::kUnderLoad8)->load_class, LoadClass::kUnderLoad4);
  EXPECT_EQ(slots.InForce(LoadClass::kUnderLoad32)->load_class, LoadClass::kUnderLoad16);
  EXPECT_EQ(slots.InForce(LoadClass::kUnderLoad64)->load_class, LoadClass::kUnderLoad16);
}

}  // namespace
}  // namespace graphi
