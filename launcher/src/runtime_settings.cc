#include "runtime_settings.h"

#include <charconv>
#include <cmath>

#include "base/config.h"
#include "usage_error.h"

namespace chorus::launcher {
namespace {

constexpr double kBytesPerMiB = 1048576.0;
// CHORUS_FUSION_THRESHOLD accepts up to 2^40 bytes.
constexpr double kMaxFusionMiB = 1048576.0;

// Runs the runtime's parser on one variable; returns "" when it accepts the
// value, else what it expected (the text after "expected " in its message,
// whose form docs/CONVENTIONS.md fixes).
std::string runtime_rejects(const std::string& name, const std::string& value) {
  Config config;
  const Status status = Config::from_env(&config, [&](const char* asked) -> const char* {
    return name == asked ? value.c_str() : nullptr;
  });
  if (status.ok()) return "";
  const std::string marker = "is invalid: expected ";
  const size_t at = status.message().find(marker);
  return at == std::string::npos ? status.message() : status.message().substr(at + marker.size());
}

}  // namespace

const std::vector<RuntimeFlag>& runtime_flags() {
  static const std::vector<RuntimeFlag> flags = {
      {"fusion-threshold-mb", "CHORUS_FUSION_THRESHOLD", "fusion buffer size in MiB (0 disables fusion)"},
      {"cycle-time-ms", "CHORUS_CYCLE_TIME_MS", "minimum time between negotiation cycles, in ms"},
      {"cache-capacity", "CHORUS_CACHE_CAPACITY", "response cache entries (0 disables the cache)"},
      {"timeline-filename", "CHORUS_TIMELINE", "rank 0 writes a Chrome trace to this file"},
      {"stall-check-seconds", "CHORUS_STALL_CHECK_SECONDS", "warn about stalled collectives after this long (0: never)"},
      {"stall-shutdown-seconds", "CHORUS_STALL_SHUTDOWN_SECONDS", "stop the job after a stall this long (0: never)"},
      {"heartbeat-timeout-seconds", "CHORUS_HEARTBEAT_TIMEOUT_SECONDS",
       "declare a rank lost after this long without a heartbeat and end the job (0: no heartbeat)"},
      {"log-level", "CHORUS_LOG_LEVEL", "trace, debug, info, warning or error"},
      {"shm-allreduce", "CHORUS_SHM_ALLREDUCE", "shared-memory allreduce among the ranks of one host: auto, on or off"},
      {"shm-allreduce-threshold", "CHORUS_SHM_ALLREDUCE_THRESHOLD",
       "smallest allreduce (bytes) that auto sends through shared memory"},
      {"autotune", "CHORUS_AUTOTUNE",
       "search fusion threshold, cycle time and algorithm during the first steps (explicit settings stay)", true},
      {"autotune-log", "CHORUS_AUTOTUNE_LOG", "with --autotune: rank 0 writes every sample to this CSV file"},
  };
  return flags;
}

std::pair<std::string, std::string> runtime_variable_for(const std::string& option, const std::string& value) {
  for (const RuntimeFlag& flag : runtime_flags()) {
    if (option != flag.option) continue;
    if (flag.is_switch) return {flag.variable, "1"};
    if (option == "fusion-threshold-mb") {
      double mib = -1.0;
      const auto result = std::from_chars(value.data(), value.data() + value.size(), mib);
      if (value.empty() || result.ec != std::errc() || result.ptr != value.data() + value.size() ||
          !std::isfinite(mib) || mib < 0.0 || mib > kMaxFusionMiB) {
        throw UsageError("--fusion-threshold-mb='" + value + "' is invalid: expected a number of MiB in [0, 1048576]");
      }
      const std::string bytes = std::to_string(std::llround(mib * kBytesPerMiB));
      check_runtime_variable(flag.variable, bytes, "--fusion-threshold-mb='" + value + "' (" + bytes + " bytes)");
      return {flag.variable, bytes};
    }
    check_runtime_variable(flag.variable, value, "--" + option + "='" + value + "'");
    return {flag.variable, value};
  }
  throw UsageError("--" + option + " is not a runtime option");
}

void check_runtime_variable(const std::string& name, const std::string& value, const std::string& origin) {
  const std::string expected = runtime_rejects(name, value);
  if (!expected.empty()) throw UsageError(origin + " is invalid: expected " + expected);
}

}  // namespace chorus::launcher
