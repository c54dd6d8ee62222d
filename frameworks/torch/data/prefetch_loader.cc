// PrefetchLoader: workers draw index batches in order, build them in
// parallel, and the consumer takes them by batch number.
#include "chorus/torch/data/prefetch_loader.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <sstream>
#include <string>
#include <utility>

#include "chorus/status.h"

namespace chorus {
namespace torch {
namespace {

std::string describe(const std::vector<size_t>& indices) {
  constexpr size_t kShown = 8;
  std::ostringstream out;
  out << indices.size() << " indices [";
  for (size_t i = 0; i < indices.size() && i < kShown; ++i) out << (i ? ", " : "") << indices[i];
  if (indices.size() > kShown) out << ", ...";
  out << "]";
  return out.str();
}

// The error the consumer sees: which batch, which step of making it, and
// the original message.
std::exception_ptr wrap_current(const std::string& context) {
  std::string message;
  try {
    throw;
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "unknown exception";
  }
  return std::make_exception_ptr(Error(Status::Aborted("PrefetchLoader: " + context + ": " + message)));
}

::torch::Tensor pinned(const ::torch::Tensor& tensor) {
  if (!tensor.defined() || !tensor.device().is_cpu() || tensor.is_pinned()) return tensor;
  return tensor.pin_memory();
}

}  // namespace

PrefetchLoader::PrefetchLoader(Sampler& sampler, MakeBatch make_batch, Options options)
    : sampler_(sampler), make_batch_(std::move(make_batch)), options_(options) {
  const std::string what = "PrefetchLoader: ";
  if (!make_batch_) {
    throw Error(Status::InvalidArgument(what + "make_batch is empty; expected a function that "
                                               "builds the batch of a list of dataset indices"));
  }
  if (options_.batch_size == 0) {
    throw Error(Status::InvalidArgument(what + "batch_size is 0; expected at least 1"));
  }
  if (options_.workers < 1) {
    throw Error(Status::InvalidArgument(what + "workers is " + std::to_string(options_.workers) +
                                        "; expected at least 1 background thread"));
  }
  if (options_.depth == 0) {
    throw Error(Status::InvalidArgument(
        what + "depth is 0; expected at least 1 batch prepared ahead of the consumer"));
  }
  try {
    for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { work(); });
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    for (auto& worker : workers_) worker.join();
    throw;
  }
}

PrefetchLoader::~PrefetchLoader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void PrefetchLoader::reset() {
  std::unique_lock<std::mutex> lock(mutex_);
  // Stop drawing for the old epoch and let what is being built finish (it
  // is dropped: its generation is stale), so that at most `depth` batches
  // are ever in flight.
  sampler_done_ = true;
  ++generation_;
  idle_.wait(lock, [this] { return building_ == 0; });
  slots_.clear();
  // Workers call the sampler only under mutex_, which this thread holds.
  sampler_.reset(::torch::nullopt);
  next_to_draw_ = 0;
  next_to_take_ = 0;
  end_ = UINT64_MAX;
  sampler_done_ = false;
  started_ = true;
  lock.unlock();
  work_ready_.notify_all();
}

std::optional<PrefetchLoader::Batch> PrefetchLoader::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!started_) {
    throw Error(Status::PreconditionFailed(
        "PrefetchLoader::next: no epoch started; call reset() before the first next()"));
  }
  batch_ready_.wait(lock, [this] {
    return next_to_take_ >= end_ || slots_.count(next_to_take_) > 0;
  });
  if (next_to_take_ >= end_) return std::nullopt;
  auto found = slots_.find(next_to_take_);
  Slot slot = std::move(found->second);
  slots_.erase(found);
  ++next_to_take_;
  // Wake the workers only once half the depth is used up, so that each
  // wake-up builds several batches: a thread hand-off costs far more than
  // building a small batch when ranks share the cores. No starvation: the
  // batch the consumer waits for is then being built, or none is drawn and
  // that is below the mark.
  const bool refill = next_to_draw_ - next_to_take_ <= options_.depth / 2;
  lock.unlock();
  if (refill) work_ready_.notify_all();
  if (slot.error) std::rethrow_exception(slot.error);
  return std::move(slot.batch);
}

PrefetchLoader::Batch PrefetchLoader::build(const std::vector<size_t>& indices) const {
  Batch batch = make_batch_(indices);
  // Page-locked memory only helps copies to a GPU, and needs CUDA to allocate.
  if (options_.pin_memory && at::globalContext().hasCUDA()) {
    batch.data = pinned(batch.data);
    batch.target = pinned(batch.target);
  }
  return batch;
}

void PrefetchLoader::work() {
  // Intra-op threads are per calling thread under OpenMP: give this one the
  // process's setting (at::set_num_threads), not the default of one per core.
  at::init_num_threads();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [this] {
      return stopping_ || (started_ && !sampler_done_ && next_to_draw_ < next_to_take_ + options_.depth);
    });
    if (stopping_) return;
    // Drawing under the lock numbers the batches in the sampler's order.
    const uint64_t number = next_to_draw_++;
    const uint64_t generation = generation_;
    std::vector<size_t> indices;
    try {
      auto drawn = sampler_.next(options_.batch_size);
      if (!drawn) {
        sampler_done_ = true;
        end_ = number;
        batch_ready_.notify_all();
        continue;
      }
      indices = std::move(*drawn);
    } catch (...) {
      sampler_done_ = true;
      end_ = number + 1;
      slots_[number].error =
          wrap_current("the sampler failed to give batch " + std::to_string(number) + " of the epoch");
      batch_ready_.notify_all();
      continue;
    }
    ++building_;
    lock.unlock();
    Slot slot;
    try {
      slot.batch = build(indices);
    } catch (...) {
      slot.error = wrap_current("building batch " + std::to_string(number) + " of the epoch (" +
                                describe(indices) + ") failed");
    }
    lock.lock();
    if (--building_ == 0) idle_.notify_all();
    if (generation != generation_) continue;  // reset() started another epoch
    if (slot.error) {
      // The epoch ends at the failed batch: the consumer gets its error, then
      // nullopt; batches after it are not handed out.
      sampler_done_ = true;
      if (number + 1 < end_) end_ = number + 1;
    }
    slots_[number] = std::move(slot);
    batch_ready_.notify_all();
  }
}

}  // namespace torch
}  // namespace chorus
