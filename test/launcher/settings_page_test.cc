// docs/CONFIGURATION.md as made from the settings table, and chorusrun's
// runtime flags made from the same rows: each flag passes every value at the
// edges of what its variable accepts, and refuses those just beyond with the
// variable's own text.
#include "about/settings_page.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "base/settings.h"
#include "options/launch_options.h"
#include "options/runtime_settings.h"
#include "options/usage_error.h"
#include "support/chorus_error_of.h"

namespace chorus::launcher {
namespace {

constexpr auto error_of = chorus_test::error_of<UsageError>;
using ::testing::HasSubstr;

std::vector<std::string> table_lines(const std::string& page) {
  std::vector<std::string> lines;
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `CHORUS_", 0) == 0) lines.push_back(line);
  }
  return lines;
}

TEST(SettingsPage, OneTableRowPerSettingInTheTablesOrder) {
  const std::vector<std::string> lines = table_lines(settings_page());
  ASSERT_EQ(lines.size(), settings().size());
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].rfind(std::string("| `") + settings()[i].variable + "` | ", 0), 0u) << lines[i];
    EXPECT_THAT(lines[i], HasSubstr(settings()[i].expected));
  }
}

TEST(SettingsPage, ARowSaysDefaultAcceptedRanksFlagAndMeaning) {
  const std::vector<std::string> lines = table_lines(settings_page());
  ASSERT_GE(lines.size(), 1u);
  EXPECT_THAT(lines[0], ::testing::StartsWith("| `CHORUS_FUSION_THRESHOLD` | `67108864` | an integer number of bytes "
                                              "in [0, 1099511627776] | alike | `--fusion-threshold-mb` (in MiB) | "
                                              "Size of the fusion buffer"));
  const std::string page = settings_page();
  EXPECT_THAT(page, HasSubstr("| `CHORUS_CUDA_DEVICE` | unset | a CUDA device index in [0, 1023] (among the GPUs this "
                              "process sees) | this rank's |  | "));
  EXPECT_THAT(page, HasSubstr("| `CHORUS_AUTOTUNE` | `0` | 0 or 1 | alike | `--autotune` (no value: sets 1) | "));
  EXPECT_THAT(page, HasSubstr(kRegenerateSettingsPage));
}

// `--option value`: the variable chorusrun passes on for it.
std::pair<std::string, std::string> via_flag(const RuntimeFlag& flag, const std::string& value) {
  std::vector<std::string> args = {"-np", "2", std::string("--") + flag.option, value};
  if (std::string(flag.option) == "autotune-log") args.push_back("--autotune");  // it needs --autotune
  args.push_back("prog");
  for (const auto& variable : parse_launch_options(args).runtime_variables) {
    if (variable.first == flag.variable) return variable;
  }
  return {};
}

TEST(RuntimeFlagsFromTheTable, EveryFlaggedRowIsAFlagThatPassesItsEdgesAndRefusesWhatLiesBeyond) {
  size_t flagged = 0;
  for (const Setting& s : settings()) flagged += s.flag.option != nullptr;
  ASSERT_EQ(runtime_flags().size(), flagged);
  for (const RuntimeFlag& flag : runtime_flags()) {
    SCOPED_TRACE(flag.option);
    const Setting& s = *flag.setting;
    EXPECT_THAT(launch_usage(), HasSubstr(std::string("--") + flag.option));
    if (flag.is_switch) {
      EXPECT_EQ(parse_launch_options({std::string("--") + flag.option, "prog"}).runtime_variables,
                (std::vector<std::pair<std::string, std::string>>{{s.variable, "1"}}));
      continue;
    }
    if (s.flag.scale != 1.0) continue;  // below
    for (const std::string& edge : s.edges) {
      EXPECT_EQ(via_flag(flag, edge), std::make_pair(std::string(s.variable), edge));
    }
    for (const std::string& bad : s.beyond) {
      EXPECT_EQ(error_of([&] { via_flag(flag, bad); }),
                std::string("--") + flag.option + "='" + bad + "' is invalid: expected " + s.expected);
    }
  }
}

TEST(RuntimeFlagsFromTheTable, AScaledFlagTakesItsUnitAndPassesTheVariablesUnitOn) {
  const RuntimeFlag* mib = nullptr;
  for (const RuntimeFlag& flag : runtime_flags()) {
    if (std::string(flag.option) == "fusion-threshold-mb") mib = &flag;
  }
  ASSERT_NE(mib, nullptr);
  EXPECT_EQ(via_flag(*mib, "0"), std::make_pair(std::string("CHORUS_FUSION_THRESHOLD"), std::string("0")));
  EXPECT_EQ(via_flag(*mib, "1048576"),
            std::make_pair(std::string("CHORUS_FUSION_THRESHOLD"), std::string("1099511627776")));
  EXPECT_EQ(via_flag(*mib, "0.5"), std::make_pair(std::string("CHORUS_FUSION_THRESHOLD"), std::string("524288")));
  EXPECT_EQ(error_of([&] { via_flag(*mib, "1048577"); }),
            "--fusion-threshold-mb='1048577' is invalid: expected a number of MiB in [0, 1048576]");
}

}  // namespace
}  // namespace chorus::launcher
