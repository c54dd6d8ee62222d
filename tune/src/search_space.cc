#include "chorus/tune/search_space.h"

#include <cmath>
#include <cstdio>

#include "chorus/status.h"

namespace chorus {
namespace tune {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw Error(Status::InvalidArgument(message)); }

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string quote_name(const std::string& name) { return "'" + name + "'"; }

}  // namespace

double ParamValue::as_double() const {
  if (const double* d = std::get_if<double>(&v_)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
  invalid("hyperparameter value '" + std::get<std::string>(v_) + "' is a string, not a number");
}

int64_t ParamValue::as_int() const {
  if (const int64_t* i = std::get_if<int64_t>(&v_)) return *i;
  invalid("hyperparameter value " + to_string() + " is not an integer");
}

const std::string& ParamValue::as_string() const {
  if (const std::string* s = std::get_if<std::string>(&v_)) return *s;
  invalid("hyperparameter value " + to_string() + " is not a string");
}

std::string ParamValue::to_string() const {
  if (const double* d = std::get_if<double>(&v_)) return number(*d);
  if (const int64_t* i = std::get_if<int64_t>(&v_)) return std::to_string(*i);
  return std::get<std::string>(v_);
}

Json ParamValue::to_json() const {
  if (const double* d = std::get_if<double>(&v_)) return Json(*d);
  if (const int64_t* i = std::get_if<int64_t>(&v_)) return Json(*i);
  return Json(std::get<std::string>(v_));
}

void Config::set(const std::string& name, ParamValue value) {
  for (auto& [n, v] : values_)
    if (n == name) { v = std::move(value); return; }
  values_.emplace_back(name, std::move(value));
}

bool Config::has(const std::string& name) const {
  for (const auto& [n, v] : values_)
    if (n == name) return true;
  return false;
}

const ParamValue& Config::get(const std::string& name) const {
  for (const auto& [n, v] : values_)
    if (n == name) return v;
  std::string names;
  for (const auto& [n, v] : values_) names += (names.empty() ? "" : ", ") + n;
  invalid("the configuration has no hyperparameter " + quote_name(name) + " (it has: " + names + ")");
}

std::string Config::to_string() const {
  std::string out;
  for (const auto& [n, v] : values_) out += (out.empty() ? "" : " ") + n + "=" + v.to_string();
  return out;
}

Json Config::to_json() const {
  Json j = Json::object();
  for (const auto& [n, v] : values_) j[n] = v.to_json();
  return j;
}

// The transforms, written out so that only IEEE arithmetic and std::log /
// std::exp decide the value:
//  float:      low + (high - low) * u, u = uniform01() in [0, 1)
//  log float:  exp(log(low) + (log(high) - log(low)) * u)
//  int:        low + below(high - low + 1)  (exact, unbiased)
//  log int:    floor(exp(log(low) + (log(high + 1) - log(low)) * u)),
//              i.e. a log-uniform real in [low, high + 1) rounded down
//  choice:     choices[below(n)]
// Rounding can put a float transform on `high`; it is then clamped to the
// largest value below it, so every value lies in [low, high).
ParamValue ParamSpec::sample(PortableRandom& rng) const {
  switch (kind) {
    case ParamKind::kFloat: {
      const double u = rng.uniform01();
      double v = log ? std::exp(std::log(low) + (std::log(high) - std::log(low)) * u) : low + (high - low) * u;
      if (v >= high) v = std::nextafter(high, low);
      if (v < low) v = low;
      return ParamValue(v);
    }
    case ParamKind::kInt: {
      if (!log) {
        const uint64_t span = static_cast<uint64_t>(int_high) - static_cast<uint64_t>(int_low) + 1;
        return ParamValue(static_cast<int64_t>(static_cast<uint64_t>(int_low) + rng.below(span)));
      }
      const double lo = static_cast<double>(int_low), hi = static_cast<double>(int_high) + 1.0;
      const double u = rng.uniform01();
      double v = std::floor(std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * u));
      int64_t i = static_cast<int64_t>(v);
      if (i > int_high) i = int_high;
      if (i < int_low) i = int_low;
      return ParamValue(i);
    }
    case ParamKind::kChoice:
      return choices[rng.below(choices.size())];
  }
  return ParamValue();
}

bool ParamSpec::contains(const ParamValue& v) const {
  switch (kind) {
    case ParamKind::kFloat:
      return v.is_double() && v.as_double() >= low && v.as_double() < high;
    case ParamKind::kInt:
      return v.is_int() && v.as_int() >= int_low && v.as_int() <= int_high;
    case ParamKind::kChoice:
      for (const ParamValue& c : choices)
        if (c == v) return true;
      return false;
  }
  return false;
}

