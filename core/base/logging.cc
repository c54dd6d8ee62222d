#include "base/logging.h"

#include <atomic>
#include <cstdio>

#include "base/setting_kinds.h"

namespace chorus {
namespace {

struct LevelInfo {
  LogLevel level;
  const char* name;  // as printed in the line prefix
};
constexpr LevelInfo kLevels[] = {
    {LogLevel::kTrace, "TRACE"}, {LogLevel::kDebug, "DEBUG"},     {LogLevel::kInfo, "INFO"},
    {LogLevel::kWarning, "WARNING"}, {LogLevel::kError, "ERROR"},
};

// The sink is deliberately the only process-wide state in the runtime: log
// lines may come from any thread (framework threads, the background thread)
// and before the Runtime exists, so the settings cannot live inside it.
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
// A negative rank (the initial value) means "not known yet": the prefix
// then omits the rank.
std::atomic<int> g_rank{-1};

}  // namespace

const char* log_level_name(LogLevel level) {
  for (const auto& entry : kLevels) {
    if (entry.level == level) return entry.name;
  }
  return "UNKNOWN";
}

// As CHORUS_LOG_LEVEL takes it (core/base/settings.def): any case.
bool parse_log_level(const std::string& text, LogLevel* out) { return Choice<LogLevel>{true}.parse(text, out); }

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }

LogLevel log_level() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

void set_log_rank(int rank) { g_rank.store(rank, std::memory_order_relaxed); }

void log_message(LogLevel level, const std::string& message) {
  // Callers outside CHORUS_LOG skip the macro's check, so filter here too.
  if (level < log_level()) return;
  std::string line = "[chorus ";
  const int rank = g_rank.load(std::memory_order_relaxed);
  if (rank >= 0) line += "rank " + std::to_string(rank) + " ";
  line += log_level_name(level);
  line += "] ";
  line += message;
  line += '\n';
  // One call per line: stdio locks the stream for the call, so lines from
  // concurrent threads never interleave.
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace chorus
