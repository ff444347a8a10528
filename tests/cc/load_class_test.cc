// Load classes: a step's steps in flight give its level, and a graph's class
// follows a lasting change of level, not a burst.
#include "cc/tuning/load_class.h"

#include <gtest/gtest.h>

namespace graphi {
namespace {

TEST(LoadClassTest, OneStepInFlightIsAlone) {
  EXPECT_EQ(LoadClassOf(1), LoadClass::kAlone);
  EXPECT_EQ(LoadClassOf(0), LoadClass::kAlone);
}

TEST(LoadClassTest, StepsInFlightFallInTheLevelOfTheNearestPowerOfTwo) {
  EXPECT_EQ(LoadClassOf(2), LoadClass::kUnderLoad2);
  for (int n : {3, 4, 5}) EXPECT_EQ(LoadClassOf(n), LoadClass::kUnderLoad4) << n;
  for (int n : {6, 8, 11}) EXPECT_EQ(LoadClassOf(n), LoadClass::kUnderLoad8) << n;
  for (int n : {12, 16, 22}) EXPECT_EQ(LoadClassOf(n), LoadClass::kUnderLoad16) << n;
  for (int n : {23, 32, 45}) EXPECT_EQ(LoadClassOf(n), LoadClass::kUnderLoad32) << n;
  for (int n : {46, 64, 1000}) EXPECT_EQ(LoadClassOf(n), LoadClass::kUnderLoad64) << n;
}

TEST(LoadClassTest, EachClassIsNamedByTheStepsInFlightItHolds) {
  for (int c = 0; c < kLoadClassCount; ++c) {
    const LoadClass load_class = static_cast<LoadClass>(c);
    EXPECT_EQ(LoadClassOf(NominalInFlight(load_class)), load_class) << LoadClassName(load_class);
  }
  EXPECT_STREQ(LoadClassName(LoadClass::kUnderLoad8), "under_load_8");
}

TEST(LoadClassTest, AGraphStartsAlone) {
  LoadClassTracker tracker;
  EXPECT_EQ(tracker.current(), LoadClass::kAlone);
}

TEST(LoadClassTest, StepsThatKeepOverlappingPutAGraphUnderLoad) {
  LoadClassTracker tracker(4);
  EXPECT_FALSE(tracker.Note(4));
  EXPECT_FALSE(tracker.Note(4));
  EXPECT_FALSE(tracker.Note(4));
  EXPECT_TRUE(tracker.Note(4));  // the fourth in a row
  EXPECT_EQ(tracker.current(), LoadClass::kUnderLoad4);
  EXPECT_FALSE(tracker.Note(4));
}

TEST(LoadClassTest, ABurstOfOverlapShorterThanTheSwitchDoesNotMoveIt) {
  LoadClassTracker tracker(4);
  for (int i = 0; i < 10; ++i) {
    tracker.Note(2);
    tracker.Note(2);
    tracker.Note(2);
    tracker.Note(1);  // breaks the run
  }
  EXPECT_EQ(tracker.current(), LoadClass::kAlone);
}

TEST(LoadClassTest, AGraphUnderLoadGoesBackAloneAfterAsManyStepsAlone) {
  LoadClassTracker tracker(3);
  for (int i = 0; i < 3; ++i) tracker.Note(2);
  ASSERT_EQ(tracker.current(), LoadClass::kUnderLoad2);
  EXPECT_FALSE(tracker.Note(1));
  EXPECT_FALSE(tracker.Note(1));
  EXPECT_TRUE(tracker.Note(1));
  EXPECT_EQ(tracker.current(), LoadClass::kAlone);
}

TEST(LoadClassTest, MoreClientsMoveAGraphToAHigherLevel) {
  LoadClassTracker tracker(4);
  for (int i = 0; i < 4; ++i) tracker.Note(4);
  ASSERT_EQ(tracker.current(), LoadClass::kUnderLoad4);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(tracker.Note(8));
  EXPECT_TRUE(tracker.Note(8));
  EXPECT_EQ(tracker.current(), LoadClass::kUnderLoad8);
}

TEST(LoadClassTest, AStepCaughtBetweenRequestsKeepsTheLevel) {
  LoadClassTracker tracker(4);
  for (int i = 0; i < 4; ++i) tracker.Note(8);
  ASSERT_EQ(tracker.current(), LoadClass::kUnderLoad8);
  // 8 clients, one of them now and then between requests: 7 or 6 in flight,
  // and a rare 5.
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(tracker.Note(i % 7 == 3 ? 5 : 7 - i % 2));
  EXPECT_EQ(tracker.current(), LoadClass::kUnderLoad8);
}

TEST(LoadClassTest, ARunOfMixedLevelsSwitchesToItsMedian) {
  LoadClassTracker tracker(5);
  // Clients ramping up from alone: 2, 2, 4, 4, 4 in flight.
  for (int n : {2, 2, 4, 4}) EXPECT_FALSE(tracker.Note(n));
  EXPECT_TRUE(tracker.Note(4));
  EXPECT_EQ(tracker.current(), LoadClass::kUnderLoad4);
}

TEST(LoadClassTest, NamesParseBack) {
  for (int c = 0; c < kLoadClassCount; ++c) {
    const LoadClass load_class = static_cast<LoadClass>(c);
    LoadClass parsed = load_class == LoadClass::kAlone ? LoadClass::kUnderLoad2 : LoadClass::kAlone;
    ASSERT_TRUE(ParseLoadClass(LoadClassName(load_class), &parsed));
    EXPECT_EQ(parsed, load_class);
  }
  LoadClass unused;
  EXPECT_FALSE(ParseLoadClass("concurrent", &unused));
  EXPECT_FALSE(ParseLoadClass("under_load", &unused));  // before load levels
}

}  // namespace
}  // namespace graphi
