#include "autotuner.h"

#include <algorithm>

#include "logging.h"

namespace chorus {
namespace {

// Fixed, so a job's search replays exactly given the same measurements.
constexpr uint64_t kSearchSeed = 0x63686f727573;  // "chorus"
// The start setting plus random candidates before the model guides.
constexpr int kInitialSamples = 4;
constexpr int kRemeasureEvery = 4;

bool is_reduction(Response::Type type) {
  return type == Response::Type::kAllreduce || type == Response::Type::kReducescatter;
}

// Collectives a training step repeats under the same name (barrier names
// carry a counter; errors, joins and shutdowns are not work).
bool marks_steps(Response::Type type) {
  switch (type) {
    case Response::Type::kAllreduce:
    case Response::Type::kAllgather:
    case Response::Type::kBroadcast:
    case Response::Type::kAlltoall:
    case Response::Type::kReducescatter:
      return true;
    default:
      return false;
  }
}

}  // namespace

Status Autotuner::create(const Config& config, bool shm_active, int rank, std::unique_ptr<Autotuner>* out) {
  std::unique_ptr<Autotuner> tuner(new Autotuner(config, shm_active, rank));
  if (rank == 0) {
    SearchOptions options;
    options.seed = kSearchSeed;
    options.max_samples = static_cast<int>(config.autotune_samples);
    options.initial_samples = std::min(kInitialSamples, options.max_samples);
    options.remeasure_every = kRemeasureEvery;
    CHORUS_RETURN_IF_ERROR(
        BayesianSearch::create(tuner->space_.dimensions(), tuner->space_.start(), options, &tuner->search_));
    if (!config.autotune_log_path.empty()) CHORUS_RETURN_IF_ERROR(tuner->log_.open(config.autotune_log_path));
    tuner->publish(tuner->space_.settings_at(tuner->search_->next()), false);
    CHORUS_LOG(kInfo, "autotune: searching "
                          << (tuner->space_.tunes_fusion_threshold() ? "fusion threshold, " : "")
                          << (tuner->space_.tunes_cycle_time() ? "cycle time, " : "")
                          << (tuner->space_.tunes_algorithm() ? "algorithm, " : "") << "over "
                          << tuner->search_->candidates() << " candidates with " << config.autotune_samples
                          << " samples of " << config.autotune_steps_per_sample << " steps");
  }
  *out = std::move(tuner);
  return Status::OK();
}

Autotuner::Autotuner(const Config& config, bool shm_active, int rank)
    : rank_(rank),
      space_(config, shm_active),
      warmup_steps_(config.autotune_warmup_steps),
      steps_per_sample_(config.autotune_steps_per_sample) {}

std::vector<uint64_t> Autotuner::words() const {
  if (rank_ != 0) return std::vector<uint64_t>(TuningMessage::kWords, 0);
  return published_.encode();
}

std::optional<TuningSettings> Autotuner::receive(const std::vector<uint64_t>& words, uint64_t cycle) {
  const TuningMessage message = TuningMessage::decode(words);
  if (message.generation == 0 || message.generation == applied_generation_) return std::nullopt;
  applied_generation_ = message.generation;
  applied_frozen_ = message.frozen;
  CHORUS_LOG(kDebug, "autotune: cycle " << cycle << " applies generation " << message.generation << " ("
                                        << (message.frozen ? std::string("frozen")
                                                           : "sample " + std::to_string(message.generation - 1))
                                        << "): " << describe(message.settings));
  return message.settings;
}

void Autotuner::observe(const std::vector<Response>& responses, Clock::time_point now) {
  if (rank_ != 0 || published_.frozen) return;
  double bytes = 0.0;
  bool boundary = false;
  for (const Response& r : responses) {
    if (is_reduction(r.type)) bytes += static_cast<double>(r.elements) * static_cast<double>(dtype_size(r.dtype));
    if (marks_steps(r.type) && step_names_.count(r.name)) boundary = true;
  }
  if (boundary) step_names_.clear();
  for (const Response& r : responses) {
    if (marks_steps(r.type)) step_names_.insert(r.name);
  }
  // This cycle's work belongs to the step that starts at the boundary.
  if (boundary) on_step_boundary(now);
  if (window_open_) window_bytes_ += bytes;
}

void Autotuner::on_step_boundary(Clock::time_point now) {
  ++boundaries_;
  if (boundaries_ < std::max<int64_t>(warmup_steps_, 1)) return;
  if (applied_generation_ != published_.generation) return;  // not in effect yet
  if (!window_open_) {
    window_open_ = true;
    window_start_ = now;
    window_steps_ = 0;
    window_bytes_ = 0.0;
    return;
  }
  if (++window_steps_ < steps_per_sample_) return;
  window_open_ = false;
  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  // Clocks are monotonic, but two boundaries could share a tick.
  finish_sample(seconds > 0.0 ? window_bytes_ / seconds : 0.0);
}

void Autotuner::finish_sample(double bytes_per_second) {
  const size_t sample = search_->samples().size();
  const BayesianSearch::Kind kind = search_->next_kind();
  const TuningSettings measured = published_.settings;
  const Status recorded = search_->record(bytes_per_second);
  if (!recorded.ok()) {
    freeze("the search failed: " + recorded.message());
    return;
  }
  const bool best = search_->samples().back().best;
  CHORUS_LOG(kDebug, "autotune: sample " << sample << " (" << search_kind_name(kind) << "): " << describe(measured)
                                         << ": " << bytes_per_second << " bytes/s" << (best ? " (best so far)" : ""));
  log_row(sample, search_kind_name(kind), measured, bytes_per_second, best);
  if (search_->done()) {
    freeze("after " + std::to_string(search_->samples().size()) + " samples");
  } else {
    publish(space_.settings_at(search_->next()), false);
  }
}

void Autotuner::publish(const TuningSettings& settings, bool frozen) {
  published_.generation += 1;
  published_.settings = settings;
  published_.frozen = frozen;
}

void Autotuner::freeze(const std::string& why) {
  const TuningSettings best = space_.settings_at(search_->best());
  publish(best, true);
  double start_score = 0.0;
  for (const auto& s : search_->samples()) {
    if (s.kind == BayesianSearch::Kind::kStart) start_score = s.score;
  }
  const LogLevel level = search_->done() ? LogLevel::kInfo : LogLevel::kWarning;
  if (level >= log_level()) {
    log_message(level, "autotune: done " + why + "; keeping " + describe(best) + " (estimated " +
                           std::to_string(search_->best_estimate()) + " bytes/s; the start setting measured " +
                           std::to_string(start_score) + " bytes/s)");
  }
  log_row(search_->samples().size(), "frozen", best, search_->best_estimate(), true);
  log_.close();
}

void Autotuner::log_row(size_t sample, const char* kind, const TuningSettings& settings, double score, bool best) {
  const Status written = log_.row(sample, kind, settings, score, best);
  if (!written.ok()) CHORUS_LOG(kWarning, written.message());
}

}  // namespace chorus
