#include "option_values.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "example_error.h"

namespace train_mnist {

void invalid_option(const std::string& flag, const std::string& value, const std::string& expected) {
  fail("--" + flag + "=" + value + " is invalid: expected " + expected);
}

uint64_t parse_unsigned_option(const std::string& flag, const std::string& value, uint64_t min,
                               uint64_t max, const std::string& expected) {
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) {
    invalid_option(flag, value, expected);
  }
  errno = 0;
  const unsigned long long parsed = std::strtoull(value.c_str(), nullptr, 10);
  if (errno == ERANGE || parsed < min || parsed > max) invalid_option(flag, value, expected);
  return parsed;
}

int64_t parse_integer_option(const std::string& flag, const std::string& value, int64_t min,
                             int64_t max) {
  const std::string expected =
      "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  return static_cast<int64_t>(parse_unsigned_option(flag, value, static_cast<uint64_t>(min),
                                                    static_cast<uint64_t>(max), expected));
}

double parse_number_option(const std::string& flag, const std::string& value, bool allow_zero,
                           double max) {
  std::ostringstream expected;
  expected << "a number " << (allow_zero ? "from 0" : "above 0") << " to " << max;
  char* end = nullptr;
  errno = 0;
  const double parsed = value.empty() ? NAN : std::strtod(value.c_str(), &end);
  if (value.empty() || errno == ERANGE || *end != '\0' || !std::isfinite(parsed) ||
      parsed < 0 || (!allow_zero && parsed == 0) || parsed > max) {
    invalid_option(flag, value, expected.str());
  }
  return parsed;
}

}  // namespace train_mnist
