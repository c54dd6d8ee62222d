#include "chorus/torch/checkpoint/checkpoint_manager.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>

#include "chorus/atomic_file.h"
#include "chorus/chorus.h"
#include "chorus/torch/state_broadcast.h"

namespace chorus {
namespace torch {
namespace {

namespace fs = std::filesystem;

// The manager's own state, inside each checkpoint's extras.
const char* const kStepKey = "chorus.checkpoint_manager.step";
const char* const kBestKey = "chorus.checkpoint_manager.best_metric";
const char* const kCheckpointPrefix = "checkpoint-";
const char* const kCheckpointSuffix = ".ckpt";

// The error message of `action` ("" when it returned).
std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const std::exception& e) {
    return e.what()[0] != '\0' ? e.what() : "unknown error";
  }
  return "";
}

// "checkpoint-<step>.ckpt" -> step; -1 for any other name.
int64_t step_of(const std::string& file) {
  const std::string prefix = kCheckpointPrefix, suffix = kCheckpointSuffix;
  if (file.size() <= prefix.size() + suffix.size() || file.rfind(prefix, 0) != 0 ||
      file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return -1;
  }
  const std::string digits = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 18) return -1;
  return std::stoll(digits);
}

}  // namespace

CheckpointManager::CheckpointManager(CheckpointManagerOptions options)
    : options_(std::move(options)), best_metric_(worst_metric(options_.mode)) {
  if (options_.directory.empty()) throw Error(Status::InvalidArgument("CheckpointManager: directory is empty; expected a folder"));
  if (options_.keep_last < 1) {
    throw Error(Status::InvalidArgument("CheckpointManager: keep_last=" + std::to_string(options_.keep_last) + " is invalid; expected >= 1"));
  }
  if (!(options_.min_delta >= 0)) {
    throw Error(Status::InvalidArgument("CheckpointManager: min_delta=" + std::to_string(options_.min_delta) + " is invalid; expected >= 0"));
  }
  if (!options_.every_rank_writes && (options_.writer_rank < 0 || options_.writer_rank >= chorus::size())) {
    throw Error(Status::InvalidArgument("CheckpointManager: writer_rank=" + std::to_string(options_.writer_rank) +
         " is invalid; expected a rank in [0, " + std::to_string(chorus::size()) + ")"));
  }
  std::string error;
  if (is_writer()) {
    std::error_code ec;
    fs::create_directories(options_.directory, ec);
    if (ec || !fs::is_directory(options_.directory)) {
      error = "Cannot use checkpoint folder '" + options_.directory + "': " +
              (ec ? ec.message() : "not a directory") + " (expected a writable folder)";
    }
  }
  error = agree_on_error(error, options_.name + ".folder", options_.process_set);
  if (!error.empty()) throw Error(Status::InvalidArgument(error));
}

bool CheckpointManager::is_writer() const {
  return options_.every_rank_writes || chorus::rank() == options_.writer_rank;
}

std::string CheckpointManager::checkpoint_path(int64_t step) const {
  return options_.directory + "/" + kCheckpointPrefix + std::to_string(step) + kCheckpointSuffix;
}

std::string CheckpointManager::best_path() const { return options_.directory + "/best.ckpt"; }

std::vector<int64_t> CheckpointManager::steps() const { return checkpoint_steps_in(options_.directory); }

