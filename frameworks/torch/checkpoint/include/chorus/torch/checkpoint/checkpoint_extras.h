// The user's own state in a checkpoint, besides model, optimizer and
// gradient scaler: training progress (epoch, best metric), a data loader's
// position, anything small that a resumed run needs. Named values of four
// kinds; a getter names a missing key or a wrong kind.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/serialize/archive.h>

namespace chorus {
namespace torch {

class CheckpointExtras {
 public:
  void set_int(const std::string& key, int64_t value);
  void set_double(const std::string& key, double value);
  void set_bool(const std::string& key, bool value);
  void set_string(const std::string& key, const std::string& value);

  bool contains(const std::string& key) const { return values_.count(key) > 0; }
  // Throw chorus::Error naming the key when it is missing or of another kind.
  int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  // With a default for a missing key (still an error for a wrong kind).
  int64_t get_int(const std::string& key, int64_t missing) const;
  double get_double(const std::string& key, double missing) const;

  std::vector<std::string> keys() const;
  void remove(const std::string& key) { values_.erase(key); }
  void clear() { values_.clear(); }
  bool empty() const { return values_.empty(); }

  void save(::torch::serialize::OutputArchive& archive) const;
  // Replaces this object's values with the archive's; chorus::Error when the
  // archive was not written by save().
  void load(::torch::serialize::InputArchive& archive);

 private:
  const c10::IValue& get(const std::string& key, const char* kind) const;
  std::map<std::string, c10::IValue> values_;
};

}  // namespace torch
}  // namespace chorus
