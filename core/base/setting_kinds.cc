#include "base/setting_kinds.h"

#include <charconv>
#include <cmath>
#include <sstream>

namespace chorus {

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

std::string spell_number(double value) {
  // Whole numbers as integers ("10000", not "1e+04"); others in the shortest
  // form that reads back as the same double.
  if (value == std::floor(value) && std::fabs(value) < 1e15) return std::to_string(static_cast<int64_t>(value));
  char text[64];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, result.ptr);
}

const char* auto_on_off_name(AutoOnOff mode) { return Choice<AutoOnOff>::name(static_cast<int64_t>(mode)); }

const char* shm_probe_mode_name(ShmProbeMode mode) { return Choice<ShmProbeMode>::name(static_cast<int64_t>(mode)); }

const char* gpu_backend_mode_name(GpuBackendMode mode) {
  return Choice<GpuBackendMode>::name(static_cast<int64_t>(mode));
}

const char* agreement_name(Agreement agreement) {
  switch (agreement) {
    case Agreement::kAlike: return "alike";
    case Agreement::kRankZero: return "rank 0's";
    case Agreement::kThisRank: return "this rank's";
  }
  return "unknown";
}

std::string Integer::expected() const {
  return std::string(noun) + " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]" + note;
}

std::string Integer::spell_default(Value value) const {
  return value < lo || value > hi ? "unset" : std::to_string(value);
}

std::vector<std::string> Integer::edges() const { return {std::to_string(lo), std::to_string(hi)}; }

std::vector<std::string> Integer::beyond() const {
  std::vector<std::string> out = {"", "-1", "+1", " 1", "1.0", "0x1", "1e3", "x", std::to_string(hi) + "0"};
  if (lo > 0) out.push_back(std::to_string(lo - 1));
  out.push_back(std::to_string(hi + 1));
  return out;
}

bool Number::parse(const std::string& text, Value* out) const {
  // 0 is below the range of a setting it turns off.
  double value = 0.0;
  if (!parse_number(text, zero_is_off ? 0.0 : lo, hi, &value)) return false;
  if (zero_is_off && value != 0.0 && value < lo) return false;
  *out = value;
  return true;
}

std::string Number::expected() const {
  return std::string(zero_is_off ? "0 (off) or " : "") + noun + " in [" + spell_number(lo) + ", " +
         spell_number(hi) + "]";
}

std::string Number::spell_agreed(int64_t thousandths) const {
  std::ostringstream out;
  out << static_cast<double>(thousandths) / 1000.0;
  return out.str();
}

std::vector<std::string> Number::edges() const {
  std::vector<std::string> out = {spell_number(lo), spell_number(hi)};
  if (zero_is_off) out.push_back("0");
  return out;
}

std::vector<std::string> Number::beyond() const {
  std::vector<std::string> out = {"", "nan", "inf", "-inf", " 1", "1 ", "1s", spell_number(hi * 1.5 + 1.0)};
  if (lo > 0.0) out.push_back(spell_number(lo / 2.0));
  if (lo >= 0.0) out.push_back("-1");
  return out;
}

bool Switch::parse(const std::string& text, Value* out) const {
  if (text != "0" && text != "1") return false;
  *out = text == "1";
  return true;
}

}  // namespace chorus
