// Every row of the settings table (core/base/settings.def) round-trips
// through the parser: its default and the values at the edges of what it
// accepts parse and spell back as given, and values just beyond them fail
// with the documented error text.
#include "base/settings.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace chorus {
namespace {

Status parse_one(const std::string& variable, const std::string& value, Config* out) {
  return Config::from_env(out, [&](const char* asked) -> const char* {
    return variable == asked ? value.c_str() : nullptr;
  });
}

// Every member as its variable spells it: to see that parsing one variable
// leaves the others alone.
std::map<std::string, std::string> spelled(const Config& config) {
  std::map<std::string, std::string> out;
  for (const Setting& s : settings()) out[s.variable] = s.spell(config);
  return out;
}

// The texts after "expected " in the error for a bad value, as they were
// before the table existed (docs/CONVENTIONS.md, "Bad environment value";
// the launcher passes them on). A row added later is checked by the
// round trips below; these must not change under an existing one.
const std::map<std::string, std::string> kDocumentedExpected = {
    {"CHORUS_FUSION_THRESHOLD", "an integer number of bytes in [0, 1099511627776]"},
    {"CHORUS_CYCLE_TIME_MS", "a number of milliseconds in [0, 10000]"},
    {"CHORUS_CACHE_CAPACITY", "an integer number of entries in [0, 1000000]"},
    {"CHORUS_TIMELINE", "a file path"},
    {"CHORUS_STALL_CHECK_SECONDS", "a number of seconds in [0, 86400]"},
    {"CHORUS_STALL_SHUTDOWN_SECONDS", "a number of seconds in [0, 86400]"},
    {"CHORUS_HEARTBEAT_TIMEOUT_SECONDS", "0 (off) or a number of seconds in [0.5, 86400]"},
    {"CHORUS_HEARTBEAT_INTERFACE", "a comma-separated list of interface names and IPv4 networks (a.b.c.d/n)"},
    {"CHORUS_LOG_LEVEL", "one of trace, debug, info, warning, error"},
    {"CHORUS_SHM_ALLREDUCE", "one of auto, on, off"},
    {"CHORUS_SHM_ALLREDUCE_THRESHOLD", "an integer number of bytes in [0, 1099511627776]"},
    {"CHORUS_SHM_PROBE", "one of cached, fresh, off"},
    {"CHORUS_HIERARCHICAL_ALLREDUCE", "one of auto, on, off"},
    {"CHORUS_AUTOTUNE", "0 or 1"},
    {"CHORUS_AUTOTUNE_LOG", "a file path"},
    {"CHORUS_AUTOTUNE_WARMUP_STEPS", "an integer number of steps in [0, 100000]"},
    {"CHORUS_AUTOTUNE_STEPS_PER_SAMPLE", "an integer number of steps in [1, 100000]"},
    {"CHORUS_AUTOTUNE_MIN_SAMPLE_MS", "a number of milliseconds in [0, 60000]"},
    {"CHORUS_AUTOTUNE_SAMPLES", "an integer number of samples in [1, 1000]"},
    {"CHORUS_CUDA_DEVICE", "a CUDA device index in [0, 1023] (among the GPUs this process sees)"},
    {"CHORUS_GPU_BACKEND", "one of auto, nccl, staged"},
};

TEST(SettingsTable, EveryDocumentedVariableIsARowWithItsErrorText) {
  std::set<std::string> rows;
  for (const Setting& s : settings()) {
    EXPECT_TRUE(rows.insert(s.variable).second) << s.variable << " is declared twice";
    EXPECT_EQ(find_setting(s.variable), &s);
  }
  for (const auto& [variable, expected] : kDocumentedExpected) {
    const Setting* row = find_setting(variable);
    ASSERT_NE(row, nullptr) << variable;
    EXPECT_EQ(row->expected, expected) << variable;
  }
  EXPECT_EQ(find_setting("CHORUS_NO_SUCH_SETTING"), nullptr);
}

TEST(SettingsTable, TheDefaultParsesBackToItself) {
  const Config defaults;
  for (const Setting& s : settings()) {
    SCOPED_TRACE(s.variable);
    const std::string value = s.spell(defaults);
    Config parsed;
    const Status status = parse_one(s.variable, value, &parsed);
    if (s.default_text == "unset") {
      // A default outside what the variable accepts means "not set"
      // (CHORUS_CUDA_DEVICE: bind by local rank).
      EXPECT_EQ(status.message(), std::string(s.variable) + "='" + value + "' is invalid: expected " + s.expected);
      continue;
    }
    ASSERT_TRUE(status.ok()) << status.to_string();
    EXPECT_EQ(spelled(parsed), spelled(defaults));
    EXPECT_EQ(parsed.explicitly_set, std::vector<std::string>{s.variable});
  }
}

TEST(SettingsTable, EveryEdgeOfWhatARowAcceptsRoundTrips) {
  const Config defaults;
  for (const Setting& s : settings()) {
    SCOPED_TRACE(s.variable);
    ASSERT_FALSE(s.edges.empty());
    for (const std::string& edge : s.edges) {
      Config parsed;
      const Status status = parse_one(s.variable, edge, &parsed);
      ASSERT_TRUE(status.ok()) << edge << ": " << status.to_string();
      EXPECT_EQ(s.spell(parsed), edge);
      // Only its own member changed.
      std::map<std::string, std::string> others = spelled(parsed);
      std::map<std::string, std::string> expected = spelled(defaults);
      others.erase(s.variable);
      expected.erase(s.variable);
      EXPECT_EQ(others, expected) << edge;
      if (s.agreement == Agreement::kAlike) {
        EXPECT_EQ(s.spell_agreed(s.agreed(parsed)), edge) << "ranks would be told another value than they set";
      }
    }
  }
}

TEST(SettingsTable, ValuesJustBeyondARowFailWithItsErrorText) {
  for (const Setting& s : settings()) {
    SCOPED_TRACE(s.variable);
    for (const std::string& bad : s.beyond) {
      Config parsed;
      parsed.cache_capacity = 7;
      const Status status = parse_one(s.variable, bad, &parsed);
      EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << "'" << bad << "'";
      EXPECT_EQ(status.message(), std::string(s.variable) + "='" + bad + "' is invalid: expected " + s.expected);
      EXPECT_EQ(parsed.cache_capacity, 7) << "a failure leaves the output untouched";
    }
  }
  // The kinds' own samples are not the only bad values: spot checks by hand.
  Config config;
  EXPECT_FALSE(parse_one("CHORUS_FUSION_THRESHOLD", "1099511627777", &config).ok());
  EXPECT_FALSE(parse_one("CHORUS_HEARTBEAT_TIMEOUT_SECONDS", "0.49", &config).ok());
  EXPECT_FALSE(parse_one("CHORUS_AUTOTUNE_SAMPLES", "0", &config).ok());
  EXPECT_FALSE(parse_one("CHORUS_SHM_PROBE", "Cached", &config).ok());
  EXPECT_TRUE(parse_one("CHORUS_LOG_LEVEL", "WARNING", &config).ok());
}

TEST(SettingsTable, DefaultsAreTheDocumentedOnes) {
  const std::map<std::string, std::string> documented = {
      {"CHORUS_FUSION_THRESHOLD", "67108864"},    {"CHORUS_CYCLE_TIME_MS", "0"},
      {"CHORUS_CACHE_CAPACITY", "1024"},          {"CHORUS_TIMELINE", "empty"},
      {"CHORUS_STALL_CHECK_SECONDS", "60"},       {"CHORUS_STALL_SHUTDOWN_SECONDS", "0"},
      {"CHORUS_HEARTBEAT_TIMEOUT_SECONDS", "30"}, {"CHORUS_HEARTBEAT_INTERFACE", "empty"},
      {"CHORUS_LOG_LEVEL", "warning"},            {"CHORUS_SHM_ALLREDUCE", "auto"},
      {"CHORUS_SHM_ALLREDUCE_THRESHOLD", "65536"}, {"CHORUS_SHM_PROBE", "cached"},
      {"CHORUS_HIERARCHICAL_ALLREDUCE", "auto"},  {"CHORUS_AUTOTUNE", "0"},
      {"CHORUS_AUTOTUNE_LOG", "empty"},           {"CHORUS_AUTOTUNE_WARMUP_STEPS", "5"},
      {"CHORUS_AUTOTUNE_STEPS_PER_SAMPLE", "4"},  {"CHORUS_AUTOTUNE_MIN_SAMPLE_MS", "100"},
      {"CHORUS_AUTOTUNE_SAMPLES", "20"},          {"CHORUS_CUDA_DEVICE", "unset"},
      {"CHORUS_GPU_BACKEND", "auto"},
  };
  for (const auto& [variable, text] : documented) {
    const Setting* row = find_setting(variable);
    ASSERT_NE(row, nullptr) << variable;
    EXPECT_EQ(row->default_text, text) << variable;
  }
}

// The rules of settings_agreement.h, as they were before the table.
TEST(SettingsTable, AgreementRules) {
  const std::set<std::string> alike = {
      "CHORUS_AUTOTUNE",        "CHORUS_FUSION_THRESHOLD",        "CHORUS_CACHE_CAPACITY",
      "CHORUS_SHM_ALLREDUCE",   "CHORUS_SHM_ALLREDUCE_THRESHOLD", "CHORUS_SHM_PROBE",
      "CHORUS_HIERARCHICAL_ALLREDUCE", "CHORUS_GPU_BACKEND",    "CHORUS_HEARTBEAT_TIMEOUT_SECONDS"};
  const std::set<std::string> this_rank = {"CHORUS_LOG_LEVEL", "CHORUS_HEARTBEAT_INTERFACE", "CHORUS_CUDA_DEVICE"};
  for (const auto& [variable, expected] : kDocumentedExpected) {
    const Setting* row = find_setting(variable);
    ASSERT_NE(row, nullptr) << variable;
    const Agreement rule = alike.count(variable)       ? Agreement::kAlike
                           : this_rank.count(variable) ? Agreement::kThisRank
                                                       : Agreement::kRankZero;
    EXPECT_EQ(agreement_name(row->agreement), std::string(agreement_name(rule))) << variable;
  }
  for (const Setting& s : settings()) {
    if (s.agreement != Agreement::kAlike) continue;
    EXPECT_TRUE(s.agreed && s.spell_agreed) << s.variable << " is alike but has no value to compare";
  }
}

}  // namespace
}  // namespace chorus
