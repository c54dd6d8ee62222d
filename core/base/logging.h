// Leveled logging to stderr, prefixed with the rank. The level comes from
// the runtime's Config; messages below it cost one comparison.
#pragma once

#include <sstream>
#include <string>

namespace chorus {

enum class LogLevel { kTrace = 0, kDebug, kInfo, kWarning, kError };
const char* log_level_name(LogLevel level);
bool parse_log_level(const std::string& text, LogLevel* out);

// Process-wide sink settings: the level and the rank prefix are set by the
// runtime at init(); until then messages carry no rank.
void set_log_level(LogLevel level);
LogLevel log_level();
void set_log_rank(int rank);
void log_message(LogLevel level, const std::string& message);

}  // namespace chorus

#define CHORUS_LOG(level, expr)                                           \
  do {                                                                     \
    if (::chorus::LogLevel::level >= ::chorus::log_level()) {              \
      std::ostringstream chorus_log_stream_;                               \
      chorus_log_stream_ << expr;                                          \
      ::chorus::log_message(::chorus::LogLevel::level, chorus_log_stream_.str()); \
    }                                                                      \
  } while (0)
