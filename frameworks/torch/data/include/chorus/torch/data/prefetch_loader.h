// PrefetchLoader: prepares the next batches in background threads while the
// current training step runs (PyTorch's DataLoader with num_workers and
// prefetch_factor; tf.data's prefetch).
//
// Batches come out in the sampler's order whatever the number of workers:
// workers draw index batches from the sampler one at a time under a lock, so
// batch k is the sampler's k-th next(); each worker builds its batch (the
// make_batch callback, e.g. an index_select of preloaded tensors, or a
// torch::data dataset's get_batch) outside the lock, and the consumer takes
// batch k only once batch k-1 was taken. A sampler that is deterministic
// from its seed (chorus::torch::DistributedSampler) therefore gives the same
// batches, in the same order, at any worker count and depth.
//
// At most `depth` batches are drawn but not yet taken by the consumer (ready
// or being built), which bounds the memory held. The workers are woken to
// refill once the consumer has taken half of them (depth / 2 or fewer left),
// so that a wake-up builds several batches. Threads wait on condition
// variables, never spin: ranks are oversubscribed on small machines.
//
// An exception from the sampler or from make_batch is handed to the consumer
// when it reaches that batch, as a chorus::Error naming the batch number and
// its indices, followed by the original message; the epoch ends there.
//
// Pinned memory: with pin_memory, CPU batches are copied to page-locked
// memory (faster, asynchronous host-to-GPU copies) when this LibTorch has
// CUDA at run time (at::globalContext().hasCUDA()); with a CPU-only LibTorch
// (as on the development machines) there is nothing to pin for and batches
// are handed over as made.
//
// Use (one epoch per reset()):
//   chorus::torch::PrefetchLoader loader(sampler, make_batch, {64, 2, 4});
//   for (epoch...) { sampler.set_epoch(epoch); loader.reset();
//                    while (auto batch = loader.next()) train(batch->data, batch->target); }
// The destructor stops the workers and joins them; a batch being built is
// finished first (make_batch cannot be interrupted) and then dropped.
#pragma once

#include <torch/data/example.h>
#include <torch/data/samplers/base.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace chorus {
namespace torch {

class PrefetchLoader {
 public:
  using Batch = ::torch::data::Example<>;  // data, target
  using Sampler = ::torch::data::samplers::Sampler<std::vector<size_t>>;
  // Builds the batch of these dataset indices. Called on worker threads,
  // several at once when workers > 1: it must be safe to call concurrently.
  using MakeBatch = std::function<Batch(const std::vector<size_t>& indices)>;

  struct Options {
    size_t batch_size = 64;
    int workers = 1;     // background threads building batches
    size_t depth = 4;    // batches drawn ahead of the consumer, at most
    bool pin_memory = false;
  };

  // The sampler must outlive the loader and must not be used elsewhere while
  // an epoch runs. Throws chorus::Error for a missing make_batch, batch_size
  // 0, workers < 1 or depth 0.
  PrefetchLoader(Sampler& sampler, MakeBatch make_batch, Options options);
  ~PrefetchLoader();
  PrefetchLoader(const PrefetchLoader&) = delete;
  PrefetchLoader& operator=(const PrefetchLoader&) = delete;

  // Starts an epoch: waits for the workers to finish what they are building
  // for the previous one, drops its batches not yet taken, resets the
  // sampler (which deals its current epoch) and lets the workers draw ahead.
  void reset();
  // The epoch's next batch in sampler order, waiting for it if needed;
  // nullopt at the end of the epoch. Rethrows a worker's error (see above).
  // Throws chorus::Error when called before the first reset().
  std::optional<Batch> next();

  const Options& options() const { return options_; }

 private:
  struct Slot {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };
  void work();
  Batch build(const std::vector<size_t>& indices) const;

  Sampler& sampler_;
  const MakeBatch make_batch_;
  const Options options_;

  std::mutex mutex_;
  std::condition_variable work_ready_;   // workers: a batch may be drawn, or stop
  std::condition_variable batch_ready_;  // consumer: a slot was filled
  std::condition_variable idle_;         // reset(): no worker is building
  bool started_ = false;        // reset() was called
  bool stopping_ = false;       // destructor: workers exit
  bool sampler_done_ = false;   // the sampler ran out (or failed) this epoch
  uint64_t generation_ = 0;     // epoch counter: stale batches are dropped
  uint64_t next_to_draw_ = 0;   // batch number of the sampler's next next()
  uint64_t next_to_take_ = 0;   // batch number the consumer takes next
  uint64_t end_ = UINT64_MAX;   // batches in this epoch, once known
  int building_ = 0;            // workers inside make_batch
  std::map<uint64_t, Slot> slots_;  // drawn, not yet taken
  std::vector<std::thread> workers_;
};

}  // namespace torch
}  // namespace chorus
