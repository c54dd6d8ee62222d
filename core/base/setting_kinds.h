// The kinds of value a runtime setting takes, and the other columns of a row
// of the settings table (settings.def): how ranks must agree on it and which
// chorusrun flag sets it. A kind parses the variable's text, spells a value
// back as the variable takes it, and says what it accepts: the "expected
// ..." of the error message (docs/CONVENTIONS.md) and of docs/CONFIGURATION.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/logging.h"

namespace chorus {

struct Config;

// auto|on|off: CHORUS_SHM_ALLREDUCE, CHORUS_HIERARCHICAL_ALLREDUCE.
enum class AutoOnOff { kAuto, kOn, kOff };
const char* auto_on_off_name(AutoOnOff mode);

// CHORUS_SHM_PROBE: how auto decides, per message size, between the
// shared-memory and the MPI allreduce (ops/shm/shm_probe.h): by a start-up
// measurement kept in a per-machine cache file (cached), by a measurement
// that ignores and rewrites that file (fresh), or by the fixed
// CHORUS_SHM_ALLREDUCE_THRESHOLD (off).
enum class ShmProbeMode { kCached, kFresh, kOff };
const char* shm_probe_mode_name(ShmProbeMode mode);

// CHORUS_GPU_BACKEND: what runs the collectives of GPU memory
// (ops/gpu/gpu_plan.h): NCCL when it can, else host-staged (auto); NCCL or
// nothing (nccl); always through host memory (staged).
enum class GpuBackendMode { kAuto, kNccl, kStaged };
const char* gpu_backend_mode_name(GpuBackendMode mode);

// The names of an enum's values as a variable spells them, in the enum's
// order (its values are 0, 1, ...).
template <typename E>
struct ChoiceNames;
template <>
struct ChoiceNames<AutoOnOff> {
  static constexpr const char* kNames[] = {"auto", "on", "off"};
};
template <>
struct ChoiceNames<ShmProbeMode> {
  static constexpr const char* kNames[] = {"cached", "fresh", "off"};
};
template <>
struct ChoiceNames<GpuBackendMode> {
  static constexpr const char* kNames[] = {"auto", "nccl", "staged"};
};
template <>
struct ChoiceNames<LogLevel> {
  static constexpr const char* kNames[] = {"trace", "debug", "info", "warning", "error"};
};

// Only decimal digits: no sign, no spaces, no suffix, so "12abc", "-1" and
// " 5" are rejected instead of being read as something the user did not mean.
bool parse_integer(const std::string& text, int64_t lo, int64_t hi, int64_t* out);
// A finite number in [lo, hi], the whole text (no spaces, no unit).
bool parse_number(const std::string& text, double lo, double hi, double* out);
// A number as a user writes it: "10000", "0.5", "1048576".
std::string spell_number(double value);

// An integer in [lo, hi]. "an integer number of bytes in [0, 1099511627776]":
// noun, range, note. A default outside the range means "unset".
struct Integer {
  using Value = int64_t;
  int64_t lo;
  int64_t hi;
  const char* noun;
  const char* note = "";

  bool parse(const std::string& text, Value* out) const { return parse_integer(text, lo, hi, out); }
  std::string expected() const;
  std::string spell(Value value) const { return std::to_string(value); }
  std::string spell_default(Value value) const;
  int64_t agreed(Value value) const { return value; }
  std::string spell_agreed(int64_t value) const { return std::to_string(value); }
  std::vector<std::string> edges() const;
  std::vector<std::string> beyond() const;
};

// A number in [lo, hi]; with zero_is_off, also 0, which turns the feature off:
// "0 (off) or a number of seconds in [0.5, 86400]".
struct Number {
  using Value = double;
  double lo;
  double hi;
  const char* noun;
  bool zero_is_off = false;

  bool parse(const std::string& text, Value* out) const;
  std::string expected() const;
  std::string spell(Value value) const { return spell_number(value); }
  std::string spell_default(Value value) const { return spell_number(value); }
  // Ranks compare thousandths: a difference below that is none.
  int64_t agreed(Value value) const { return static_cast<int64_t>(value * 1000.0 + 0.5); }
  std::string spell_agreed(int64_t thousandths) const;
  std::vector<std::string> edges() const;
  std::vector<std::string> beyond() const;
};

// Any text (a path, a list checked where it is used). Empty is the default
// and means "off" or "not given".
struct Text {
  using Value = std::string;
  const char* noun;

