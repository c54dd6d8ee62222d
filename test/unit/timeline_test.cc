#include "runtime/timeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace chorus {
namespace {

using nlohmann::json;

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

// The trace's events; a parse error fails the test with the text.
json parse_trace(const std::string& text) {
  json trace = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(trace.is_discarded()) << "not valid JSON:\n" << text;
  EXPECT_TRUE(trace.is_array()) << text;
  return trace.is_array() ? trace : json::array();
}

// The events whose "ph" is `phase`.
std::vector<json> events(const json& trace, const std::string& phase) {
  std::vector<json> found;
  for (const json& event : trace) {
    if (event.value("ph", "") == phase) found.push_back(event);
  }
  return found;
}

TEST(TimelineTest, DisabledUntilOpened) {
  Timeline timeline;
  EXPECT_FALSE(timeline.enabled());
  // Calls on a closed timeline are no-ops rather than crashes.
  timeline.span("t", "ALLREDUCE", Timeline::Clock::now(), Timeline::Clock::now());
  timeline.instant("t", "ERROR");
  timeline.close();
}

// A running job's trace can be read: flush() (the runtime's, after every
// cycle) hands the events so far to the file before close().
TEST(TimelineTest, FlushMakesTheEventsSoFarReadable) {
  const std::string path = temp_path("timeline_flush");
  Timeline timeline;
  ASSERT_TRUE(timeline.open(path).ok());
  const auto t0 = Timeline::Clock::now();
  timeline.span("allreduce.live", "NEGOTIATE_ALLREDUCE", t0, t0 + std::chrono::microseconds(5));
  timeline.flush();
  const std::string live = read_file(path);
  EXPECT_NE(live.find("\"allreduce.live\""), std::string::npos) << live;
  EXPECT_NE(live.find("\"NEGOTIATE_ALLREDUCE\""), std::string::npos) << live;
  timeline.close();
  const json trace = parse_trace(read_file(path));
  EXPECT_EQ(events(trace, "X").size(), 1u);
  std::remove(path.c_str());
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
                  {{"bytes", 4096}});
    timeline.span("layer2 \"odd\\name\"\n", "BROADCAST", t0, t1);
    timeline.span("layer3.bias", "MEMCPY_IN_FUSION_BUFFER", t1, t0);  // reversed: dur clamps to 0
    timeline.instant("layer2 \"odd\\name\"\n", "ERROR");
    timeline.close();
    EXPECT_FALSE(timeline.enabled());
  }
  const std::string text = read_file(path);
  std::remove(path.c_str());

  // Streamed: "[", one event per line, "]".
  EXPECT_EQ(text.substr(0, 2), "[\n");
  EXPECT_EQ(text.substr(text.size() - 3), "\n]\n");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 10) << text;
  const json trace = parse_trace(text);
  ASSERT_EQ(trace.size(), 8u) << text;
  for (const json& event : trace) EXPECT_EQ(event.at("pid"), 0) << event;

  // One metadata event per lane, named after the tensor, lanes in order of first use.
  const auto lanes = events(trace, "M");
  ASSERT_EQ(lanes.size(), 3u);
  const char* names[] = {"layer1.weight", "layer2 \"odd\\name\"\n", "layer3.bias"};
  for (int lane = 0; lane < 3; ++lane) {
    EXPECT_EQ(lanes[static_cast<size_t>(lane)],
              (json{{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", lane},
                    {"args", {{"name", names[lane]}}}}));
  }

  const auto spans = events(trace, "X");
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[0].at("name"), "NEGOTIATE");
  EXPECT_EQ(spans[0].at("tid"), 0);
  EXPECT_EQ(spans[0].at("dur"), 250.0);
  EXPECT_FALSE(spans[0].contains("args"));
  EXPECT_EQ(spans[1].at("name"), "ALLREDUCE");
  EXPECT_EQ(spans[1].at("dur"), 100.0);
  EXPECT_EQ(spans[1].at("args"), (json{{"bytes", 4096}}));
  EXPECT_DOUBLE_EQ(spans[1].at("ts").get<double>(), spans[0].at("ts").get<double>() + 250.0);
  EXPECT_EQ(spans[2].at("name"), "BROADCAST");
  EXPECT_EQ(spans[2].at("tid"), 1);
  EXPECT_EQ(spans[3].at("name"), "MEMCPY_IN_FUSION_BUFFER");
  EXPECT_EQ(spans[3].at("tid"), 2);
  EXPECT_EQ(spans[3].at("dur"), 0.0);
  for (const json& span : spans) EXPECT_GE(span.at("ts").get<double>(), 0.0);

  const auto instants = events(trace, "i");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0].at("name"), "ERROR");
  EXPECT_EQ(instants[0].at("s"), "t");
  EXPECT_EQ(instants[0].at("tid"), 1);
}

// A tensor name that is not UTF-8 still gives a valid trace (the bad byte
// becomes U+FFFD) instead of an exception on the background thread.
TEST(TimelineTest, NonUtf8NameStaysValid) {
  const std::string path = temp_path("utf8");
  {
    Timeline timeline;
    ASSERT_TRUE(timeline.open(path).ok());
    timeline.span("caf\xc3\xa9 \xff", "ALLREDUCE", Timeline::Clock::now(), Timeline::Clock::now());
  }
  const std::string text = read_file(path);
  std::remove(path.c_str());
  const json trace = parse_trace(text);
  ASSERT_EQ(events(trace, "M").size(), 1u);
  EXPECT_EQ(events(trace, "M")[0].at("args").at("name"), "caf\xc3\xa9 \xef\xbf\xbd");
}

TEST(TimelineTest, EmptyTraceAndDestructorClose) {
  const std::string path = temp_path("empty");
  { Timeline timeline; ASSERT_TRUE(timeline.open(path).ok()); }  // no close(): destructor finishes it
  const std::string text = read_file(path);
  std::remove(path.c_str());
  EXPECT_EQ(parse_trace(text), json::array());
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
  const json first_trace = parse_trace(a), second_trace = parse_trace(b);
  ASSERT_EQ(first_trace.size(), 2u) << a;  // lane "a" and its marker
  EXPECT_EQ(first_trace[0].at("args").at("name"), "a");
  ASSERT_EQ(second_trace.size(), 2u) << b;  // lane "b" only: a fresh file, lanes restart at 0
  EXPECT_EQ(second_trace[0].at("args").at("name"), "b");
  EXPECT_EQ(second_trace[0].at("tid"), 0);
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
  const json trace = parse_trace(text);
  EXPECT_EQ(events(trace, "X").size(), 20000u);
  EXPECT_EQ(events(trace, "M").size(), 50u);
}

}  // namespace
}  // namespace chorus
