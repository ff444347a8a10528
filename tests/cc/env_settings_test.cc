// Unit tests of the environment reader: unset means the default, a valid
// value is read, anything else is an error naming the setting and its range.
#include "cc/platform/env_settings.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

namespace graphi {
namespace {

constexpr char kName[] = "GRAPHI_TEST_ENV_SETTING";

class EnvSettingsTest : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv(kName); }
  void Set(const char* value) { setenv(kName, value, /*overwrite=*/1); }
};

TEST_F(EnvSettingsTest, UnsetOrEmptyIsNotSetAndFallsBack) {
  EnvInt unset = ReadEnvInt(kName, 1, 10);
  EXPECT_TRUE(unset.ok());
  EXPECT_FALSE(unset.set);
  EXPECT_EQ(unset.value_or(7), 7);
  Set("");
  EXPECT_FALSE(ReadEnvInt(kName, 1, 10).set);
}

TEST_F(EnvSettingsTest, AValueInRangeIsRead) {
  Set("10");
  EnvInt read = ReadEnvInt(kName, 1, 10);
  EXPECT_TRUE(read.ok());
  EXPECT_TRUE(read.set);
  EXPECT_EQ(read.value_or(7), 10);
}

TEST_F(EnvSettingsTest, AValueOutOfRangeNamesTheSettingValueAndRange) {
  Set("11");
  EnvInt read = ReadEnvInt(kName, 1, 10);
  EXPECT_FALSE(read.ok());
  EXPECT_EQ(read.error, std::string(kName) +
                            "='11' is not a valid setting; allowed: a whole number from 1 to 10 "
                            "(unset it to use the default)");
}

TEST_F(EnvSettingsTest, TextAndTrailingCharactersAreErrors) {
  for (const char* bad : {"abc", "3x", "1.5", " "}) {
    Set(bad);
    EXPECT_FALSE(ReadEnvInt(kName, 0, kNoMax).ok()) << bad;
  }
}

TEST_F(EnvSettingsTest, WithoutUpperBoundTheErrorStatesTheMinimum) {
  Set("-1");
  EXPECT_NE(ReadEnvInt(kName, 0, kNoMax).error.find("allowed: a whole number >= 0"),
            std::string::npos);
}

TEST_F(EnvSettingsTest, TheWordReadsAsItsValueAndIsNamedInErrors) {
  Set("off");
  EnvInt off = ReadEnvIntOrWord(kName, 0, kNoMax, "off", -1);
  EXPECT_TRUE(off.ok());
  EXPECT_EQ(off.value_or(5), -1);
  Set("soon");
  EXPECT_NE(ReadEnvIntOrWord(kName, 0, kNoMax, "off", -1)
                .error.find("allowed: a whole number >= 0, or \"off\""),
            std::string::npos);
}

TEST_F(EnvSettingsTest, ASwitchIsZeroOrOneAndDefaultsWhenUnset) {
  EXPECT_EQ(ReadEnvSwitch(kName, /*default_on=*/true).value, 1);
  Set("0");
  EXPECT_EQ(ReadEnvSwitch(kName, /*default_on=*/true).value, 0);
  Set("yes");
  EXPECT_EQ(ReadEnvSwitch(kName, /*default_on=*/true).error,
            std::string(kName) + "='yes' is not a valid setting; allowed: 0 (off) or 1 (on, the default)");
}

}  // namespace
}  // namespace graphi
