// Reading a Chrome trace that the timeline wrote (CHORUS_TIMELINE,
// start_timeline()): its events checked for the fields a viewer needs and
// returned as spans by tensor lane. Header-only, for the parallel tests.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace chorus_test {

inline std::string temp_dir() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

inline bool file_exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

using nlohmann::json;

struct Span {
  double ts = 0.0;
  double dur = 0.0;
  json args;  // null when the span has none
};

// The spans of each tensor's lane, by activity name.
using Lanes = std::map<std::string, std::multimap<std::string, Span>>;

// Checks the overall shape of a trace (an array of trace events, each with
// the fields a viewer needs, every "X" span with non-negative ts and dur, one
// thread_name event per lane) and returns the spans by tensor. With
// `cycle_markers`, CYCLE_START markers (start_timeline(path, true)) are
// allowed and their timestamps returned there; any other event is a failure.
inline Lanes parse_trace(const std::string& text, std::vector<double>* cycle_markers = nullptr) {
  Lanes lanes;
  const json trace = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(trace.is_discarded()) << "the trace is not valid JSON:\n" << text;
  EXPECT_TRUE(trace.is_array()) << "the trace is not a JSON array";
  if (!trace.is_array()) return lanes;

  std::map<int, std::string> lane_names;  // tid -> tensor name
  std::vector<json> spans;
  for (const json& event : trace) {
    if (!event.is_object()) {
      ADD_FAILURE() << "not a trace event object: " << event;
      continue;
    }
    bool complete = true;
    for (const char* field : {"name", "ph", "pid", "tid"}) {
      if (!event.contains(field)) {
        ADD_FAILURE() << "no \"" << field << "\": " << event;
        complete = false;
      }
    }
    if (!complete) continue;
    EXPECT_EQ(event.at("pid"), 0) << event;
    EXPECT_TRUE(event.at("tid").is_number_integer()) << event;
    const json& ph = event.at("ph");
    if (ph == "M") {
      EXPECT_EQ(event.at("name"), "thread_name") << event;
      if (!event.contains("args") || !event.at("args").contains("name") ||
          !event.at("args").at("name").is_string()) {
        ADD_FAILURE() << "a metadata event without a lane name: " << event;
        continue;
      }
      EXPECT_TRUE(lane_names.emplace(event.at("tid").get<int>(), event.at("args").at("name")).second)
          << "two thread_name events for lane " << event.at("tid");
    } else if (ph == "X") {
      for (const char* field : {"ts", "dur"}) {
        EXPECT_TRUE(event.contains(field) && event.at(field).is_number() && event.at(field).get<double>() >= 0.0)
            << "no non-negative \"" << field << "\": " << event;
      }
      spans.push_back(event);
    } else if (cycle_markers != nullptr && ph == "i" && event.at("name") == "CYCLE_START" &&
               event.value("s", "") == "g" && event.contains("ts") && event.at("ts").is_number() &&
               event.at("ts").get<double>() >= 0.0) {
      cycle_markers->push_back(event.at("ts").get<double>());
    } else {
      ADD_FAILURE() << "unexpected event (a successful run has only spans and lane names"
                    << (cycle_markers != nullptr ? ", and cycle markers" : "") << "): " << event;
    }
  }

  std::set<std::string> tensors;
  for (const auto& [tid, name] : lane_names) {
    EXPECT_TRUE(tensors.insert(name).second) << "two lanes named " << name;
  }
  for (const json& event : spans) {
    const auto lane = lane_names.find(event.at("tid").get<int>());
    if (lane == lane_names.end()) {
      ADD_FAILURE() << "a span on lane " << event.at("tid") << ", which has no thread_name event";
      continue;
    }
    lanes[lane->second].emplace(event.at("name").get<std::string>(),
                                Span{event.at("ts").get<double>(), event.at("dur").get<double>(),
                                     event.value("args", json())});
  }
  return lanes;
}

// The one span `activity` on `tensor`'s lane (a failure when there is not
// exactly one).
inline const Span* the_span(const Lanes& lanes, const std::string& tensor, const std::string& activity) {
  const auto lane = lanes.find(tensor);
  if (lane == lanes.end()) {
    ADD_FAILURE() << "no lane for '" << tensor << "'";
    return nullptr;
  }
  const size_t n = lane->second.count(activity);
  if (n != 1) {
    ADD_FAILURE() << "'" << tensor << "': " << n << " " << activity << " spans, expected 1";
    return nullptr;
  }
  return &lane->second.find(activity)->second;
}

// The activities on `tensor`'s lane, in name order.
inline std::multiset<std::string> activities(const Lanes& lanes, const std::string& tensor) {
  std::multiset<std::string> names;
  const auto lane = lanes.find(tensor);
  if (lane != lanes.end()) {
    for (const auto& [name, span] : lane->second) names.insert(name);
  }
  return names;
}

// Spans of one collective follow each other: each starts no earlier than the
// previous one (timestamps are rounded to 1 ns, so the end of one may exceed
// the start of the next by that much).
inline void expect_in_order(const std::string& tensor, const std::vector<const Span*>& order,
                     const std::vector<std::string>& names) {
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i - 1] == nullptr || order[i] == nullptr) continue;
    EXPECT_LE(order[i - 1]->ts, order[i]->ts) << tensor << ": " << names[i - 1] << " before " << names[i];
    EXPECT_LE(order[i - 1]->ts + order[i - 1]->dur, order[i]->ts + 0.002)
        << tensor << ": " << names[i - 1] << " ends before " << names[i] << " starts";
  }
}

}  // namespace chorus_test