std::vector<int64_t> checkpoint_steps_in(const std::string& directory) {
  std::vector<int64_t> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    const int64_t step = step_of(entry.path().filename().string());
    if (step >= 0 && entry.is_regular_file()) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::string latest_checkpoint_in(const std::string& directory) {
  const std::vector<int64_t> steps = checkpoint_steps_in(directory);
  return steps.empty() ? "" : directory + "/" + kCheckpointPrefix + std::to_string(steps.back()) + kCheckpointSuffix;
}

void CheckpointManager::prune() const {
  const std::vector<int64_t> present = steps();
  const size_t keep = static_cast<size_t>(options_.keep_last);
  for (size_t i = 0; i + keep < present.size(); ++i) {
    std::error_code ec;
    fs::remove(checkpoint_path(present[i]), ec);  // best effort: a leftover is harmless
  }
}

void CheckpointManager::save(const CheckpointContents& contents, int64_t step) {
  save(contents, step, std::numeric_limits<double>::quiet_NaN());
}

bool CheckpointManager::save(const CheckpointContents& contents, int64_t step, double metric) {
  if (step < 0) throw Error(Status::InvalidArgument("CheckpointManager::save: step=" + std::to_string(step) + " is invalid; expected >= 0"));
  // With one writer, its metric decides for every rank.
  if (!options_.every_rank_writes) {
    metric = broadcast_scalar(metric, options_.writer_rank, options_.name + ".metric", options_.process_set);
  }
  const bool best = improves(options_.mode, metric, best_metric_, options_.min_delta);
  const double best_after = best ? metric : best_metric_;
  std::string error;
  if (is_writer()) {
    error = error_of([&] {
      CheckpointExtras extras = contents.extras() != nullptr ? *contents.extras() : CheckpointExtras();
      extras.set_int(kStepKey, step);
      extras.set_double(kBestKey, best_after);
      CheckpointContents with_state = contents;
      with_state.with_extras(extras);
      const std::string bytes = encode_checkpoint(with_state);
      write_file_atomically(checkpoint_path(step), bytes, "checkpoint");
      if (best) write_file_atomically(best_path(), bytes, "checkpoint");
      prune();
    });
  }
  error = agree_on_error(error, options_.name + ".save", options_.process_set);
  if (!error.empty()) throw Error(Status::InvalidArgument(error));
  best_metric_ = best_after;
  return best;
}

int64_t CheckpointManager::restore(const std::string& path, const CheckpointContents& contents,
                                   const std::string& what) {
  CheckpointExtras extras;
  CheckpointContents with_state = contents;
  with_state.with_extras(extras);
  if (options_.every_rank_writes) {
    std::string error = path.empty() ? what : error_of([&] { load_checkpoint_file(path, with_state); });
    error = agree_on_error(error, options_.name + ".restore", options_.process_set);
    if (!error.empty()) throw Error(Status::InvalidArgument(error));
  } else {
    const std::string agreed = broadcast_bytes(is_writer() ? path : std::string(), options_.writer_rank,
                                               options_.name + ".path", options_.process_set);
    if (agreed.empty()) throw Error(Status::InvalidArgument(broadcast_bytes(is_writer() ? what : std::string(), options_.writer_rank,
                                             options_.name + ".missing", options_.process_set)));
    restore_checkpoint(agreed, with_state, options_.writer_rank, options_.process_set,
                       options_.name + ".restore");
  }
  const int64_t step = extras.get_int(kStepKey, -1);
  best_metric_ = extras.get_double(kBestKey, worst_metric(options_.mode));
  extras.remove(kStepKey);
  extras.remove(kBestKey);
  if (contents.extras() != nullptr) *contents.extras() = std::move(extras);
  return step;
}

int64_t CheckpointManager::restore_latest(const CheckpointContents& contents) {
  std::string path;
  if (is_writer()) {
    const std::vector<int64_t> present = steps();
    if (!present.empty()) path = checkpoint_path(present.back());
  }
  return restore(path, contents,
                 "No checkpoint in '" + options_.directory + "' to resume from (expected " + kCheckpointPrefix +
                     "<step>" + kCheckpointSuffix + " files written by CheckpointManager::save)");
}

int64_t CheckpointManager::resume(const CheckpointContents& contents) {
  const bool have = is_writer() && !steps().empty();
  if (!options_.every_rank_writes) {
    const int64_t writer_has = broadcast_scalar(static_cast<int64_t>(have), options_.writer_rank,
                                                options_.name + ".resume", options_.process_set);
    return writer_has != 0 ? restore_latest(contents) : 0;
  }
  const std::string here = "rank " + std::to_string(chorus::rank()) + " has ";
  const std::string lacking = agree_on_error(have ? "" : here + "none", options_.name + ".resume_none",
                                             options_.process_set);
  const std::string holding = agree_on_error(have ? here + "some" : "", options_.name + ".resume_some",
                                             options_.process_set);
  if (holding.empty()) return 0;
  if (!lacking.empty()) {
    throw Error(Status::InvalidArgument("Cannot resume from the ranks' own checkpoint folders ('" + options_.directory + "'): " + holding +
         " and " + lacking + "; expected every rank to have checkpoints or none"));
  }
  return restore_latest(contents);
}

int64_t CheckpointManager::restore_best(const CheckpointContents& contents) {
  std::string path;
  if (is_writer() && fs::exists(best_path())) path = best_path();
  return restore(path, contents, "Cannot open checkpoint '" + best_path() + "': No such file or directory");
}

}  // namespace torch
}  // namespace chorus
