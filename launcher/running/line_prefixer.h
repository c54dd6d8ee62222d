// Prefixes every line of a stream with a tag such as "[3] ", emitting only
// whole lines so that ranks' lines never interleave mid-line.
#pragma once

#include <string>

namespace chorus::launcher {

class LinePrefixer {
 public:
  explicit LinePrefixer(std::string prefix) : prefix_(std::move(prefix)) {}
  // Returns the complete lines in `data` (with what was buffered before),
  // prefixed; keeps an unfinished last line for later. A line longer than
  // kMaxPending is cut and emitted so memory stays bounded.
  std::string feed(const std::string& data);
  // The unfinished last line, prefixed and ended with '\n'; "" if none.
  std::string flush();

  static constexpr size_t kMaxPending = 65536;

 private:
  std::string prefix_;
  std::string pending_;
};

}  // namespace chorus::launcher