Json ParamSpec::to_json() const {
  Json j = Json::object();
  j["name"] = name;
  switch (kind) {
    case ParamKind::kFloat:
      j["type"] = "float";
      j["low"] = low;
      j["high"] = high;
      j["log"] = log;
      break;
    case ParamKind::kInt:
      j["type"] = "int";
      j["low"] = int_low;
      j["high"] = int_high;
      j["log"] = log;
      break;
    case ParamKind::kChoice: {
      j["type"] = "choice";
      Json c = Json::array();
      for (const ParamValue& v : choices) c.push_back(v.to_json());
      j["choices"] = c;
      break;
    }
  }
  return j;
}

void SearchSpace::add(ParamSpec spec) {
  if (spec.name.empty()) invalid("a hyperparameter needs a name (got an empty one)");
  for (const ParamSpec& p : params_)
    if (p.name == spec.name) invalid("hyperparameter " + quote_name(spec.name) + " is defined twice");
  params_.push_back(std::move(spec));
}

SearchSpace& SearchSpace::add_uniform(const std::string& name, double low, double high) {
  if (!std::isfinite(low) || !std::isfinite(high))
    invalid("hyperparameter " + quote_name(name) + ": bounds must be finite, got [" + number(low) + ", " + number(high) + ")");
  if (!(low < high))
    invalid("hyperparameter " + quote_name(name) + ": low must be below high, got low " + number(low) + ", high " + number(high));
  ParamSpec spec;
  spec.name = name;
  spec.kind = ParamKind::kFloat;
  spec.low = low;
  spec.high = high;
  add(std::move(spec));
  return *this;
}

SearchSpace& SearchSpace::add_log_uniform(const std::string& name, double low, double high) {
  if (std::isfinite(low) && low <= 0)
    invalid("hyperparameter " + quote_name(name) + ": a log scale needs low > 0, got low " + number(low));
  add_uniform(name, low, high);
  params_.back().log = true;
  return *this;
}

SearchSpace& SearchSpace::add_int(const std::string& name, int64_t low, int64_t high, bool log) {
  if (!(low < high))
    invalid("hyperparameter " + quote_name(name) + ": low must be below high, got low " + std::to_string(low) +
            ", high " + std::to_string(high) + " (a single value is a choice of one)");
  if (log && low <= 0)
    invalid("hyperparameter " + quote_name(name) + ": a log scale needs low > 0, got low " + std::to_string(low));
  ParamSpec spec;
  spec.name = name;
  spec.kind = ParamKind::kInt;
  spec.int_low = low;
  spec.int_high = high;
  spec.log = log;
  add(std::move(spec));
  return *this;
}

SearchSpace& SearchSpace::add_choice(const std::string& name, std::vector<ParamValue> choices) {
  if (choices.empty()) invalid("hyperparameter " + quote_name(name) + ": a choice needs at least one value, got none");
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i].is_double() && !std::isfinite(choices[i].as_double()))
      invalid("hyperparameter " + quote_name(name) + ": choice " + choices[i].to_string() + " is not finite");
    for (size_t j = 0; j < i; ++j)
      if (choices[i] == choices[j])
        invalid("hyperparameter " + quote_name(name) + ": choice " + choices[i].to_string() + " is listed twice");
  }
  ParamSpec spec;
  spec.name = name;
  spec.kind = ParamKind::kChoice;
  spec.choices = std::move(choices);
  add(std::move(spec));
  return *this;
}

Config SearchSpace::sample(uint64_t seed, int64_t trial) const {
  PortableRandom rng = PortableRandom::for_trial(seed, trial);
  Config config;
  for (const ParamSpec& p : params_) config.set(p.name, p.sample(rng));
  return config;
}

void SearchSpace::check(const Config& config) const {
  for (const ParamSpec& p : params_) {
    if (!config.has(p.name)) invalid("the configuration lacks hyperparameter " + quote_name(p.name));
    const ParamValue& v = config.get(p.name);
    if (!p.contains(v))
      invalid("hyperparameter " + quote_name(p.name) + " = " + v.to_string() + " lies outside its space " + p.to_json().dump());
  }
  if (config.values().size() != params_.size())
    invalid("the configuration has " + std::to_string(config.values().size()) + " hyperparameters, the space " +
            std::to_string(params_.size()));
}

Json SearchSpace::to_json() const {
  Json j = Json::array();
  for (const ParamSpec& p : params_) j.push_back(p.to_json());
  return j;
}

}  // namespace tune
}  // namespace chorus
