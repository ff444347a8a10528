// Unit tests for cc/platform/topology.h, run against fake sysfs trees.

#include "cc/platform/topology.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cc/fake_sysfs.h"

namespace graphi {
namespace {

using test_util::CpuRange;
using test_util::FakeSysfs;
using Tiles = std::vector<std::vector<int>>;

TEST(ParseCpuListTest, ParsesRangesAndSingles) {
  std::vector<int> cpus;
  ASSERT_TRUE(ParseCpuList("0-3,8,10-11\n", &cpus));
  EXPECT_EQ(cpus, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
}

TEST(ParseCpuListTest, ParsesSingleCpu) {
  std::vector<int> cpus;
  ASSERT_TRUE(ParseCpuList("5", &cpus));
  EXPECT_EQ(cpus, (std::vector<int>{5}));
}

TEST(ParseCpuListTest, SortsAndDeduplicates) {
  std::vector<int> cpus;
  ASSERT_TRUE(ParseCpuList("4,0-2,1", &cpus));
  EXPECT_EQ(cpus, (std::vector<int>{0, 1, 2, 4}));
}

TEST(ParseCpuListTest, EmptyTextIsNoCpus) {
  std::vector<int> cpus = {7};
  ASSERT_TRUE(ParseCpuList(" \n", &cpus));
  EXPECT_TRUE(cpus.empty());
}

TEST(ParseCpuListTest, RejectsInvalidText) {
  std::vector<int> cpus;
  for (const char* bad : {"a", "0-", "-1", "3-1", "0,,1", "0,", ",0", "1 2",
                          "0-3-5", "0x1", "99999999999"}) {
    EXPECT_FALSE(ParseCpuList(bad, &cpus)) << "accepted \"" << bad << "\"";
  }
}

TEST(FormatCpuListTest, CompressesRanges) {
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(FormatCpuList({8, 3, 2, 1, 0, 1}), "0-3,8");
  EXPECT_EQ(FormatCpuList({}), "");
  EXPECT_EQ(FormatCpuList({5}), "5");
}

TEST(FormatCpuListTest, RoundTripsThroughParse) {
  for (const char* text : {"0", "0-3,8", "0-3,8,10-11", "1,3,5", "0-67"}) {
    std::vector<int> cpus;
    ASSERT_TRUE(ParseCpuList(text, &cpus)) << text;
    EXPECT_EQ(FormatCpuList(cpus), text);
    std::vector<int> reparsed;
    ASSERT_TRUE(ParseCpuList(FormatCpuList(cpus), &reparsed));
    EXPECT_EQ(reparsed, cpus);
  }
}

TEST(DiscoverTopologyTest, SixtyEightCoresWithTwoPerTileGives34Tiles) {
  FakeSysfs fake;
  fake.BuildMachine(68, 2);
  fake.SetCpuModel("Intel(R) Xeon Phi(TM) CPU 7250 @ 1.40GHz");
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources(), &topology, &error)) << error;
  ASSERT_EQ(topology.tiles.size(), 34u);
  for (int t = 0; t < 34; ++t) {
    EXPECT_EQ(topology.tiles[t], (std::vector<int>{2 * t, 2 * t + 1}));
  }
  EXPECT_EQ(topology.usable_cpus, CpuRange(0, 67));
  EXPECT_EQ(topology.quota_cores, 68);
  EXPECT_EQ(UsableCores(topology), 68);
  EXPECT_EQ(topology.cpu_model, "Intel(R) Xeon Phi(TM) CPU 7250 @ 1.40GHz");
}

TEST(DiscoverTopologyTest, AffinityMaskRestrictsUsableCpusAndTiles) {
  FakeSysfs fake;
  fake.BuildMachine(8, 2);
  Topology topology;
  std::string error;
  ASSERT_TRUE(
      DiscoverTopology(fake.Sources({2, 3, 4, 5, 9}), &topology, &error))
      << error;
  // CPU 9 is not online; tiles {0,1} and {6,7} have no usable CPU.
  EXPECT_EQ(topology.usable_cpus, (std::vector<int>{2, 3, 4, 5}));
  EXPECT_EQ(topology.tiles, (Tiles{{2, 3}, {4, 5}}));
  EXPECT_EQ(UsableCores(topology), 4);
}

TEST(DiscoverTopologyTest, OfflineCpusAreNotUsable) {
  FakeSysfs fake;
  fake.BuildMachine(4, 2);
  fake.SetOnline("0-1,3");
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources(), &topology, &error)) << error;
  EXPECT_EQ(topology.usable_cpus, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(topology.tiles, (Tiles{{0, 1}, {3}}));
}

