// LoadClassTracker: a graph's load class follows a lasting change in whether
// its steps overlap, not a burst.
#include "cc/tuning/load_class.h"

#include <gtest/gtest.h>

namespace graphi {
namespace {

TEST(LoadClassTest, AGraphStartsAlone) {
  LoadClassTracker tracker;
  EXPECT_EQ(tracker.current(), LoadClass::kAlone);
}

TEST(LoadClassTest, StepsThatKeepOverlappingPutAGraphUnderLoad) {
  LoadClassTracker tracker(4);
  EXPECT_FALSE(tracker.Note(true));
  EXPECT_FALSE(tracker.Note(true));
  EXPECT_FALSE(tracker.Note(true));
  EXPECT_TRUE(tracker.Note(true));  // the fourth in a row
  EXPECT_EQ(tracker.current(), LoadClass::kUnderLoad);
  EXPECT_FALSE(tracker.Note(true));
}

TEST(LoadClassTest, ABurstOfOverlapShorterThanTheSwitchDoesNotMoveIt) {
  LoadClassTracker tracker(4);
  for (int i = 0; i < 10; ++i) {
    tracker.Note(true);
    tracker.Note(true);
    tracker.Note(true);
    tracker.Note(false);  // breaks the run
  }
  EXPECT_EQ(tracker.current(), LoadClass::kAlone);
}

TEST(LoadClassTest, AGraphUnderLoadGoesBackAloneAfterAsManyStepsAlone) {
  LoadClassTracker tracker(3);
  for (int i = 0; i < 3; ++i) tracker.Note(true);
  ASSERT_EQ(tracker.current(), LoadClass::kUnderLoad);
  EXPECT_FALSE(tracker.Note(false));
  EXPECT_FALSE(tracker.Note(false));
  EXPECT_TRUE(tracker.Note(false));
  EXPECT_EQ(tracker.current(), LoadClass::kAlone);
}

TEST(LoadClassTest, NamesParseBack) {
  for (LoadClass c : {LoadClass::kAlone, LoadClass::kUnderLoad}) {
    LoadClass parsed = c == LoadClass::kAlone ? LoadClass::kUnderLoad : LoadClass::kAlone;
    ASSERT_TRUE(ParseLoadClass(LoadClassName(c), &parsed));
    EXPECT_EQ(parsed, c);
  }
  LoadClass unused;
  EXPECT_FALSE(ParseLoadClass("concurrent", &unused));
}

}  // namespace
}  // namespace graphi
