// The search space: named hyperparameters, each a float (uniform or
// log-uniform), an integer (uniform or log-uniform, inclusive bounds) or a
// choice among listed values, and the configurations sampled from it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "chorus/tune/json.h"
#include "chorus/tune/portable_random.h"

namespace chorus {
namespace tune {

// One hyperparameter's value: a float, an integer or a string.
class ParamValue {
 public:
  ParamValue() = default;
  ParamValue(double v) : v_(v) {}
  ParamValue(int v) : v_(int64_t{v}) {}
  ParamValue(int64_t v) : v_(v) {}
  ParamValue(const char* v) : v_(std::string(v)) {}
  ParamValue(std::string v) : v_(std::move(v)) {}

  bool is_double() const { return std::holds_alternative<double>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  double as_double() const;  // an integer converts; a string throws
  int64_t as_int() const;    // only an integer
  const std::string& as_string() const;
  // 0.001, 64, relu: how the summary table prints it.
  std::string to_string() const;
  Json to_json() const;
  bool operator==(const ParamValue& o) const { return v_ == o.v_; }
  bool operator!=(const ParamValue& o) const { return !(*this == o); }

 private:
  std::variant<double, int64_t, std::string> v_;
};

// A trial's hyperparameters, in the space's order.
class Config {
 public:
  void set(const std::string& name, ParamValue value);
  bool has(const std::string& name) const;
  // Throw chorus::Error naming the parameter when it is missing or of another type.
  const ParamValue& get(const std::string& name) const;
  double get_double(const std::string& name) const { return get(name).as_double(); }
  int64_t get_int(const std::string& name) const { return get(name).as_int(); }
  const std::string& get_string(const std::string& name) const { return get(name).as_string(); }
  const std::vector<std::pair<std::string, ParamValue>>& values() const { return values_; }
  std::string to_string() const;  // "lr=0.01 width=64"
  Json to_json() const;
  bool operator==(const Config& o) const { return values_ == o.values_; }

 private:
  std::vector<std::pair<std::string, ParamValue>> values_;
};

enum class ParamKind { kFloat, kInt, kChoice };

struct ParamSpec {
  std::string name;
  ParamKind kind = ParamKind::kFloat;
  double low = 0, high = 0;      // kFloat: [low, high)
  int64_t int_low = 0, int_high = 0;  // kInt: [int_low, int_high], both included
  bool log = false;              // sample the logarithm uniformly
  std::vector<ParamValue> choices;

  // Draws one value (see search_space.cc for the transforms).
  ParamValue sample(PortableRandom& rng) const;
  bool contains(const ParamValue& v) const;
  Json to_json() const;
};

class SearchSpace {
 public:
  // Each throws chorus::Error (kInvalidArgument) naming the parameter for a
  // bad definition: an empty or duplicate name, non-finite bounds,
  // low >= high, log with low <= 0, no choices or a repeated choice.
  SearchSpace& add_uniform(const std::string& name, double low, double high);
  SearchSpace& add_log_uniform(const std::string& name, double low, double high);
  SearchSpace& add_int(const std::string& name, int64_t low, int64_t high, bool log = false);
  SearchSpace& add_choice(const std::string& name, std::vector<ParamValue> choices);

  const std::vector<ParamSpec>& params() const { return params_; }
  bool empty() const { return params_.empty(); }
  // The configuration of trial `trial` in a search seeded with `seed`: a
  // function of (seed, trial) alone, the same on every platform (but see
  // DESIGN: log scales go through std::log/std::exp).
  Config sample(uint64_t seed, int64_t trial) const;
  // Throws naming the parameter when `config` lacks one or holds a value
  // outside the space.
  void check(const Config& config) const;
  Json to_json() const;

 private:
  void add(ParamSpec spec);
  std::vector<ParamSpec> params_;
};

}  // namespace tune
}  // namespace chorus
