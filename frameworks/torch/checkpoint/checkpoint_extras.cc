#include "chorus/torch/checkpoint/checkpoint_extras.h"

#include <sstream>

#include "chorus/status.h"

namespace chorus {
namespace torch {
namespace {

[[noreturn]] void invalid_extras(const std::string& message) {
  throw Error(Status::InvalidArgument("CheckpointExtras: " + message));
}

const char* kind_of(const c10::IValue& value) {
  if (value.isInt()) return "int";
  if (value.isDouble()) return "double";
  if (value.isBool()) return "bool";
  if (value.isString()) return "string";
  return "unsupported";
}

bool kind_matches(const c10::IValue& value, const std::string& kind) { return kind_of(value) == kind; }

void check_key(const std::string& key) {
  if (key.empty() || key.find('\n') != std::string::npos) {
    invalid_extras("key '" + key + "' is invalid; expected a non-empty name without newlines");
  }
}

}  // namespace

void CheckpointExtras::set_int(const std::string& key, int64_t value) {
  check_key(key);
  values_[key] = c10::IValue(value);
}
void CheckpointExtras::set_double(const std::string& key, double value) {
  check_key(key);
  values_[key] = c10::IValue(value);
}
void CheckpointExtras::set_bool(const std::string& key, bool value) {
  check_key(key);
  values_[key] = c10::IValue(value);
}
void CheckpointExtras::set_string(const std::string& key, const std::string& value) {
  check_key(key);
  values_[key] = c10::IValue(value);
}

const c10::IValue& CheckpointExtras::get(const std::string& key, const char* kind) const {
  const auto it = values_.find(key);
  if (it == values_.end()) invalid_extras("no value '" + key + "'; expected one of kind " + kind);
  if (!kind_matches(it->second, kind)) {
    invalid_extras("value '" + key + "' is of kind " + kind_of(it->second) + "; expected " + kind);
  }
  return it->second;
}

int64_t CheckpointExtras::get_int(const std::string& key) const { return get(key, "int").toInt(); }
double CheckpointExtras::get_double(const std::string& key) const { return get(key, "double").toDouble(); }
bool CheckpointExtras::get_bool(const std::string& key) const { return get(key, "bool").toBool(); }
std::string CheckpointExtras::get_string(const std::string& key) const {
  return get(key, "string").toStringRef();
}
int64_t CheckpointExtras::get_int(const std::string& key, int64_t missing) const {
  return contains(key) ? get_int(key) : missing;
}
double CheckpointExtras::get_double(const std::string& key, double missing) const {
  return contains(key) ? get_double(key) : missing;
}

std::vector<std::string> CheckpointExtras::keys() const {
  std::vector<std::string> keys;
  for (const auto& item : values_) keys.push_back(item.first);
  return keys;
}

// Archive keys are positional ("value.<i>"), the names one string: names may
// hold any character but a newline.
void CheckpointExtras::save(::torch::serialize::OutputArchive& archive) const {
  std::string names;
  int64_t i = 0;
  for (const auto& [key, value] : values_) {
    names += key + "\n";
    archive.write("value." + std::to_string(i++), value);
  }
  archive.write("names", c10::IValue(names));
}

void CheckpointExtras::load(::torch::serialize::InputArchive& archive) {
  c10::IValue names;
  if (!archive.try_read("names", names) || !names.isString()) {
    invalid_extras("the archive has no list of names; expected one written by CheckpointExtras::save");
  }
  std::map<std::string, c10::IValue> values;
  std::istringstream lines(names.toStringRef());
  std::string key;
  int64_t i = 0;
  while (std::getline(lines, key)) {
    c10::IValue value;
    if (!archive.try_read("value." + std::to_string(i++), value)) {
      invalid_extras("the archive has no value for '" + key + "'");
    }
    values[key] = value;
  }
  values_ = std::move(values);
}

}  // namespace torch
}  // namespace chorus