TEST(DiscoverTopologyTest, PartiallyUsableTileKeepsOnlyUsableCpus) {
  FakeSysfs fake;
  fake.BuildMachine(8, 4);
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources({1, 2, 4, 5, 6, 7}), &topology,
                               &error))
      << error;
  EXPECT_EQ(topology.tiles, (Tiles{{1, 2}, {4, 5, 6, 7}}));
}

TEST(DiscoverTopologyTest, NoL2InfoGivesOneTilePerCpu) {
  FakeSysfs fake;
  fake.BuildMachine(4, 0);
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources(), &topology, &error)) << error;
  EXPECT_EQ(topology.tiles, (Tiles{{0}, {1}, {2}, {3}}));
}

TEST(DiscoverTopologyTest, CachesWithoutL2GiveOneTilePerCpu) {
  FakeSysfs fake;
  fake.SetOnline("0-1");
  for (int cpu = 0; cpu < 2; ++cpu) {
    fake.AddCache(cpu, 0, 1, "Data", std::to_string(cpu));
    fake.AddCache(cpu, 1, 3, "Unified", "0-1");
  }
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources({0, 1}), &topology, &error))
      << error;
  EXPECT_EQ(topology.tiles, (Tiles{{0}, {1}}));
}

TEST(DiscoverTopologyTest, UnevenTilesAreSortedByFirstCpu) {
  FakeSysfs fake;
  fake.SetOnline("0-5");
  // Sysfs lists siblings out of order, e.g. hyperthreads "0,3".
  const char* l2[] = {"0,3", "1-2", "1-2", "0,3", "4-5", "4-5"};
  for (int cpu = 0; cpu < 6; ++cpu) fake.AddCpuCaches(cpu, l2[cpu], "0-5");
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources(CpuRange(0, 5)), &topology,
                               &error))
      << error;
  EXPECT_EQ(topology.tiles, (Tiles{{0, 3}, {1, 2}, {4, 5}}));
}

TEST(DiscoverTopologyTest, CgroupV2QuotaOfTwoAndAHalfCoresGivesTwo) {
  FakeSysfs fake;
  fake.BuildMachine(8, 2);
  fake.SetCgroupV2("250000 100000");
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources(), &topology, &error)) << error;
  EXPECT_EQ(topology.quota_cores, 2);
  EXPECT_EQ(UsableCores(topology), 2);
  EXPECT_EQ(topology.usable_cpus.size(), 8u);
}

TEST(DiscoverTopologyTest, CgroupV2QuotaBelowOneCoreGivesOne) {
  FakeSysfs fake;
  fake.BuildMachine(4, 2);
  fake.SetCgroupV2("50000 100000");
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources(), &topology, &error)) << error;
  EXPECT_EQ(topology.quota_cores, 1);
}

TEST(DiscoverTopologyTest, CgroupV2MaxIsUnlimited) {
  FakeSysfs fake;
  fake.BuildMachine(4, 2);
  fake.SetCgroupV2("max 100000");
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources(), &topology, &error)) << error;
  EXPECT_EQ(topology.quota_cores, 4);
}

TEST(DiscoverTopologyTest, CgroupV1QuotaLimitsCores) {
  FakeSysfs fake;
  fake.BuildMachine(8, 2);
  fake.SetCgroupV1(300000, 100000);
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources(), &topology, &error)) << error;
  EXPECT_EQ(topology.quota_cores, 3);
  EXPECT_EQ(UsableCores(topology), 3);
}

TEST(DiscoverTopologyTest, CgroupV1MinusOneIsUnlimited) {
  FakeSysfs fake;
  fake.BuildMachine(8, 2);
  fake.SetCgroupV1(-1, 100000);
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources(), &topology, &error)) << error;
  EXPECT_EQ(topology.quota_cores, 8);
}

