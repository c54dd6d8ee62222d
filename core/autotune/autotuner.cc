#include "autotune/autotuner.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/logging.h"

namespace chorus {
namespace {

// Fixed, so a job's search replays exactly given the same measurements.
constexpr uint64_t kSearchSeed = 0x63686f727573;  // "chorus"
// The start setting plus random candidates before the model guides.
constexpr int kInitialSamples = 4;
constexpr int kRemeasureEvery = 4;
// Leave the start setting only for one estimated at least this much faster
// (log of the ratio): smaller gains are within what noise fakes here.
const double kMinGain = std::log(1.03);

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

Status Autotuner::create(const Config& config, std::vector<TuningKnob> knobs, int rank,
                         std::unique_ptr<Autotuner>* out) {
  std::unique_ptr<Autotuner> tuner(new Autotuner(config, std::move(knobs), rank));
  if (rank == 0) {
    SearchOptions options;
    options.seed = kSearchSeed;
    options.max_samples = static_cast<int>(config.autotune_samples);
    options.initial_samples = std::min(kInitialSamples, options.max_samples);
    options.remeasure_every = kRemeasureEvery;
    options.min_gain = kMinGain;
    CHORUS_RETURN_IF_ERROR(
        BayesianSearch::create(tuner->space_.dimensions(), tuner->space_.start(), options, &tuner->search_));
    if (!config.autotune_log_path.empty()) {
      std::vector<std::string> columns;
      for (const TuningKnob& knob : tuner->space_.knobs()) columns.push_back(knob.name);
      CHORUS_RETURN_IF_ERROR(tuner->log_.open(config.autotune_log_path, columns));
    }
    tuner->publish(tuner->space_.settings_at(tuner->search_->next()), false);
    std::string searched;
    for (const TuningKnob& knob : tuner->space_.knobs()) {
      if (knob.searched()) searched += knob.description + ", ";
    }
    CHORUS_LOG(kInfo, "autotune: searching " << searched << "over " << tuner->search_->candidates()
                                             << " candidates with " << config.autotune_samples << " samples of "
                                             << config.autotune_steps_per_sample << " steps and "
                                             << config.autotune_min_sample_ms << " ms at least");
  }
  *out = std::move(tuner);
  return Status::OK();
}

Autotuner::Autotuner(const Config& config, std::vector<TuningKnob> knobs, int rank)
    : rank_(rank),
      space_(std::move(knobs)),
      warmup_steps_(config.autotune_warmup_steps),
      steps_per_sample_(config.autotune_steps_per_sample),
      min_sample_seconds_(config.autotune_min_sample_ms / 1000.0) {}

std::vector<uint64_t> Autotuner::words() const {
  if (rank_ != 0) return std::vector<uint64_t>(TuningMessage::words(space_.knobs().size()), 0);
  return published_.encode();
}

std::optional<TuningSettings> Autotuner::receive(const std::vector<uint64_t>& words, uint64_t cycle) {
  const TuningMessage message = TuningMessage::decode(words, space_.knobs().size());
  if (message.generation == 0 || message.generation == applied_generation_) return std::nullopt;
  applied_generation_ = message.generation;
  applied_frozen_ = message.frozen;
  CHORUS_LOG(kDebug, "autotune: cycle " << cycle << " applies generation " << message.generation << " ("
                                        << (message.frozen ? std::string("frozen")
                                                           : "sample " + std::to_string(message.generation - 1))
                                        << "): " << space_.describe(message.settings));
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
  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  if (++window_steps_ < steps_per_sample_ || seconds < min_sample_seconds_) return;
  window_open_ = false;
  // All of the window's time, slow steps included: a setting can cause
  // them (waits, wake-ups), and a median step time would flatter it.
  finish_sample(seconds > 0.0 ? window_bytes_ / seconds : 0.0);
}

void Autotuner::finish_sample(double bytes_per_second) {
  const size_t sample = search_->samples().size();
  const BayesianSearch::Kind kind = search_->next_kind();
  const TuningSettings measured = published_.settings;
  // The search works on the logarithm: a machine that slows down by a
  // factor slows every setting by the same factor, which the log turns into
  // the additive drift the model separates from the settings' effect.
  const Status recorded = search_->record(std::log(std::max(bytes_per_second, 1.0)));
  if (!recorded.ok()) {
    freeze("the search failed: " + recorded.message());
    return;
  }
  const bool best = search_->samples().back().best;
  CHORUS_LOG(kDebug, "autotune: sample " << sample << " (" << search_kind_name(kind) << "): " << space_.describe(measured)
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
  const TuningSettings kept = space_.settings_at(search_->choice());
  const bool start = search_->choice() == space_.start() && search_->best() != space_.start();
  publish(kept, true);
  const double estimate = search_->samples().empty() ? 0.0 : std::exp(search_->choice_estimate());
  const LogLevel level = search_->done() ? LogLevel::kInfo : LogLevel::kWarning;
  if (level >= log_level()) {
    std::ostringstream message;
    message << "autotune: done " << why << "; keeping " << space_.describe(kept) << " (estimated " << estimate
            << " bytes/s)";
    if (start) {
      message << "; the best measured, " << space_.describe(space_.settings_at(search_->best()))
              << ", was not clearly better than the start";
    }
    log_message(level, message.str());
  }
  log_row(search_->samples().size(), "frozen", kept, estimate, true);
  log_.close();
}

void Autotuner::log_row(size_t sample, const char* kind, const TuningSettings& settings, double score, bool best) {
  const Status written = log_.row(sample, kind, space_.format(settings), score, best);
  if (!written.ok()) CHORUS_LOG(kWarning, written.message());
}

}  // namespace chorus
