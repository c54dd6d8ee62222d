#include "base/config.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace chorus {
namespace {

// Only decimal digits: no sign, no spaces, no suffix, so "12abc", "-1" and
// " 5" are rejected instead of being read as something the user did not mean.
bool parse_integer(const std::string& text, int64_t lo, int64_t hi, int64_t* out) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, value);
  // out_of_range covers values beyond int64_t; the range check the rest.
  if (result.ec != std::errc() || result.ptr != end || value < lo || value > hi) return false;
  *out = value;
  return true;
}

// from_chars rather than strtod: it neither skips leading whitespace nor
// depends on the C locale's decimal point. It does accept "nan" and "inf",
// which the finiteness check turns away.
bool parse_number(const std::string& text, double lo, double hi, double* out) {
  if (text.empty()) return false;
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, value);
  if (result.ec != std::errc() || result.ptr != end || !std::isfinite(value)) return false;
  if (value < lo || value > hi) return false;
  *out = value;
  return true;
}

constexpr int64_t kMaxFusionThreshold = int64_t{1} << 40;
constexpr int64_t kMaxCacheCapacity = 1000000;
constexpr double kMaxCycleTimeMs = 10000.0;
constexpr double kMaxStallSeconds = 86400.0;
// Below this a heartbeat would fire on a rank that is merely descheduled
// for a moment on a loaded machine.
constexpr double kMinHeartbeatTimeout = 0.5;
constexpr int64_t kMaxShmThreshold = int64_t{1} << 40;
constexpr int64_t kMaxAutotuneSteps = 100000;
constexpr int64_t kMaxAutotuneSamples = 1000;
constexpr double kMaxAutotuneSampleMs = 60000.0;
// CUDA numbers a process's devices from 0; no machine has more than this.
constexpr int64_t kMaxCudaDevice = 1023;

bool parse_shm_mode(const std::string& text, ShmAllreduceMode* out) {
  for (ShmAllreduceMode mode : {ShmAllreduceMode::kAuto, ShmAllreduceMode::kOn, ShmAllreduceMode::kOff}) {
    if (text == shm_allreduce_mode_name(mode)) {
      *out = mode;
      return true;
    }
  }
  return false;
}

bool parse_gpu_backend_mode(const std::string& text, GpuBackendMode* out) {
  for (GpuBackendMode mode : {GpuBackendMode::kAuto, GpuBackendMode::kNccl, GpuBackendMode::kStaged}) {
    if (text == gpu_backend_mode_name(mode)) {
      *out = mode;
      return true;
    }
  }
  return false;
}

// One row per variable: its name, what the error message says is accepted,
// and how a set value is stored. Keep the ranges in `expected` in step with
// the constants the parser uses.
struct Variable {
  const char* name;
  const char* expected;
  bool (*parse)(const std::string& value, Config* config);
};