TEST(DiscoverTopologyTest, MissingCgroupFilesAreUnlimited) {
  FakeSysfs fake;
  fake.BuildMachine(6, 2);
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources(), &topology, &error)) << error;
  EXPECT_EQ(topology.quota_cores, 6);
  EXPECT_EQ(UsableCores(topology), 6);
}

TEST(DiscoverTopologyTest, QuotaAboveCpuCountIsCappedByUsableCores) {
  FakeSysfs fake;
  fake.BuildMachine(2, 1);
  fake.SetCgroupV2("800000 100000");
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources(), &topology, &error)) << error;
  EXPECT_EQ(topology.quota_cores, 8);
  EXPECT_EQ(UsableCores(topology), 2);
}

TEST(DiscoverTopologyTest, MissingCpuInfoGivesEmptyModel) {
  FakeSysfs fake;
  fake.BuildMachine(2, 1);
  Topology topology;
  std::string error;
  ASSERT_TRUE(DiscoverTopology(fake.Sources(), &topology, &error)) << error;
  EXPECT_EQ(topology.cpu_model, "");
}

TEST(DiscoverTopologyTest, MissingOnlineFileIsAnError) {
  FakeSysfs fake;
  Topology topology;
  std::string error;
  EXPECT_FALSE(DiscoverTopology(fake.Sources({0}), &topology, &error));
  EXPECT_NE(error.find("devices/system/cpu/online"), std::string::npos)
      << error;
}

TEST(DiscoverTopologyTest, MalformedOnlineListErrorNamesFileAndText) {
  FakeSysfs fake;
  fake.BuildMachine(4, 2);
  fake.SetOnline("0-3,x");
  Topology topology;
  std::string error;
  EXPECT_FALSE(DiscoverTopology(fake.Sources(), &topology, &error));
  EXPECT_NE(error.find(fake.CpuRoot() + "/online"), std::string::npos)
      << error;
  EXPECT_NE(error.find("\"0-3,x\""), std::string::npos) << error;
}

TEST(DiscoverTopologyTest, MalformedCpuMaxErrorNamesFileAndText) {
  FakeSysfs fake;
  fake.BuildMachine(4, 2);
  fake.SetCgroupV2("lots 100000");
  Topology topology;
  std::string error;
  EXPECT_FALSE(DiscoverTopology(fake.Sources(), &topology, &error));
  EXPECT_NE(error.find(fake.CgroupRoot() + "/cpu.max"), std::string::npos)
      << error;
  EXPECT_NE(error.find("lots 100000"), std::string::npos) << error;
}

TEST(DiscoverTopologyTest, MalformedSharedCpuListErrorNamesFileAndText) {
  FakeSysfs fake;
  fake.BuildMachine(2, 2);
  // CPU 0 is read first (and its L2 claims CPU 1), so corrupt CPU 0's entry.
  fake.AddCache(0, 2, 2, "Unified", "0-1;junk");
  Topology topology;
  std::string error;
  EXPECT_FALSE(DiscoverTopology(fake.Sources(), &topology, &error));
  EXPECT_NE(error.find("cpu0/cache/index2/shared_cpu_list"), std::string::npos)
      << error;
  EXPECT_NE(error.find("0-1;junk"), std::string::npos) << error;
}

TEST(DiscoverTopologyTest, AffinityOutsideOnlineCpusIsAnError) {
  FakeSysfs fake;
  fake.BuildMachine(2, 1);
  Topology topology;
  std::string error;
  EXPECT_FALSE(DiscoverTopology(fake.Sources({5, 6}), &topology, &error));
  EXPECT_NE(error.find("no usable CPUs"), std::string::npos) << error;
  EXPECT_NE(error.find("5-6"), std::string::npos) << error;
}

TEST(UsableCoresTest, IsMinOfCpusAndQuota) {
  Topology topology;
  topology.usable_cpus = CpuRange(0, 7);
  topology.quota_cores = 3;
  EXPECT_EQ(UsableCores(topology), 3);
  topology.quota_cores = 16;
  EXPECT_EQ(UsableCores(topology), 8);
  topology.quota_cores = 0;  // Hand-built topologies: no quota.
  EXPECT_EQ(UsableCores(topology), 8);
}

}  // namespace
}  // namespace graphi
