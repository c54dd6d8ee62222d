// Timeline: a Chrome trace-event JSON file (chrome://tracing, Perfetto) that
// rank 0 writes when CHORUS_TIMELINE is set, or between start_timeline() and
// stop_timeline() (chorus.h). Each tensor gets its own lane;
// its negotiation and the activities of its collective (copy into the fusion
// buffer, the collective itself, copy out) are spans on that lane. Only the
// background thread writes, so no locking is needed. The file is a complete
// JSON array once close() (or the destructor) has run. Events are streamed:
// each is serialized (nlohmann-json, in timeline.cc) and written as it
// happens, one per line, so a long run never holds its trace in memory.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chorus/status.h"

namespace chorus {

// Numbers shown with a span in the viewer, e.g. {{"fused_tensors", 4}}.
// Keys are string literals.
using TimelineArgs = std::vector<std::pair<const char*, int64_t>>;

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  Timeline();
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Creates (truncates) the file; an unwritable path is an error naming it,
  // after `context` (what asked for the file).
  Status open(const std::string& path, const std::string& context = "CHORUS_TIMELINE");
  bool enabled() const { return file_ != nullptr; }
  // The open file's path (empty when closed).
  const std::string& path() const { return path_; }
  // One span on the lane of `tensor`, with optional `args`.
  void span(const std::string& tensor, const char* activity, Clock::time_point start,
            Clock::time_point end, const TimelineArgs& args = {});
  // An instant marker on the lane of `tensor` (e.g. an error).
  void instant(const std::string& tensor, const char* what);
  // A CYCLE_START marker across every lane: a negotiation cycle began.
  void mark_cycle();
  // Hands what was written so far to the file (one write when there is any).
  void flush();
  void close();

 private:
  int lane_of(const std::string& tensor);
  void write_event(const std::string& event);
  double micros(Clock::time_point t) const;

  // The reusable JSON events (timeline.cc: nlohmann-json stays out of this
  // header, which most of the runtime includes).
  struct Events;
  std::unique_ptr<Events> events_;
  std::FILE* file_ = nullptr;
  std::string path_;
  bool first_event_ = true;
  Clock::time_point origin_;
  std::unordered_map<std::string, int> lanes_;
};

}  // namespace chorus
