#include "checkpoint.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "example_error.h"

namespace train_mnist {
namespace {

const std::string kMagic = "CHORUS-MNIST-CHECKPOINT 1\n";
const size_t kHeaderSize = kMagic.size() + 8 + 8;  // magic, payload length, checksum

uint64_t fnv1a64(const char* data, size_t size) {
  uint64_t hash = 14695981039346656037ull;
  for (size_t i = 0; i < size; ++i) {
    hash ^= static_cast<uint8_t>(data[i]);
    hash *= 1099511628211ull;
  }
  return hash;
}

void append_u64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t read_u64(const std::string& bytes, size_t offset) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(bytes[offset + i]);
  return value;
}

double read_double(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue value;
  archive.read(key, value);
  return value.toDouble();
}

int64_t read_int(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue value;
  archive.read(key, value);
  return value.toInt();
}

}  // namespace

std::string encode_checkpoint(const Classifier& model, const torch::optim::Optimizer& optimizer,
                              const TrainingProgress& progress) {
  torch::serialize::OutputArchive archive;
  archive.write("signature", c10::IValue(ModelSignature::of(model).serialize()));
  archive.write("progress.epochs_completed", c10::IValue(progress.epochs_completed));
  archive.write("progress.best_test_loss", c10::IValue(progress.best_test_loss));
  archive.write("progress.best_epoch", c10::IValue(progress.best_epoch));
  archive.write("progress.epochs_without_improvement",
                c10::IValue(progress.epochs_without_improvement));
  archive.write("progress.last_test_loss", c10::IValue(progress.last_test_loss));
  archive.write("progress.last_test_accuracy", c10::IValue(progress.last_test_accuracy));
  torch::serialize::OutputArchive model_archive;
  model.save(model_archive);
  archive.write("model", model_archive);
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);

  std::ostringstream payload_stream;
  archive.save_to(payload_stream);
  const std::string payload = payload_stream.str();
  std::string bytes = kMagic;
  append_u64(bytes, payload.size());
  append_u64(bytes, fnv1a64(payload.data(), payload.size()));
  bytes += payload;
  return bytes;
}

TrainingProgress decode_checkpoint(const std::string& bytes, const std::string& path,
                                   Classifier& model, torch::optim::Optimizer& optimizer) {
  const std::string what = "Checkpoint '" + path + "'";
  if (bytes.compare(0, kMagic.size(), kMagic) != 0) {
    fail(what + " is not a train_mnist checkpoint (expected it to start with '" +
         kMagic.substr(0, kMagic.size() - 1) + "')");
  }
  if (bytes.size() < kHeaderSize) {
    fail(what + " is truncated: " + std::to_string(bytes.size()) + " bytes, shorter than its " +
         std::to_string(kHeaderSize) + "-byte header");
  }
  const uint64_t length = read_u64(bytes, kMagic.size());
  const uint64_t checksum = read_u64(bytes, kMagic.size() + 8);
  const uint64_t actual_length = bytes.size() - kHeaderSize;
  if (actual_length != length) {
    fail(what + (actual_length < length ? " is truncated" : " has trailing bytes") + ": " +
         std::to_string(actual_length) + " payload bytes, expected " + std::to_string(length));
  }
  if (fnv1a64(bytes.data() + kHeaderSize, length) != checksum) {
    fail(what + " is corrupt: its payload does not match the checksum in its header");
  }

  torch::serialize::InputArchive archive;
  TrainingProgress progress;
  // A scratch model of the same kind takes the parameters first, so a file
  // that fails half way leaves `model` as it was.
  std::shared_ptr<Classifier> scratch = make_model(model.kind());
  try {
    std::istringstream payload(bytes.substr(kHeaderSize));
    archive.load_from(payload);
    c10::IValue signature_text;
    archive.read("signature", signature_text);
    const ModelSignature found = ModelSignature::parse(signature_text.toStringRef(), what);
    const ModelSignature expected = ModelSignature::of(model);
    const std::string difference = found.difference(expected);
    if (!difference.empty()) {
      fail(what + " was written for another model (" + difference +
           ", checkpoint vs this run); expected a checkpoint of model " + expected.kind +
           " with the same parameter names and shapes");
    }
    progress.epochs_completed = read_int(archive, "progress.epochs_completed");
    progress.best_test_loss = read_double(archive, "progress.best_test_loss");
    progress.best_epoch = read_int(archive, "progress.best_epoch");
    progress.epochs_without_improvement = read_int(archive, "progress.epochs_without_improvement");
    progress.last_test_loss = read_double(archive, "progress.last_test_loss");
    progress.last_test_accuracy = read_double(archive, "progress.last_test_accuracy");
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    scratch->load(model_archive);
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    optimizer.load(optimizer_archive);
  } catch (const chorus::Error&) {
    throw;
  } catch (const std::exception& e) {
    // LibTorch's messages carry a C++ backtrace; its first line is the reason.
    std::string reason = e.what();
    reason = reason.substr(0, reason.find('\n'));
    fail(what + " cannot be read as a train_mnist checkpoint: " + reason);
  }
  torch::NoGradGuard no_grad;
  const auto source = scratch->named_parameters();
  for (auto& item : model.named_parameters()) item.value().copy_(source[item.key()]);
  return progress;
}

std::string read_checkpoint_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("Cannot open checkpoint '" + path + "': " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail("Cannot read checkpoint '" + path + "': " + std::strerror(errno));
  return bytes;
}

TrainingProgress load_checkpoint(const std::string& path, Classifier& model,
                                 torch::optim::Optimizer& optimizer) {
  return decode_checkpoint(read_checkpoint_file(path), path, model, optimizer);
}

std::string last_checkpoint_path(const std::string& directory) { return directory + "/last.ckpt"; }
std::string best_checkpoint_path(const std::string& directory) { return directory + "/best.ckpt"; }

}  // namespace train_mnist
