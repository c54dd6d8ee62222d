#include "chorus/tune/state_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "chorus/atomic_file.h"
#include "json_fields.h"

namespace chorus {
namespace tune {
std::string state_file_text(const SearchLog& log) {
  // Indented, except the events: one compact line each (a long search has
  // thousands of them, and dump(1) would spread each over five lines). The
  // indented document is written with an empty events list, whose "[]" the
  // events' own dumps then fill.
  Json j = log.to_json();
  const Json events = std::move(j["events"]);
  j["events"] = Json::array();
  std::string text = j.dump(1);
  const std::string empty = "\"events\": []";
  const size_t at = text.rfind(empty);
  std::string lines = "\"events\": [";
  for (size_t i = 0; i < events.size(); ++i) lines += (i ? ",\n  " : "\n  ") + events[i].dump();
  lines += events.empty() ? "]" : "\n ]";
  text.replace(at, empty.size(), lines);
  return text + "\n";
}

Status save_state_file(const std::string& path, const SearchLog& log) {
  try {
    write_file_atomically(path, state_file_text(log), "search state file");
  } catch (const Error& e) {
    return Status::Internal(e.what());
  }
  return Status::OK();
}

SearchLog load_state_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(Status::InvalidArgument("cannot read the search state file '" + path + "': " + std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return SearchLog::from_json(json_fields::parse(text.str()));
  } catch (const Error& e) {
    throw Error(Status(e.code(), "search state file '" + path + "' is not usable: " + e.what()));
  }
}

}  // namespace tune
}  // namespace chorus
