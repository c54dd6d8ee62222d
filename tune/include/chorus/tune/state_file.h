// The search's state file: written atomically (a temporary file beside it,
// written, flushed to disk with fsync, renamed over the old one, and the
// directory synced), so a search killed at any moment leaves either the
// previous state or the new one, never a torn file.
#pragma once

#include <string>

#include "chorus/status.h"
#include "chorus/tune/search_log.h"

namespace chorus {
namespace tune {

// The log as the state file's text: pretty, but one line per event.
std::string state_file_text(const SearchLog& log);
// Writes the state file atomically (chorus/atomic_file.h): on failure the
// previous file is untouched and the Status names the file, the step and
// the system's error.
Status save_state_file(const std::string& path, const SearchLog& log);

// Reads and checks a state file. Throws chorus::Error naming the file and
// what is wrong: unreadable, not JSON (with line and column), not a state
// file, or malformed.
SearchLog load_state_file(const std::string& path);

}  // namespace tune
}  // namespace chorus
