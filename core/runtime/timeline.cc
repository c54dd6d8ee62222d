#include "runtime/timeline.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace chorus {
namespace {

// The background thread writes events in its hot path; a large stdio buffer
// turns them into a few big writes instead of one per event.
constexpr size_t kWriteBufferBytes = 1 << 20;

std::string format_micros(double us) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.3f", us);
  return buffer;
}

}  // namespace

std::string json_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", static_cast<unsigned>(c));
          out += buffer;
        } else {
          // Bytes >= 0x80 pass through: tensor names are UTF-8 already.
          out += c;
        }
    }
  }
  return out;
}

Timeline::~Timeline() { close(); }

Status Timeline::open(const std::string& path) {
  close();
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return Status::InvalidArgument("CHORUS_TIMELINE: cannot open '" + path +
                                   "' for writing: " + std::strerror(errno));
  }
  // Must precede the first write; a failure only costs speed.
  (void)std::setvbuf(file, nullptr, _IOFBF, kWriteBufferBytes);
  file_ = file;
  first_event_ = true;
  origin_ = Clock::now();
  lanes_.clear();
  std::fputs("[\n", file_);
  return Status::OK();
}

void Timeline::close() {
  if (file_ == nullptr) return;
  std::fputs("\n]\n", file_);
  std::fclose(file_);
  file_ = nullptr;
}

double Timeline::micros(Clock::time_point t) const {
  // Work enqueued before open() would otherwise get a negative timestamp.
  const double us = std::chrono::duration<double, std::micro>(t - origin_).count();
  return std::max(us, 0.0);
}

void Timeline::write_event(const std::string& json) {
  if (!first_event_) std::fputs(",\n", file_);
  first_event_ = false;
  std::fwrite(json.data(), 1, json.size(), file_);
}

int Timeline::lane_of(const std::string& tensor) {
  const auto found = lanes_.find(tensor);
  if (found != lanes_.end()) return found->second;
  // Lanes are numbered in order of first use so the viewer lists tensors in
  // the order they first appeared.
  const int lane = static_cast<int>(lanes_.size());
  lanes_.emplace(tensor, lane);
  write_event("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": " +
              std::to_string(lane) + ", \"args\": {\"name\": \"" + json_escape(tensor) + "\"}}");
  return lane;
}

void Timeline::span(const std::string& tensor, const char* activity, Clock::time_point start,
                    Clock::time_point end, const std::string& args) {
  if (file_ == nullptr) return;
  const int lane = lane_of(tensor);
  const double begin_us = micros(start);
  const double end_us = std::max(micros(end), begin_us);
  std::string event = "{\"name\": \"" + json_escape(activity) + "\", \"ph\": \"X\", \"ts\": " +
                      format_micros(begin_us) + ", \"dur\": " + format_micros(end_us - begin_us) +
                      ", \"pid\": 0, \"tid\": " + std::to_string(lane);
  if (!args.empty()) event += ", \"args\": {" + args + "}";
  event += "}";
  write_event(event);
}

void Timeline::instant(const std::string& tensor, const char* what) {
  if (file_ == nullptr) return;
  const int lane = lane_of(tensor);
  // "s": "t" scopes the marker to the lane rather than the whole process.
  write_event("{\"name\": \"" + json_escape(what) + "\", \"ph\": \"i\", \"ts\": " +
              format_micros(micros(Clock::now())) + ", \"s\": \"t\", \"pid\": 0, \"tid\": " +
              std::to_string(lane) + "}");
}

}  // namespace chorus
