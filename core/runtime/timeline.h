// Timeline: a Chrome trace-event JSON file (chrome://tracing, Perfetto) that
// rank 0 writes when CHORUS_TIMELINE is set. Each tensor gets its own lane;
// its negotiation and the activities of its collective (copy into the fusion
// buffer, the collective itself, copy out) are spans on that lane. Only the
// background thread writes, so no locking is needed. The file is a complete
// JSON array once close() (or the destructor) has run.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "chorus/status.h"

namespace chorus {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  Timeline() = default;
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Creates (truncates) the file; an unwritable path is an error naming it.
  Status open(const std::string& path);
  bool enabled() const { return file_ != nullptr; }
  // One span on the lane of `tensor`. `args` is an optional JSON object body
  // such as "\"bytes\": 4096" (without braces).
  void span(const std::string& tensor, const char* activity, Clock::time_point start,
            Clock::time_point end, const std::string& args = "");
  // An instant marker on the lane of `tensor` (e.g. an error).
  void instant(const std::string& tensor, const char* what);
  void close();

 private:
  int lane_of(const std::string& tensor);
  void write_event(const std::string& json);
  double micros(Clock::time_point t) const;

  std::FILE* file_ = nullptr;
  bool first_event_ = true;
  Clock::time_point origin_;
  std::unordered_map<std::string, int> lanes_;
};

// Escapes a string for use inside a JSON string literal.
std::string json_escape(const std::string& text);

}  // namespace chorus
