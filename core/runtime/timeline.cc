#include "runtime/timeline.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

namespace chorus {
namespace {

// The background thread writes events in its hot path; a large stdio buffer
// turns them into a few big writes instead of one per event.
constexpr size_t kWriteBufferBytes = 1 << 20;

// Insertion order: each event reads "name", "ph", ... as viewers list them.
using Event = nlohmann::ordered_json;

// Microseconds rounded to the nanosecond: the trace's resolution, and the
// shortest decimal form of the result keeps the file small.
double to_nanoseconds(double us) { return std::round(us * 1000.0) / 1000.0; }

void set_text(Event& field, const char* text) { field.get_ref<std::string&>().assign(text); }

std::string serialize(const Event& event) {
  // Tensor names are the user's bytes: invalid UTF-8 becomes U+FFFD rather
  // than an exception on the background thread.
  return event.dump(-1, ' ', false, Event::error_handler_t::replace);
}

}  // namespace

// One event of each kind, built once: writing an event only changes values
// in place (no JSON nodes allocated), which takes about a third of the time
// of building a fresh object per event.
struct Timeline::Events {
  Event lane{{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", ""}}}};
  Event span{{"name", ""}, {"ph", "X"}, {"ts", 0.0}, {"dur", 0.0}, {"pid", 0}, {"tid", 0}};
  Event span_with_args{{"name", ""}, {"ph", "X"}, {"ts", 0.0}, {"dur", 0.0},
                       {"pid", 0}, {"tid", 0}, {"args", Event::object()}};
  Event instant{{"name", ""}, {"ph", "i"}, {"ts", 0.0}, {"s", "t"}, {"pid", 0}, {"tid", 0}};
  // "s": "g": the marker spans every lane (Horovod's CYCLE_START).
  Event cycle{{"name", "CYCLE_START"}, {"ph", "i"}, {"ts", 0.0}, {"s", "g"}, {"pid", 0}, {"tid", 0}};
};

Timeline::Timeline() : events_(std::make_unique<Events>()) {}

Timeline::~Timeline() { close(); }

Status Timeline::open(const std::string& path, const std::string& context) {
  close();
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return Status::InvalidArgument(context + ": cannot open '" + path + "' for writing: " + std::strerror(errno));
  }
  // Must precede the first write; a failure only costs speed.
  (void)std::setvbuf(file, nullptr, _IOFBF, kWriteBufferBytes);
  file_ = file;
  path_ = path;
  first_event_ = true;
  origin_ = Clock::now();
  lanes_.clear();
  // The trace is a JSON array streamed one event per line; close() ends it.
  std::fputs("[\n", file_);
  return Status::OK();
}

void Timeline::flush() {
  if (file_ != nullptr) std::fflush(file_);
}

void Timeline::close() {
  if (file_ == nullptr) return;
  std::fputs("\n]\n", file_);
  std::fclose(file_);
  file_ = nullptr;
  path_.clear();
}

double Timeline::micros(Clock::time_point t) const {
  // Work enqueued before open() would otherwise get a negative timestamp.
  const double us = std::chrono::duration<double, std::micro>(t - origin_).count();
  return std::max(us, 0.0);
}

void Timeline::write_event(const std::string& event) {
  if (!first_event_) std::fputs(",\n", file_);
  first_event_ = false;
  std::fwrite(event.data(), 1, event.size(), file_);
}

int Timeline::lane_of(const std::string& tensor) {
  const auto found = lanes_.find(tensor);
  if (found != lanes_.end()) return found->second;
  // Lanes are numbered in order of first use so the viewer lists tensors in
  // the order they first appeared.
  const int lane = static_cast<int>(lanes_.size());
  lanes_.emplace(tensor, lane);
  Event& event = events_->lane;
  event["tid"] = lane;
  event["args"]["name"].get_ref<std::string&>().assign(tensor);
  write_event(serialize(event));
  return lane;
}

void Timeline::span(const std::string& tensor, const char* activity, Clock::time_point start,
                    Clock::time_point end, const TimelineArgs& args) {
  if (file_ == nullptr) return;
  const int lane = lane_of(tensor);
  const double begin_us = to_nanoseconds(micros(start));
  const double end_us = std::max(to_nanoseconds(micros(end)), begin_us);
  Event& event = args.empty() ? events_->span : events_->span_with_args;
  set_text(event["name"], activity);
  event["ts"] = begin_us;
  event["dur"] = to_nanoseconds(end_us - begin_us);
  event["tid"] = lane;
  if (!args.empty()) {
    Event& members = event["args"];
    members.clear();  // keeps its storage
    for (const auto& [key, value] : args) members[key] = value;
  }
  write_event(serialize(event));
}

void Timeline::instant(const std::string& tensor, const char* what) {
  if (file_ == nullptr) return;
  const int lane = lane_of(tensor);
  Event& event = events_->instant;
  set_text(event["name"], what);
  // "s": "t" scopes the marker to the lane rather than the whole process.
  event["ts"] = to_nanoseconds(micros(Clock::now()));
  event["tid"] = lane;
  write_event(serialize(event));
}

void Timeline::mark_cycle() {
  if (file_ == nullptr) return;
  Event& event = events_->cycle;
  event["ts"] = to_nanoseconds(micros(Clock::now()));
  write_event(serialize(event));
}

}  // namespace chorus
