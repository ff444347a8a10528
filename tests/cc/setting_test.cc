// Unit tests of Setting: labels, the parser, comparison, and source names.
#include "cc/teams/setting.h"

#include <gtest/gtest.h>

#include <string>

namespace graphi {
namespace {

TEST(SettingTest, LabelsNameStockAStockPointOrExT) {
  EXPECT_EQ(kStockSetting.Label(), "stock");
  EXPECT_EQ(StockPointSetting(2, 1).Label(), "stock:2x1");
  EXPECT_EQ(TeamsSetting(2, 1).Label(), "2x1");
  EXPECT_EQ((Setting{2, 0}).Label(), "2x*");
}

TEST(SettingTest, ParseReadsWhatLabelWrites) {
  for (const Setting& s : {kStockSetting, StockPointSetting(1, 2), TeamsSetting(2, 1),
                           TeamsSetting(16, 4)}) {
    Setting parsed;
    std::string error;
    ASSERT_TRUE(ParseSetting(s.Label(), "setting", &parsed, &error)) << error;
    EXPECT_EQ(parsed, s);
  }
}

TEST(SettingTest, ParseRefusesAnythingElseNamingTheAllowedValues) {
  for (const char* text : {"", "2", "x1", "2x", "0x1", "2x-1", "2 x1", "stok", "2x1x1", "stock:",
                           "stock:2", "stock:0x1", "stock:stock", "stock2x1"}) {
    Setting parsed;
    std::string error;
    EXPECT_FALSE(ParseSetting(text, "GRAPHI_SETTING", &parsed, &error)) << text;
    EXPECT_EQ(error, std::string("GRAPHI_SETTING='") + text +
                         "' is not a valid setting; allowed: \"stock\", \"stock:IxA\" "
                         "(TensorFlow's executor on I inter-op and A intra-op threads) or ExT "
                         "(E teams of T threads), with whole numbers >= 1 (e.g. 2x1)");
  }
}

TEST(SettingTest, AStockPointIsStockWithItsPoolSizes) {
  const Setting point = StockPointSetting(2, 1);
  EXPECT_TRUE(point.stock && point.stock_point() && point.complete());
  EXPECT_EQ(point.inter_op_threads(), 2);
  EXPECT_EQ(point.intra_op_threads(), 1);
  EXPECT_FALSE(kStockSetting.stock_point());
  EXPECT_FALSE(TeamsSetting(2, 1).stock_point());
  EXPECT_EQ(TeamsSetting(2, 1).inter_op_threads(), 0);
  EXPECT_FALSE(point.SameLayout(TeamsSetting(2, 1)));
  EXPECT_FALSE(point.SameLayout(kStockSetting));
}

TEST(SettingTest, SameLayoutIgnoresThePolicyAndEqualityDoesNot) {
  const Setting fifo{2, 1, false, ReadyPolicy::kFifo};
  EXPECT_TRUE(fifo.SameLayout(TeamsSetting(2, 1)));
  EXPECT_NE(fifo, TeamsSetting(2, 1));
  EXPECT_FALSE(kStockSetting.SameLayout(Setting{}));
}

TEST(SettingTest, StockSortsFirstThenByExecutorsAndThreads) {
  EXPECT_LT(kStockSetting, StockPointSetting(1, 1));
  EXPECT_LT(StockPointSetting(2, 1), TeamsSetting(1, 1));
  EXPECT_LT(kStockSetting, TeamsSetting(1, 1));
  EXPECT_LT(TeamsSetting(1, 2), TeamsSetting(2, 1));
  EXPECT_LT(TeamsSetting(2, 1), TeamsSetting(2, 2));
}

TEST(SettingTest, NamesLayoutAndCompleteSayWhatIsGiven) {
  EXPECT_FALSE(Setting{}.names_layout());
  EXPECT_FALSE((Setting{0, 0, false, ReadyPolicy::kFifo}).names_layout());
  EXPECT_TRUE((Setting{0, 2}).names_layout());
  EXPECT_FALSE((Setting{0, 2}).complete());
  EXPECT_TRUE(kStockSetting.complete());
  EXPECT_TRUE(TeamsSetting(1, 1).complete());
}

TEST(SettingSourceTest, AdoptedSourcesParseAndOthersAreRefused) {
  SettingSource source = SettingSource::kDefault;
  std::string error;
  for (SettingSource adopted :
       {SettingSource::kCache, SettingSource::kTuned, SettingSource::kAutotuned}) {
    EXPECT_TRUE(IsAdoptedSource(adopted));
    ASSERT_TRUE(ParseAdoptedSource(SettingSourceName(adopted), &source, &error));
    EXPECT_EQ(source, adopted);
  }
  for (SettingSource other : {SettingSource::kConfigure, SettingSource::kEnvironment,
                              SettingSource::kAutotune, SettingSource::kDefault}) {
    EXPECT_FALSE(IsAdoptedSource(other));
    EXPECT_FALSE(ParseAdoptedSource(SettingSourceName(other), &source, &error));
  }
  EXPECT_EQ(error, "source='default' is not valid; allowed: cache, tuned, autotuned");
}

}  // namespace
}  // namespace graphi
