#include "runtime/timeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "json_validator.h"

namespace chorus {
namespace {

using chorus_test::JsonValidator;

TEST(JsonValidatorTest, AcceptsValidAndRejectsInvalid) {
  for (const char* good : {"[]", "{}", "[1, -2.5e3, \"a\\n\\u00e9\", true, null, {\"k\": []}]", " 0 "}) {
    EXPECT_TRUE(JsonValidator(good).validate()) << good;
  }
  for (const char* bad : {"", "[", "[1,]", "{\"a\" 1}", "\"a\nb\"", "\"\\x\"", "01", "[1] 2",
                          "{'a': 1}", "[1 2]", "\"abc"}) {
    EXPECT_FALSE(JsonValidator(bad).validate()) << bad;
  }
}

std::string temp_path(const std::string& stem) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/chorus_" + stem + "_" +
         std::to_string(::getpid()) + ".json";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

TEST(TimelineTest, JsonEscape) {
  EXPECT_EQ(json_escape("plain"), "plain");
  EXPECT_EQ(json_escape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(json_escape("l1\nl2\tx\r"), "l1\\nl2\\tx\\r");
  EXPECT_EQ(json_escape(std::string("\x01\x1f", 2)), "\\u0001\\u001f");
  EXPECT_EQ(json_escape("caf\xc3\xa9"), "caf\xc3\xa9");
}

TEST(TimelineTest, DisabledUntilOpened) {
  Timeline timeline;
  EXPECT_FALSE(timeline.enabled());
  // Calls on a closed timeline are no-ops rather than crashes.
  timeline.span("t", "ALLREDUCE", Timeline::Clock::now(), Timeline::Clock::now());
  timeline.instant("t", "ERROR");
  timeline.close();
}

TEST(TimelineTest, WritesWellFormedTraceWithLanes) {
  const std::string path = temp_path("timeline");
  {
    Timeline timeline;
    ASSERT_TRUE(timeline.open(path).ok());
    EXPECT_TRUE(timeline.enabled());
    const auto t0 = Timeline::Clock::now();
    const auto t1 = t0 + std::chrono::microseconds(250);
    timeline.span("layer1.weight", "NEGOTIATE", t0, t1);
    timeline.span("layer1.weight", "ALLREDUCE", t1, t1 + std::chrono::microseconds(100),
                  "\"bytes\": 4096");
    timeline.span("layer2 \"odd\\name\"\n", "BROADCAST", t0, t1);
    timeline.span("layer3.bias", "MEMCPY_IN_FUSION_BUFFER", t1, t0);  // reversed: dur clamps to 0
    timeline.instant("layer2 \"odd\\name\"\n", "ERROR");
    timeline.close();
    EXPECT_FALSE(timeline.enabled());
  }
  const std::string text = read_file(path);
  std::remove(path.c_str());

  JsonValidator validator(text);
  ASSERT_TRUE(validator.validate()) << validator.error() << "\n" << text;
  EXPECT_EQ(text.substr(0, 2), "[\n");
  EXPECT_EQ(text.substr(text.size() - 3), "\n]\n");

  // One metadata event per lane, named after the tensor, lanes in order of first use.
  EXPECT_EQ(count(text, "\"ph\": \"M\""), 3u);
  EXPECT_NE(text.find("\"tid\": 0, \"args\": {\"name\": \"layer1.weight\"}"), std::string::npos);
  EXPECT_NE(text.find("\"tid\": 1, \"args\": {\"name\": \"layer2 \\\"odd\\\\name\\\"\\n\"}"),
            std::string::npos);
  EXPECT_NE(text.find("\"tid\": 2, \"args\": {\"name\": \"layer3.bias\"}"), std::string::npos);

  EXPECT_EQ(count(text, "\"ph\": \"X\""), 4u);
  EXPECT_NE(text.find("{\"name\": \"NEGOTIATE\", \"ph\": \"X\", \"ts\": "), std::string::npos);
  EXPECT_NE(text.find("\"dur\": 250.000, \"pid\": 0, \"tid\": 0}"), std::string::npos);
  EXPECT_NE(text.find("\"dur\": 100.000, \"pid\": 0, \"tid\": 0, \"args\": {\"bytes\": 4096}}"),
            std::string::npos);
  EXPECT_NE(text.find("\"name\": \"BROADCAST\""), std::string::npos);
  EXPECT_NE(text.find("\"dur\": 0.000, \"pid\": 0, \"tid\": 2}"), std::string::npos);
  EXPECT_EQ(count(text, "\"ph\": \"i\""), 1u);
  EXPECT_NE(text.find("{\"name\": \"ERROR\", \"ph\": \"i\""), std::string::npos);
  EXPECT_EQ(count(text, "\"pid\": 0"), 8u);
}

TEST(TimelineTest, EmptyTraceAndDestructorClose) {
  const std::string path = temp_path("empty");
  { Timeline timeline; ASSERT_TRUE(timeline.open(path).ok()); }  // no close(): destructor finishes it
  const std::string text = read_file(path);
  std::remove(path.c_str());
  EXPECT_TRUE(JsonValidator(text).validate()) << text;
  EXPECT_EQ(text, "[\n\n]\n");
}

TEST(TimelineTest, ReopenStartsAFreshFile) {
  const std::string first = temp_path("first");
  const std::string second = temp_path("second");
  Timeline timeline;
  ASSERT_TRUE(timeline.open(first).ok());
  timeline.instant("a", "MARK");
  ASSERT_TRUE(timeline.open(second).ok());  // closes the first file properly
  timeline.instant("b", "MARK");
  timeline.close();
  const std::string a = read_file(first), b = read_file(second);
  std::remove(first.c_str());
  std::remove(second.c_str());
  EXPECT_TRUE(JsonValidator(a).validate()) << a;
  EXPECT_TRUE(JsonValidator(b).validate()) << b;
  EXPECT_NE(b.find("\"tid\": 0, \"args\": {\"name\": \"b\"}"), std::string::npos);
  EXPECT_EQ(b.find("\"name\": \"a\""), std::string::npos);
}

TEST(TimelineTest, UnwritablePathIsAnError) {
  Timeline timeline;
  const Status status = timeline.open("/nonexistent-chorus-dir/trace.json");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "CHORUS_TIMELINE: cannot open '/nonexistent-chorus-dir/trace.json' for writing: "
            "No such file or directory");
  EXPECT_FALSE(timeline.enabled());
}

TEST(TimelineTest, ManyEventsStayWellFormed) {
  const std::string path = temp_path("many");
  {
    Timeline timeline;
    ASSERT_TRUE(timeline.open(path).ok());
    const auto now = Timeline::Clock::now();
    for (int i = 0; i < 20000; ++i) {
      timeline.span("tensor" + std::to_string(i % 50), "ALLREDUCE", now, now);
    }
  }
  const std::string text = read_file(path);
  std::remove(path.c_str());
  JsonValidator validator(text);
  EXPECT_TRUE(validator.validate()) << validator.error();
  EXPECT_EQ(count(text, "\"ph\": \"X\""), 20000u);
  EXPECT_EQ(count(text, "\"ph\": \"M\""), 50u);
}

}  // namespace
}  // namespace chorus
