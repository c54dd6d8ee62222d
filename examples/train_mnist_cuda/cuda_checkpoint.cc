#include "cuda_checkpoint.h"

#include <cstring>
#include <utility>

#include "chorus/atomic_file.h"
#include "chorus/checked_file.h"
#include "example_error.h"
#include "mlp_layout.h"

namespace train_mnist_cuda {
namespace {

using train_mnist::fail;

const chorus::CheckedFileFormat kFormat{"CHORUS-MNIST-CUDA-CHECKPOINT 2", "train_mnist_cuda checkpoint"};

void append_u64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void append_f64(std::string& out, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  append_u64(out, bits);
}

void append_floats(std::string& out, const std::vector<float>& values, const char* what) {
  if (static_cast<int64_t>(values.size()) != kParameterCount) {
    fail(std::string("encode_checkpoint: ") + what + " holds " + std::to_string(values.size()) +
         " values, expected " + std::to_string(kParameterCount));
  }
  append_u64(out, values.size());
  for (float value : values) {
    uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof(bits));
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
}

uint64_t read_u64_at(const std::string& bytes, size_t offset) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(bytes[offset + i]);
  return value;
}

// Reads the payload front to back; running past its end names the field.
class PayloadReader {
 public:
  PayloadReader(const std::string& bytes, size_t offset, std::string what)
      : bytes_(bytes), offset_(offset), what_(std::move(what)) {}

  uint64_t u64(const char* field) {
    need(8, field);
    const uint64_t value = read_u64_at(bytes_, offset_);
    offset_ += 8;
    return value;
  }
  int64_t i64(const char* field) { return static_cast<int64_t>(u64(field)); }
  double f64(const char* field) {
    const uint64_t bits = u64(field);
    double value = 0;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
  }
  std::string text(const char* field) {
    const uint64_t length = u64(field);
    need(length, field);
    std::string value = bytes_.substr(offset_, length);
    offset_ += length;
    return value;
  }
  std::vector<float> floats(const char* field) {
    const uint64_t count = u64(field);
    if (count != static_cast<uint64_t>(kParameterCount)) {
      fail(what_ + " holds " + std::to_string(count) + " values of " + field + ", expected " +
           std::to_string(kParameterCount));
    }
    need(4 * count, field);
    std::vector<float> values(count);
    for (uint64_t i = 0; i < count; ++i) {
      uint32_t bits = 0;
      for (int b = 3; b >= 0; --b) bits = (bits << 8) | static_cast<uint8_t>(bytes_[offset_ + 4 * i + b]);
      std::memcpy(&values[i], &bits, sizeof(bits));
    }
    offset_ += 4 * count;
    return values;
  }
  size_t remaining() const { return bytes_.size() - offset_; }

 private:
  void need(uint64_t count, const char* field) const {
    if (count > remaining()) {
      fail(what_ + " is malformed: its payload ends inside " + field + " (" +
           std::to_string(remaining()) + " bytes left, " + std::to_string(count) + " needed)");
    }
  }

  const std::string& bytes_;
  size_t offset_;
  std::string what_;
};

// "kind mlp; parameter hidden.weight 128 784; ..." for messages.
std::string one_line(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at)) {
    text.replace(at, 1, "; ");
  }
  return text;
}

}  // namespace

std::string encode_checkpoint(const CheckpointState& state) {
  std::string payload;
  const std::string signature = mlp_signature();
  append_u64(payload, signature.size());
  payload += signature;
  append_u64(payload, static_cast<uint64_t>(state.progress.epochs_completed));
  append_f64(payload, state.progress.best_test_loss);
  append_u64(payload, static_cast<uint64_t>(state.progress.best_epoch));
  append_u64(payload, static_cast<uint64_t>(state.progress.epochs_without_improvement));
  append_f64(payload, state.progress.last_test_loss);
  append_f64(payload, state.progress.last_test_accuracy);
  append_u64(payload, static_cast<uint64_t>(state.adam_step));
  append_floats(payload, state.parameters, "parameters");
  append_floats(payload, state.adam_m, "adam_m");
  append_floats(payload, state.adam_v, "adam_v");

  return chorus::seal_checked(kFormat, payload);
}

CheckpointState decode_checkpoint(const std::string& bytes, const std::string& path) {
  const std::string what = "Checkpoint '" + path + "'";
  // Format line, length and checksum, before anything is parsed.
  const std::string payload = chorus::open_checked(kFormat, bytes, what);
  PayloadReader reader(payload, 0, what);
  const std::string signature = reader.text("the model signature");
  if (signature != mlp_signature()) {
    fail(what + " was written for another model (" + one_line(signature) + "); expected " +
         one_line(mlp_signature()));
  }
  CheckpointState state;
  state.progress.epochs_completed = reader.i64("epochs_completed");
  state.progress.best_test_loss = reader.f64("best_test_loss");
  state.progress.best_epoch = reader.i64("best_epoch");
  state.progress.epochs_without_improvement = reader.i64("epochs_without_improvement");
  state.progress.last_test_loss = reader.f64("last_test_loss");
  state.progress.last_test_accuracy = reader.f64("last_test_accuracy");
  state.adam_step = reader.i64("adam_step");
  state.parameters = reader.floats("parameters");
  state.adam_m = reader.floats("adam_m");
  state.adam_v = reader.floats("adam_v");
  if (reader.remaining() != 0) {
    fail(what + " is malformed: " + std::to_string(reader.remaining()) +
         " bytes after the last field (Adam's v)");
  }
  if (state.progress.epochs_completed < 0 || state.adam_step < 0) {
    fail(what + " is malformed: negative epochs_completed or adam_step");
  }
  return state;
}

CheckpointState load_checkpoint(const std::string& path) {
  return decode_checkpoint(chorus::read_whole_file(path, "checkpoint"), path);
}

std::string last_checkpoint_path(const std::string& directory) { return directory + "/last.ckpt"; }
std::string best_checkpoint_path(const std::string& directory) { return directory + "/best.ckpt"; }

}  // namespace train_mnist_cuda