const Variable kVariables[] = {
    {"CHORUS_FUSION_THRESHOLD", "an integer number of bytes in [0, 1099511627776]",
     [](const std::string& v, Config* c) {
       return parse_integer(v, 0, kMaxFusionThreshold, &c->fusion_threshold_bytes);
     }},
    {"CHORUS_CYCLE_TIME_MS", "a number of milliseconds in [0, 10000]",
     [](const std::string& v, Config* c) {
       return parse_number(v, 0.0, kMaxCycleTimeMs, &c->cycle_time_ms);
     }},
    {"CHORUS_CACHE_CAPACITY", "an integer number of entries in [0, 1000000]",
     [](const std::string& v, Config* c) {
       return parse_integer(v, 0, kMaxCacheCapacity, &c->cache_capacity);
     }},
    // An empty path means "off", like the default, so exporting
    // CHORUS_TIMELINE= is a way to switch a timeline off.
    {"CHORUS_TIMELINE", "a file path",
     [](const std::string& v, Config* c) {
       c->timeline_path = v;
       return true;
     }},
    {"CHORUS_STALL_CHECK_SECONDS", "a number of seconds in [0, 86400]",
     [](const std::string& v, Config* c) {
       return parse_number(v, 0.0, kMaxStallSeconds, &c->stall_check_seconds);
     }},
    {"CHORUS_STALL_SHUTDOWN_SECONDS", "a number of seconds in [0, 86400]",
     [](const std::string& v, Config* c) {
       return parse_number(v, 0.0, kMaxStallSeconds, &c->stall_shutdown_seconds);
     }},
    {"CHORUS_HEARTBEAT_TIMEOUT_SECONDS", "0 (off) or a number of seconds in [0.5, 86400]",
     [](const std::string& v, Config* c) {
       double seconds = 0.0;
       if (!parse_number(v, 0.0, kMaxStallSeconds, &seconds)) return false;
       if (seconds != 0.0 && seconds < kMinHeartbeatTimeout) return false;
       c->heartbeat_timeout_seconds = seconds;
       return true;
     }},
    // Checked against this host's interfaces when the heartbeat starts.
    {"CHORUS_HEARTBEAT_INTERFACE", "a comma-separated list of interface names and IPv4 networks (a.b.c.d/n)",
     [](const std::string& v, Config* c) {
       c->heartbeat_interface = v;
       return true;
     }},
    {"CHORUS_LOG_LEVEL", "one of trace, debug, info, warning, error",
     [](const std::string& v, Config* c) { return parse_log_level(v, &c->log_level); }},
    {"CHORUS_SHM_ALLREDUCE", "one of auto, on, off",
     [](const std::string& v, Config* c) { return parse_shm_mode(v, &c->shm_allreduce); }},
    {"CHORUS_SHM_ALLREDUCE_THRESHOLD", "an integer number of bytes in [0, 1099511627776]",
     [](const std::string& v, Config* c) {
       c->shm_allreduce_threshold_given = true;
       return parse_integer(v, 0, kMaxShmThreshold, &c->shm_allreduce_threshold_bytes);
     }},
    {"CHORUS_SHM_PROBE", "one of cached, fresh, off",
     [](const std::string& v, Config* c) {
       for (ShmProbeMode mode : {ShmProbeMode::kCached, ShmProbeMode::kFresh, ShmProbeMode::kOff}) {
         if (v == shm_probe_mode_name(mode)) {
           c->shm_probe = mode;
           c->shm_probe_given = true;
           return true;
         }
       }
       return false;
     }},
    {"CHORUS_HIERARCHICAL_ALLREDUCE", "one of auto, on, off",
     [](const std::string& v, Config* c) { return parse_shm_mode(v, &c->hierarchical_allreduce); }},
    {"CHORUS_AUTOTUNE", "0 or 1",
     [](const std::string& v, Config* c) {
       if (v != "0" && v != "1") return false;
       c->autotune = v == "1";
       return true;
     }},
    {"CHORUS_AUTOTUNE_LOG", "a file path",
     [](const std::string& v, Config* c) {
       c->autotune_log_path = v;
       return true;
     }},
    {"CHORUS_AUTOTUNE_WARMUP_STEPS", "an integer number of steps in [0, 100000]",
     [](const std::string& v, Config* c) {
       return parse_integer(v, 0, kMaxAutotuneSteps, &c->autotune_warmup_steps);
     }},
    {"CHORUS_AUTOTUNE_STEPS_PER_SAMPLE", "an integer number of steps in [1, 100000]",
     [](const std::string& v, Config* c) {
       return parse_integer(v, 1, kMaxAutotuneSteps, &c->autotune_steps_per_sample);
     }},
    {"CHORUS_AUTOTUNE_MIN_SAMPLE_MS", "a number of milliseconds in [0, 60000]",
     [](const std::string& v, Config* c) {
       return parse_number(v, 0.0, kMaxAutotuneSampleMs, &c->autotune_min_sample_ms);
     }},
    {"CHORUS_AUTOTUNE_SAMPLES", "an integer number of samples in [1, 1000]",
     [](const std::string& v, Config* c) {
       return parse_integer(v, 1, kMaxAutotuneSamples, &c->autotune_samples);
     }},
    {"CHORUS_CUDA_DEVICE", "a CUDA device index in [0, 1023] (among the GPUs this process sees)",
     [](const std::string& v, Config* c) { return parse_integer(v, 0, kMaxCudaDevice, &c->cuda_device); }},
    {"CHORUS_GPU_BACKEND", "one of auto, nccl, staged",
     [](const std::string& v, Config* c) { return parse_gpu_backend_mode(v, &c->gpu_backend); }},
};

}  // namespace

const char* gpu_backend_mode_name(GpuBackendMode mode) {
  switch (mode) {
    case GpuBackendMode::kAuto: return "auto";
    case GpuBackendMode::kNccl: return "nccl";
    case GpuBackendMode::kStaged: return "staged";
  }
  return "unknown";
}

const char* shm_probe_mode_name(ShmProbeMode mode) {
  switch (mode) {
    case ShmProbeMode::kCached: return "cached";
    case ShmProbeMode::kFresh: return "fresh";
    case ShmProbeMode::kOff: return "off";
  }
  return "unknown";
}

const char* shm_allreduce_mode_name(ShmAllreduceMode mode) {
  switch (mode) {
    case ShmAllreduceMode::kAuto: return "auto";
    case ShmAllreduceMode::kOn: return "on";
    case ShmAllreduceMode::kOff: return "off";
  }
  return "unknown";
}

Status Config::from_env(Config* out, const Lookup& lookup) {
  // Parse into a fresh Config so that a failure leaves *out untouched and a
  // reused *out never leaks values from an earlier call.
  Config config;
  for (const Variable& variable : kVariables) {
    const char* raw = lookup ? lookup(variable.name) : std::getenv(variable.name);
    if (raw == nullptr) continue;
    const std::string value(raw);
    if (!variable.parse(value, &config)) {
      return Status::InvalidArgument(std::string(variable.name) + "='" + value +
                                     "' is invalid: expected " + variable.expected);
    }
    config.explicitly_set.emplace_back(variable.name);
  }
  *out = config;
  return Status::OK();
}

bool Config::was_set(const std::string& variable) const {
  for (const std::string& name : explicitly_set) {
    if (name == variable) return true;
  }
  return false;
}

}  // namespace chorus
