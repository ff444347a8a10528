// Unit tests of ResolveSetting: the whole precedence table, through the pure
// function alone (no environment, no Runtime).
#include "cc/executor/setting_resolver.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace graphi {
namespace {

EnvInt Value(int64_t value) {
  EnvInt read;
  read.set = true;
  read.value = value;
  return read;
}

EnvInt Invalid(const std::string& error) {
  EnvInt read;
  read.set = true;
  read.error = error;
  return read;
}

EnvInt Switch(int on) {
  EnvInt read = Value(on);
  return read;
}

// Inputs on a 4-core machine with one-core tiles: the default is 4x1, and
// the switches read as unset (on).
SettingInputs Machine() {
  SettingInputs in;
  in.default_setting = TeamsSetting(4, 1);
  in.usable_cores = 4;
  in.environment.tune.value = 1;
  in.environment.autotune.value = 1;
  return in;
}

ResolvedSetting Resolve(const SettingInputs& in) {
  ResolvedSetting out;
  std::string error;
  EXPECT_TRUE(ResolveSetting(in, &out, &error)) << error;
  return out;
}

std::string ErrorOf(const SettingInputs& in) {
  ResolvedSetting out;
  std::string error;
  EXPECT_FALSE(ResolveSetting(in, &out, &error));
  return error;
}

// Which of the five inputs are given, and what wins.
struct Row {
  bool configured, environment, exploring, adopted;
  SettingSource expected;
};

TEST(SettingResolverTest, TheLayoutFollowsThePrecedenceTable) {
  // Each input names a distinct layout, so the winner is visible.
  const Setting configured = TeamsSetting(1, 4);
  const Setting environment = TeamsSetting(2, 2);
  const Setting exploring = TeamsSetting(1, 2);
  const Setting adopted = TeamsSetting(2, 1);
  std::vector<Row> rows;
  for (int mask = 0; mask < 16; ++mask) {
    Row row{(mask & 8) != 0, (mask & 4) != 0, (mask & 2) != 0, (mask & 1) != 0,
            SettingSource::kDefault};
    if (row.adopted) row.expected = SettingSource::kTuned;
    if (row.exploring) row.expected = SettingSource::kAutotune;
    if (row.environment) row.expected = SettingSource::kEnvironment;
    if (row.configured) row.expected = SettingSource::kConfigure;
    rows.push_back(row);
  }
  ASSERT_EQ(rows.size(), 16u);
  for (const Row& row : rows) {
    SettingInputs in = Machine();
    if (row.configured) in.configured = configured;
    if (row.environment) {
      in.environment.executors = Value(2);
      in.environment.threads_per_executor = Value(2);
    }
    if (row.exploring) in.exploring = exploring;
    if (row.adopted) {
      in.adopted = adopted;
      in.adopted_source = SettingSource::kTuned;
    }
    const ResolvedSetting r = Resolve(in);
    const Setting expected_layout = row.expected == SettingSource::kConfigure     ? configured
                                    : row.expected == SettingSource::kEnvironment ? environment
                                    : row.expected == SettingSource::kAutotune    ? exploring
                                    : row.expected == SettingSource::kTuned       ? adopted
                                                                                   : TeamsSetting(4, 1);
    SCOPED_TRACE(testing::Message() << "configured " << row.configured << " environment "
                                    << row.environment << " exploring " << row.exploring
                                    << " adopted " << row.adopted);
    EXPECT_EQ(r.source, row.expected);
    EXPECT_TRUE(r.setting.SameLayout(expected_layout)) << r.setting;
    EXPECT_TRUE(r.teams.SameLayout(expected_layout)) << r.teams;
  }
}

TEST(SettingResolverTest, NothingGivenIsTheDefaultWithCriticalPathFirst) {
  const ResolvedSetting r = Resolve(Machine());
  EXPECT_EQ(r.source, SettingSource::kDefault);
  EXPECT_EQ(r.setting, (Setting{4, 1, false, ReadyPolicy::kCriticalPathFirst}));
}

TEST(SettingResolverTest, AnAdoptedSettingReportsItsOwnSource) {
  for (SettingSource source :
       {SettingSource::kCache, SettingSource::kTuned, SettingSource::kAutotuned}) {
    SettingInputs in = Machine();
    in.adopted = TeamsSetting(1, 1);
    in.adopted_source = source;
    EXPECT_EQ(Resolve(in).source, source);
  }
}

TEST(SettingResolverTest, StockRunsOnTensorFlowsPoolsAndKeepsTheDefaultTeams) {
  for (int where = 0; where < 3; ++where) {
    SettingInputs in = Machine();
    if (where == 0) in.environment.executors = Value(kEnvStock);
    if (where == 1) in.exploring = kStockSetting;
    if (where == 2) in.adopted = kStockSetting;
    const ResolvedSetting r = Resolve(in);
    EXPECT_TRUE(r.setting.stock) << where;
    EXPECT_TRUE(r.teams.SameLayout(TeamsSetting(4, 1))) << r.teams;
  }
}

TEST(SettingResolverTest, AStockPointComesFromTheEnvironmentOrAnyLevelAndKeepsTheDefaultTeams) {
  for (int where = 0; where < 3; ++where) {
    SettingInputs in = Machine();
    if (where == 0) {
      in.environment.executors = Value(kEnvStock);
      in.environment.stock_point = "stock:2x1";
    }
    if (where == 1) in.exploring = StockPointSetting(2, 1);
    if (where == 2) in.adopted = StockPointSetting(2, 1);
    const ResolvedSetting r = Resolve(in);
    EXPECT_TRUE(r.setting.SameLayout(StockPointSetting(2, 1))) << where << " " << r.setting;
    EXPECT_TRUE(r.teams.SameLayout(TeamsSetting(4, 1))) << r.teams;
  }
}

TEST(SettingResolverTest, AnInvalidStockPointNamesTheVariableAndTheAllowedValues) {
  SettingInputs in = Machine();
  in.environment.executors = Value(kEnvStock);
  in.environment.stock_point = "stock:0x1";
  EXPECT_EQ(ErrorOf(in).rfind("GRAPHI_EXECUTORS='stock:0x1' is not a valid setting; allowed: ", 0),
            0u);
}

TEST(SettingResolverTest, ConfigureAboveAStockEnvironmentRunsTeams) {
  SettingInputs in = Machine();
  in.environment.executors = Value(kEnvStock);
  in.configured = TeamsSetting(1, 4);
  const ResolvedSetting r = Resolve(in);
  EXPECT_FALSE(r.setting.stock);
  EXPECT_EQ(r.source, SettingSource::kConfigure);
}

TEST(SettingResolverTest, AHalfGivenLayoutTakesTheRestFromTheUsableCores) {
  SettingInputs in = Machine();
  in.configured.executors = 2;
  EXPECT_TRUE(Resolve(in).setting.SameLayout(TeamsSetting(2, 2)));
  in = Machine();
  in.environment.threads_per_executor = Value(4);
  EXPECT_TRUE(Resolve(in).setting.SameLayout(TeamsSetting(1, 4)));
}

TEST(SettingResolverTest, APolicyAloneLeavesTheLayoutBelowIt) {
  SettingInputs in = Machine();
  in.configured.policy = ReadyPolicy::kFifo;
  in.adopted = TeamsSetting(2, 1);
  in.adopted_source = SettingSource::kCache;
  const ResolvedSetting r = Resolve(in);
  EXPECT_EQ(r.source, SettingSource::kCache);
  EXPECT_EQ(r.setting.policy, ReadyPolicy::kFifo);
}

TEST(SettingResolverTest, ThePolicyIsConfigureThenEnvironmentThenAdoptedThenAutomatic) {
  SettingInputs in = Machine();
  in.adopted = Setting{2, 1, false, ReadyPolicy::kFifo};
  EXPECT_EQ(Resolve(in).setting.policy, ReadyPolicy::kFifo);
  in.environment.policy = "critical_path_first";
  EXPECT_EQ(Resolve(in).setting.policy, ReadyPolicy::kCriticalPathFirst);
  in.configured.policy = ReadyPolicy::kFifo;
  EXPECT_EQ(Resolve(in).setting.policy, ReadyPolicy::kFifo);
}

TEST(SettingResolverTest, TuneOffMakesTheAutomaticPolicyFifo) {
  SettingInputs in = Machine();
  in.environment.tune = Switch(0);
  EXPECT_EQ(Resolve(in).setting.policy, ReadyPolicy::kFifo);
}

TEST(SettingResolverTest, AnInvalidVariableIsAnErrorWhateverElseIsInForce) {
  SettingInputs in = Machine();
  in.configured = TeamsSetting(1, 4);
  in.environment.executors = Invalid("GRAPHI_EXECUTORS='x' is not a valid setting");
  EXPECT_EQ(ErrorOf(in), "GRAPHI_EXECUTORS='x' is not a valid setting");
  in = Machine();
  in.environment.autotune = Invalid("GRAPHI_AUTOTUNE='2' is not a valid setting");
  EXPECT_EQ(ErrorOf(in), "GRAPHI_AUTOTUNE='2' is not a valid setting");
}

TEST(SettingResolverTest, AnInvalidPolicyNamesTheVariableAndTheAllowedValues) {
  SettingInputs in = Machine();
  in.environment.policy = "lifo";
  EXPECT_EQ(ErrorOf(in),
            "GRAPHI_POLICY='lifo' is not a valid setting; allowed: fifo, critical_path_first");
}

TEST(SettingResolverTest, StockWithThreadsPerExecutorIsRefused) {
  SettingInputs in = Machine();
  in.environment.executors = Value(kEnvStock);
  in.environment.threads_per_executor = Value(2);
  EXPECT_NE(ErrorOf(in).find("cannot go with GRAPHI_EXECUTORS=stock"), std::string::npos);
}

TEST(LayoutIsExplicitTest, ConfigureOrALayoutVariableValidOrNotIsExplicit) {
  SettingInputs in = Machine();
  EXPECT_FALSE(LayoutIsExplicit(in));
  in.configured.policy = ReadyPolicy::kFifo;  // a policy alone pins no layout
  EXPECT_FALSE(LayoutIsExplicit(in));
  in.exploring = TeamsSetting(1, 1);
  in.adopted = TeamsSetting(2, 1);
  EXPECT_FALSE(LayoutIsExplicit(in));
  SettingInputs configured = Machine();
  configured.configured.threads_per_executor = 2;
  EXPECT_TRUE(LayoutIsExplicit(configured));
  SettingInputs environment = Machine();
  environment.environment.executors = Value(kEnvStock);
  EXPECT_TRUE(LayoutIsExplicit(environment));
  SettingInputs invalid = Machine();
  invalid.environment.threads_per_executor = Invalid("bad");
  EXPECT_TRUE(LayoutIsExplicit(invalid));
}

TEST(AutotuneFromEnvironmentTest, OnUnlessAutotuneOrTuneIsZero) {
  SettingInputs in = Machine();
  bool on = false;
  std::string error;
  ASSERT_TRUE(AutotuneFromEnvironment(in.environment, &on, &error));
  EXPECT_TRUE(on);
  in.environment.tune = Switch(0);
  ASSERT_TRUE(AutotuneFromEnvironment(in.environment, &on, &error));
  EXPECT_FALSE(on);
  in = Machine();
  in.environment.autotune = Switch(0);
  ASSERT_TRUE(AutotuneFromEnvironment(in.environment, &on, &error));
  EXPECT_FALSE(on);
  in.environment.autotune = Invalid("GRAPHI_AUTOTUNE='yes'");
  EXPECT_FALSE(AutotuneFromEnvironment(in.environment, &on, &error));
  EXPECT_EQ(error, "GRAPHI_AUTOTUNE='yes'");
}

}  // namespace
}  // namespace graphi
