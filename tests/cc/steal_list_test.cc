// Unit tests of the StealList alone (no threads of its own, no TensorFlow):
// where a team's parallel-for blocks go (an idle thief or the owner's
// helpers), that each runs exactly once, and that none is stranded.
#include "cc/teams/steal_list.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

namespace graphi {
namespace {

// An owner's helpers, held back: blocks given to them wait in `queued`
// until the test runs them.
struct FakeHelpers {
  std::vector<StealList::Closure> queued;
  StealList::Sink sink() {
    return [this](StealList::Closure c) { queued.push_back(std::move(c)); };
  }
  int RunAll() {
    std::vector<StealList::Closure> now;
    now.swap(queued);
    for (auto& c : now) c();
    return static_cast<int>(now.size());
  }
};

TEST(StealListTest, WithoutThievesABlockGoesToItsOwnersHelpers) {
  StealList list(2);
  FakeHelpers helpers;
  list.SetSink(0, helpers.sink());
  int runs = 0;
  EXPECT_FALSE(list.Push(0, [&] { ++runs; }));
  ASSERT_EQ(helpers.queued.size(), 1u);
  helpers.RunAll();
  EXPECT_EQ(runs, 1);
}

TEST(StealListTest, AFreeThiefIsReservedTheBlockAndTheOwnersHelpersAreNotWoken) {
  StealList list(2);
  FakeHelpers helpers;
  list.SetSink(0, helpers.sink());
  list.BeginStealing(1);
  int ran_on = -2;
  EXPECT_TRUE(list.Push(0, [&] { ran_on = StealList::CurrentThief(); }));
  EXPECT_TRUE(helpers.queued.empty());
  EXPECT_TRUE(list.HasWorkFor(1));
  EXPECT_TRUE(list.RunOne(1));
  EXPECT_EQ(ran_on, 1);
  EXPECT_EQ(StealList::CurrentThief(), -1);
  EXPECT_FALSE(list.HasWorkFor(1));
  EXPECT_EQ(list.blocks_stolen(1), 1u);
  list.EndStealing(1);
  EXPECT_TRUE(helpers.queued.empty());
}

TEST(StealListTest, OneBlockPerFreeThiefIsReservedTheRestGoToTheOwnerAndStayStealable) {
  StealList list(2);
  FakeHelpers helpers;
  list.SetSink(0, helpers.sink());
  list.BeginStealing(1);
  std::vector<int> runs(3, 0);
  for (int i = 0; i < 3; ++i) list.Push(0, [&runs, i] { ++runs[i]; });
  EXPECT_EQ(helpers.queued.size(), 2u);
  // The thief takes the reserved block, then one the helpers have not
  // started yet.
  EXPECT_TRUE(list.RunOne(1));
  EXPECT_TRUE(list.RunOne(1));
  helpers.RunAll();
  EXPECT_FALSE(list.RunOne(1));
  EXPECT_EQ(runs, (std::vector<int>{1, 1, 1}));
  list.EndStealing(1);
}

TEST(StealListTest, AThiefThatLeavesHandsItsReservedBlocksToTheirOwners) {
  StealList list(3);
  FakeHelpers helpers;
  list.SetSink(0, helpers.sink());
  list.BeginStealing(1);
  list.BeginStealing(2);
  int runs = 0;
  list.Push(0, [&] { ++runs; });
  list.Push(0, [&] { ++runs; });
  EXPECT_TRUE(helpers.queued.empty());  // two free thieves, two reservations
  list.EndStealing(2);
  EXPECT_EQ(helpers.queued.size(), 1u);
  list.EndStealing(1);
  EXPECT_EQ(helpers.queued.size(), 2u);
  helpers.RunAll();
  EXPECT_EQ(runs, 2);
}

TEST(StealListTest, AThiefRunningABlockIsNotReservedTheBlocksItPushes) {
  // Nested parallelism: a stolen block that splits again may wait for its
  // halves, so they must not wait for the thief that runs it.
  StealList list(2);
  FakeHelpers helpers;
  list.SetSink(0, helpers.sink());
  list.BeginStealing(1);
  int inner = 0;
  list.Push(0, [&] { list.Push(0, [&] { ++inner; }); });
  EXPECT_TRUE(list.RunOne(1));
  ASSERT_EQ(helpers.queued.size(), 1u);
  helpers.RunAll();
  EXPECT_EQ(inner, 1);
  list.EndStealing(1);
}

TEST(StealListTest, AThiefNeverTakesItsOwnTeamsBlocks) {
  StealList list(2);
  FakeHelpers helpers;
  list.SetSink(1, helpers.sink());
  list.BeginStealing(1);
  list.Push(1, [] {});
  EXPECT_FALSE(list.HasWorkFor(1));
  EXPECT_FALSE(list.RunOne(1));
  EXPECT_EQ(helpers.queued.size(), 1u);
  helpers.RunAll();
  list.EndStealing(1);
}

TEST(StealListTest, RunningForCountsTheOwnersBlocksOnThieves) {
  StealList list(2);
  list.SetSink(0, [](StealList::Closure c) { c(); });
  list.BeginStealing(1);
  int seen = -1;
  list.Push(0, [&] { seen = list.RunningFor(0); });
  EXPECT_TRUE(list.RunOne(1));
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(list.RunningFor(0), 0);
  EXPECT_FALSE(list.FreeThiefFor(1));  // team 0 is not stealing
  EXPECT_TRUE(list.FreeThiefFor(0));
  list.EndStealing(1);
  EXPECT_FALSE(list.FreeThiefFor(0));
}

TEST(StealListTest, ABlockRunsOnceWhenThiefAndHelperRace) {
  StealList list(2);
  FakeHelpers helpers;
  list.SetSink(0, helpers.sink());
  std::atomic<int> runs{0};
  list.BeginStealing(1);
  list.Push(0, [&] { runs++; });  // reserved
  list.Push(0, [&] { runs++; });  // owner copy + listed
  std::thread thief([&] {
    while (list.RunOne(1)) {
    }
  });
  helpers.RunAll();
  thief.join();
  list.EndStealing(1);
  helpers.RunAll();
  EXPECT_EQ(runs.load(), 2);
}

}  // namespace
}  // namespace graphi