  bool parse(const std::string& text, Value* out) const {
    *out = text;
    return true;
  }
  std::string expected() const { return noun; }
  std::string spell(const Value& value) const { return value; }
  std::string spell_default(const Value& value) const { return value.empty() ? "empty" : value; }
  std::vector<std::string> edges() const { return {"", "a/b c.txt"}; }
  std::vector<std::string> beyond() const { return {}; }
};

// 0 or 1. chorusrun's flag for it takes no value and sets 1.
struct Switch {
  using Value = bool;

  bool parse(const std::string& text, Value* out) const;
  std::string expected() const { return "0 or 1"; }
  std::string spell(Value value) const { return value ? "1" : "0"; }
  std::string spell_default(Value value) const { return spell(value); }
  int64_t agreed(Value value) const { return value ? 1 : 0; }
  std::string spell_agreed(int64_t value) const { return std::to_string(value); }
  std::vector<std::string> edges() const { return {"0", "1"}; }
  std::vector<std::string> beyond() const { return {"", "2", "yes", "true"}; }
};

// One of an enum's names (ChoiceNames), optionally in any case.
template <typename E>
struct Choice {
  using Value = E;
  bool ignore_case = false;

  static constexpr size_t size() { return sizeof(ChoiceNames<E>::kNames) / sizeof(ChoiceNames<E>::kNames[0]); }
  static const char* name(int64_t value) {
    return value >= 0 && static_cast<size_t>(value) < size() ? ChoiceNames<E>::kNames[value] : "unknown";
  }
  bool parse(const std::string& text, Value* out) const {
    std::string wanted = text;
    if (ignore_case) {
      for (char& c : wanted) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
    for (size_t i = 0; i < size(); ++i) {
      if (wanted == ChoiceNames<E>::kNames[i]) {
        *out = static_cast<E>(i);
        return true;
      }
    }
    return false;
  }
  std::string expected() const {
    std::string text = "one of ";
    for (size_t i = 0; i < size(); ++i) text += (i == 0 ? "" : ", ") + std::string(ChoiceNames<E>::kNames[i]);
    return text;
  }
  std::string spell(Value value) const { return name(static_cast<int64_t>(value)); }
  std::string spell_default(Value value) const { return spell(value); }
  int64_t agreed(Value value) const { return static_cast<int64_t>(value); }
  std::string spell_agreed(int64_t value) const { return name(value); }
  std::vector<std::string> edges() const {
    return std::vector<std::string>(ChoiceNames<E>::kNames, ChoiceNames<E>::kNames + size());
  }
  std::vector<std::string> beyond() const { return {"", "x", std::string(ChoiceNames<E>::kNames[0]) + " "}; }
};

// How the ranks must agree on a setting (core/protocol/settings_agreement.h).
enum class Agreement {
  kAlike,     // init() fails unless every rank holds rank 0's value
  kRankZero,  // read by rank 0 alone, which runs the clock, the stall inspector and the autotuner
  kThisRank,  // each rank's own: ranks may differ
};
const char* agreement_name(Agreement agreement);

struct Rule {
  // NOLINTNEXTLINE(google-explicit-constructor): a row names its agreement alone
  constexpr Rule(Agreement how, int64_t (*value)(const Config&) = nullptr) : agreement(how), agreed(value) {}
  Agreement agreement;
  // What ranks compare, when not the field itself (the value in force).
  int64_t (*agreed)(const Config&);
};

// chorusrun's flag for a setting. With a scale, the flag takes a number of
// `unit`s (fractions allowed) and passes on scale times as many `base_unit`s.
struct Flag {
  const char* option = nullptr;  // "cycle-time-ms"; none when null
  const char* help = "";         // one line of chorusrun --help
  double scale = 1.0;
  const char* unit = "";
  const char* base_unit = "";
};

}  // namespace chorus
