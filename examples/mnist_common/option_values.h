// Checked values of command-line options, shared by train_mnist and
// train_mnist_cuda: a bad value throws chorus::Error naming the option, the
// value and what it accepts (e.g. "--batch-size=0 is invalid: expected an
// integer from 1 to 65536").
#pragma once

#include <cstdint>
#include <string>

namespace train_mnist {

// Throws "--<flag>=<value> is invalid: expected <expected>".
[[noreturn]] void invalid_option(const std::string& flag, const std::string& value,
                                 const std::string& expected);

// Plain decimal digits only: no sign, no suffix, no spaces.
uint64_t parse_unsigned_option(const std::string& flag, const std::string& value, uint64_t min,
                               uint64_t max, const std::string& expected);
// An integer from min to max (both >= 0).
int64_t parse_integer_option(const std::string& flag, const std::string& value, int64_t min,
                             int64_t max);
// A finite number from 0 (when allow_zero) or above 0, to max.
double parse_number_option(const std::string& flag, const std::string& value, bool allow_zero,
                           double max);

}  // namespace train_mnist
