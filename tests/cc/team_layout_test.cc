// Unit tests for cc/teams/team_layout.h, run on topologies discovered
// from fake sysfs trees.

#include "cc/teams/team_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cc/platform/topology.h"
#include "tests/cc/fake_sysfs.h"

namespace graphi {
namespace {

using test_util::FakeSysfs;

// Discovers a fake machine of `num_cpus` CPUs in L2 tiles of `cpus_per_tile`
// (0 = no cache info), optionally under a cgroup v2 cpu.max line.
Topology FakeMachine(int num_cpus, int cpus_per_tile,
                     const std::string& cpu_max = "") {
  FakeSysfs fake;
  fake.BuildMachine(num_cpus, cpus_per_tile);
  if (!cpu_max.empty()) fake.SetCgroupV2(cpu_max);
  Topology topology;
  std::string error;
  EXPECT_TRUE(DiscoverTopology(fake.Sources(), &topology, &error)) << error;
  return topology;
}

// Index of the tile holding `cpu`, or -1.
int TileOf(const Topology& topology, int cpu) {
  for (size_t t = 0; t < topology.tiles.size(); ++t) {
    const std::vector<int>& tile = topology.tiles[t];
    if (std::find(tile.begin(), tile.end(), cpu) != tile.end()) {
      return static_cast<int>(t);
    }
  }
  return -1;
}

// Checks the layout invariants: right shape, CPUs usable and distinct, and
// no tile used by two teams.
void ExpectValidLayout(const Topology& topology, const TeamLayout& layout,
                       int executors, int threads) {
  EXPECT_EQ(layout.executors, executors);
  EXPECT_EQ(layout.threads_per_executor, threads);
  ASSERT_EQ(layout.team_cpus.size(), static_cast<size_t>(executors));
  std::set<int> seen_cpus;
  std::vector<int> tile_owner(topology.tiles.size(), -1);
  for (int team = 0; team < executors; ++team) {
    ASSERT_EQ(layout.team_cpus[team].size(), static_cast<size_t>(threads));
    for (int cpu : layout.team_cpus[team]) {
      EXPECT_TRUE(seen_cpus.insert(cpu).second) << "cpu " << cpu << " reused";
      const int tile = TileOf(topology, cpu);
      ASSERT_GE(tile, 0) << "cpu " << cpu << " is not usable";
      EXPECT_TRUE(tile_owner[tile] == -1 || tile_owner[tile] == team)
          << "tile " << tile << " shared by teams " << tile_owner[tile]
          << " and " << team;
      tile_owner[tile] = team;
    }
  }
}

TEST(BuildTeamLayoutTest, ThirtyFourByTwoOn68CoresUsesDisjointWholeTiles) {
  const Topology topology = FakeMachine(68, 2);
  TeamLayout layout;
  std::string error;
  ASSERT_TRUE(BuildTeamLayout(topology, 34, 2, &layout, &error)) << error;
  ExpectValidLayout(topology, layout, 34, 2);
  for (int team = 0; team < 34; ++team) {
    // Each team is exactly one whole tile.
    EXPECT_EQ(layout.team_cpus[team], topology.tiles[team]);
  }
}

TEST(BuildTeamLayoutTest, TwoByOneOnTwoCpuTilesUsesDifferentTiles) {
  const Topology topology = FakeMachine(4, 2);
  TeamLayout layout;
  std::string error;
  ASSERT_TRUE(BuildTeamLayout(topology, 2, 1, &layout, &error)) << error;
  ExpectValidLayout(topology, layout, 2, 1);
  EXPECT_EQ(layout.team_cpus, (std::vector<std::vector<int>>{{0}, {2}}));
  EXPECT_NE(TileOf(topology, layout.team_cpus[0][0]),
            TileOf(topology, layout.team_cpus[1][0]));
}

TEST(BuildTeamLayoutTest, TeamSpanningSeveralTilesUsesFirstCpus) {
  const Topology topology = FakeMachine(8, 2);
  TeamLayout layout;
  std::string error;
  ASSERT_TRUE(BuildTeamLayout(topology, 2, 3, &layout, &error)) << error;
  ExpectValidLayout(topology, layout, 2, 3);
  EXPECT_EQ(layout.team_cpus,
            (std::vector<std::vector<int>>{{0, 1, 2}, {4, 5, 6}}));
}

TEST(BuildTeamLayoutTest, UnevenTilesAreTakenUntilTheyHoldEnoughCpus) {
  Topology topology;
  topology.tiles = {{0}, {1, 2, 3}, {4, 5}, {6}};
  topology.usable_cpus = {0, 1, 2, 3, 4, 5, 6};
  topology.quota_cores = 7;
  TeamLayout layout;
  std::string error;
  ASSERT_TRUE(BuildTeamLayout(topology, 2, 2, &layout, &error)) << error;
  ExpectValidLayout(topology, layout, 2, 2);
  EXPECT_EQ(layout.team_cpus, (std::vector<std::vector<int>>{{0, 1}, {4, 5}}));
}

TEST(BuildTeamLayoutTest, OverUsableCoresIsRejectedNamingSettingsAndBound) {
  const Topology topology = FakeMachine(2, 1);
  TeamLayout layout;
  std::string error;
  EXPECT_FALSE(BuildTeamLayout(topology, 3, 1, &layout, &error));
  EXPECT_EQ(error,
            "GRAPHI_EXECUTORS x GRAPHI_THREADS_PER_EXECUTOR = 3 x 1 = 3 "
            "exceeds the 2 usable cores (affinity 0-1, cgroup quota 2); "
            "allowed: executors * threads_per_executor <= 2");
}

TEST(BuildTeamLayoutTest, CgroupQuotaBoundsExecutorsTimesThreads) {
  const Topology topology = FakeMachine(8, 1, "250000 100000");
  TeamLayout layout;
  std::string error;
  EXPECT_TRUE(BuildTeamLayout(topology, 2, 1, &layout, &error)) << error;
  EXPECT_FALSE(BuildTeamLayout(topology, 3, 1, &layout, &error));
  EXPECT_NE(error.find("GRAPHI_EXECUTORS"), std::string::npos) << error;
  EXPECT_NE(error.find("cgroup quota 2"), std::string::npos) << error;
  EXPECT_NE(error.find("<= 2"), std::string::npos) << error;
}

TEST(BuildTeamLayoutTest, HugeSettingsDoNotOverflow) {
  const Topology topology = FakeMachine(4, 1);
  TeamLayout layout;
  std::string error;
  EXPECT_FALSE(BuildTeamLayout(topology, 1 << 20, 1 << 20, &layout, &error));
  EXPECT_NE(error.find("exceeds the 4 usable cores"), std::string::npos)
      << error;
}

TEST(BuildTeamLayoutTest, MoreTeamsThanTilesIsRejectedWithTileCounts) {
  // 8 CPUs in tiles of 4: 4 teams of 2 threads fit the core bound (8 <= 8)
  // but need 4 whole tiles while only 2 exist.
  const Topology topology = FakeMachine(8, 4);
  TeamLayout layout;
  std::string error;
  EXPECT_FALSE(BuildTeamLayout(topology, 4, 2, &layout, &error));
  EXPECT_NE(error.find("GRAPHI_EXECUTORS"), std::string::npos) << error;
  EXPECT_NE(error.find("need 4 tiles of 4 cpus"), std::string::npos) << error;
  EXPECT_NE(error.find("only 2 tiles are available"), std::string::npos)
      << error;
  EXPECT_NE(error.find("allowed: GRAPHI_EXECUTORS <= 2 for "
                       "GRAPHI_THREADS_PER_EXECUTOR = 2"),
            std::string::npos)
      << error;
}

TEST(BuildTeamLayoutTest, TeamsSpanningTilesRunOutOfTiles) {
  // 6 CPUs in tiles of 2: teams of 3 threads each need 2 tiles, so only one
  // team of 3 fits even though 2 x 3 = 6 cores are usable.
  const Topology topology = FakeMachine(6, 2);
  TeamLayout layout;
  std::string error;
  EXPECT_FALSE(BuildTeamLayout(topology, 2, 3, &layout, &error));
  EXPECT_NE(error.find("need 4 tiles of 2 cpus"), std::string::npos) << error;
  EXPECT_NE(error.find("only 3 tiles"), std::string::npos) << error;
  EXPECT_NE(error.find("GRAPHI_EXECUTORS <= 1"), std::string::npos) << error;
}

TEST(BuildTeamLayoutTest, ZeroOrNegativeSettingsAreRejected) {
  const Topology topology = FakeMachine(4, 2);
  TeamLayout layout;
  std::string error;
  EXPECT_FALSE(BuildTeamLayout(topology, 0, 1, &layout, &error));
  EXPECT_EQ(error,
            "GRAPHI_EXECUTORS = 0 is invalid; allowed: 1 <= GRAPHI_EXECUTORS "
            "<= 4");
  EXPECT_FALSE(BuildTeamLayout(topology, -2, 1, &layout, &error));
  EXPECT_NE(error.find("GRAPHI_EXECUTORS = -2"), std::string::npos) << error;
  EXPECT_FALSE(BuildTeamLayout(topology, 1, 0, &layout, &error));
  EXPECT_EQ(error,
            "GRAPHI_THREADS_PER_EXECUTOR = 0 is invalid; allowed: 1 <= "
            "GRAPHI_THREADS_PER_EXECUTOR <= 4");
  EXPECT_FALSE(BuildTeamLayout(topology, 1, -1, &layout, &error));
  EXPECT_NE(error.find("GRAPHI_THREADS_PER_EXECUTOR = -1"), std::string::npos)
      << error;
}

TEST(DefaultSettingTest, SixtyEightCoresInTwoCpuTilesIs34x2) {
  const Topology topology = FakeMachine(68, 2);
  const Setting default_setting = DefaultSetting(topology);
  const int executors = default_setting.executors;
  const int threads = default_setting.threads_per_executor;
  EXPECT_EQ(executors, 34);
  EXPECT_EQ(threads, 2);
  TeamLayout layout;
  std::string error;
  EXPECT_TRUE(BuildTeamLayout(topology, executors, threads, &layout, &error))
      << error;
}

TEST(DefaultSettingTest, TwoCoresInOneCpuTilesIs2x1) {
  const Topology topology = FakeMachine(2, 1);
  const Setting default_setting = DefaultSetting(topology);
  const int executors = default_setting.executors;
  const int threads = default_setting.threads_per_executor;
  EXPECT_EQ(executors, 2);
  EXPECT_EQ(threads, 1);
}

TEST(DefaultSettingTest, QuotaSmallerThanTileClampsThreads) {
  // Tiles of 4 CPUs but a 2-core quota: one team of 2 threads.
  const Topology topology = FakeMachine(8, 4, "200000 100000");
  const Setting default_setting = DefaultSetting(topology);
  const int executors = default_setting.executors;
  const int threads = default_setting.threads_per_executor;
  EXPECT_EQ(executors, 1);
  EXPECT_EQ(threads, 2);
  TeamLayout layout;
  std::string error;
  EXPECT_TRUE(BuildTeamLayout(topology, executors, threads, &layout, &error))
      << error;
}

TEST(SymmetricSettingsTest, NeverContainsAnInvalidSetting) {
  for (const std::pair<int, int>& machine :
       std::vector<std::pair<int, int>>{{68, 2}, {2, 1}, {8, 4}, {6, 0}}) {
    const Topology topology = FakeMachine(machine.first, machine.second);
    const std::vector<Setting> settings = SymmetricSettings(topology);
    ASSERT_FALSE(settings.empty());
    EXPECT_TRUE(std::is_sorted(settings.begin(), settings.end()));
    const std::set<Setting> listed(settings.begin(), settings.end());
    EXPECT_EQ(listed.size(), settings.size()) << "duplicates";
    const int cores = UsableCores(topology);
    for (int threads = 1; threads <= cores; ++threads) {
      for (int executors = 1; executors * threads <= cores; ++executors) {
        TeamLayout layout;
        std::string error;
        const bool accepted =
            BuildTeamLayout(topology, executors, threads, &layout, &error);
        EXPECT_EQ(accepted, listed.count(TeamsSetting(executors, threads)) == 1)
            << executors << " x " << threads << " on " << machine.first
            << " cpus / tiles of " << machine.second << ": " << error;
      }
    }
  }
}

TEST(SymmetricSettingsTest, ContainsTheDefaultSetting) {
  const Topology topology = FakeMachine(68, 2);
  const Setting default_setting = DefaultSetting(topology);
  const int executors = default_setting.executors;
  const int threads = default_setting.threads_per_executor;
  const std::vector<Setting> settings = SymmetricSettings(topology);
  EXPECT_NE(std::find(settings.begin(), settings.end(), TeamsSetting(executors, threads)),
            settings.end());
}

using Settings = std::vector<Setting>;

TEST(TuningCandidatesTest, TwoOneCpuTilesKeepEverySymmetricSetting) {
  EXPECT_EQ(TuningCandidates(FakeMachine(2, 1)), (Settings{{1, 1}, {1, 2}, {2, 1}}));
}

TEST(TuningCandidatesTest, SixteenOneCpuTilesAreWholeMachineLayoutsAndSequential) {
  EXPECT_EQ(TuningCandidates(FakeMachine(16, 1)),
            (Settings{{1, 1}, {1, 16}, {2, 8}, {4, 4}, {8, 2}, {16, 1}}));
}

TEST(TuningCandidatesTest, TeamSizesAreMultiplesOfTheTileAndOneThread) {
  // 68 cpus in 2-cpu tiles: T = 1 and 2, 4, 8, 16, 32, 64; one-thread teams
  // take one cpu of each tile.
  EXPECT_EQ(TuningCandidates(FakeMachine(68, 2)),
            (Settings{{1, 1}, {1, 64}, {2, 32}, {4, 16}, {8, 8}, {17, 4}, {34, 1}, {34, 2}}));
}

TEST(TuningCandidatesTest, AreValidAndIncludeTheDefault) {
  for (const std::pair<int, int>& machine :
       std::vector<std::pair<int, int>>{{68, 2}, {2, 1}, {8, 4}, {6, 0}, {16, 1}, {12, 1}}) {
    const Topology topology = FakeMachine(machine.first, machine.second);
    const Settings candidates = TuningCandidates(topology);
    EXPECT_TRUE(std::is_sorted(candidates.begin(), candidates.end()));
    const Settings all = SymmetricSettings(topology);
    for (const Setting& s : candidates) {
      EXPECT_NE(std::find(all.begin(), all.end(), s), all.end())
          << s << " on " << machine.first << " cpus";
    }
    EXPECT_NE(std::find(candidates.begin(), candidates.end(), DefaultSetting(topology)),
              candidates.end());
  }
}

TEST(StockPointCandidatesTest, AllInterOpAndAllIntraOpOnTwoCores) {
  EXPECT_EQ(StockPointCandidates(FakeMachine(2, 1)),
            (Settings{StockPointSetting(1, 2), StockPointSetting(2, 1)}));
}

TEST(StockPointCandidatesTest, ManyCoresAddTheSplitInBetween) {
  EXPECT_EQ(StockPointCandidates(FakeMachine(16, 1)),
            (Settings{StockPointSetting(1, 16), StockPointSetting(4, 4), StockPointSetting(16, 1)}));
}

TEST(StockPointCandidatesTest, NoneOnOneCore) {
  EXPECT_TRUE(StockPointCandidates(FakeMachine(1, 1)).empty());
}

}  // namespace
}  // namespace graphi
