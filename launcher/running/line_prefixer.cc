#include "running/line_prefixer.h"

namespace chorus::launcher {

std::string LinePrefixer::feed(const std::string& data) {
  pending_ += data;
  std::string out;
  size_t start = 0, newline;
  while ((newline = pending_.find('\n', start)) != std::string::npos) {
    out += prefix_;
    out.append(pending_, start, newline - start + 1);
    start = newline + 1;
  }
  pending_.erase(0, start);
  if (pending_.size() > kMaxPending) out += flush();
  return out;
}

std::string LinePrefixer::flush() {
  if (pending_.empty()) return "";
  std::string out = prefix_ + pending_ + "\n";
  pending_.clear();
  return out;
}

}  // namespace chorus::launcher
