// Unit tests of GraphSettingSource: where info() says a graph's setting came
// from, given the process-wide setting in force and the graph's own adoption.
#include "cc/profiler/adoption.h"

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

}  // namespace
}  // namespace graphi
