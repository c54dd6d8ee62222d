#include "ops/device_hierarchical_backend.h"

#include <algorithm>
#include <utility>

namespace chorus {
namespace {

// Scratch starts at this size, so that a job of small allreduces allocates
// once.
constexpr size_t kMinScratchBytes = size_t{64} << 10;

// The works of an allreduce's steps, queued on one stream in order.
class StepsWork : public Work {
 public:
  explicit StepsWork(std::vector<WorkPtr> steps) : steps_(std::move(steps)) {}
  bool test() override {
    for (WorkPtr& step : steps_) {
      if (!step->test()) return false;
    }
    return true;
  }
  // The first step's error, without waiting for the steps after it: a
  // failed NCCL step has ended its communicator, and the runtime stops the
  // job after a failed collective.
  Status wait() override {
    for (WorkPtr& step : steps_) CHORUS_RETURN_IF_ERROR(step->wait());
    return Status::OK();
  }

 private:
  std::vector<WorkPtr> steps_;
};

const void* advance(const void* base, int64_t elements, size_t element_size) {
  return static_cast<const char*>(base) + static_cast<size_t>(elements) * element_size;
}
void* advance(void* base, int64_t elements, size_t element_size) {
  return static_cast<char*>(base) + static_cast<size_t>(elements) * element_size;
}

}  // namespace

HierarchicalShares HierarchicalShares::of(int64_t count, int local_size) {
  HierarchicalShares shares;
  shares.local_size = local_size;
  shares.body = count / local_size;
  shares.remainder = count % local_size;
  return shares;
}

int64_t HierarchicalShares::share(int local_rank) const {
  return body + (local_rank == local_size - 1 ? remainder : 0);
}

std::vector<int64_t> HierarchicalShares::body_counts() const {
  return std::vector<int64_t>(static_cast<size_t>(local_size), body);
}

std::vector<int64_t> HierarchicalShares::remainder_counts() const {
  std::vector<int64_t> counts(static_cast<size_t>(local_size), 0);
  counts.back() = remainder;
  return counts;
}

DeviceHierarchicalBackend::DeviceHierarchicalBackend(std::unique_ptr<Backend> flat, DeviceHierarchy hierarchy,
                                                     const HierarchicalSelection& selection)
    : DeviceForwardingBackend(std::move(flat)), hierarchy_(std::move(hierarchy)), selection_(selection) {}

DeviceHierarchicalBackend::~DeviceHierarchicalBackend() {
  // NCCL's communicators first: closing one ends its kernels (after a close
  // timeout, by aborting it), which a wait for the stream would otherwise
  // wait for. Then the cross backend, which waits for the stream before it
  // frees its staging memory; then the scratch, which no queued work uses
  // any more; the communicators last.
  hierarchy_.local.reset();
  close_fallback();
  hierarchy_.cross.reset();
  scratch_.reset();
  hierarchy_.device.reset();
  hierarchy_.resources.reset();
}

bool DeviceHierarchicalBackend::fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const {
  return !selection_.takes(count, dtype, op) && fallback().fuses_in_place(count, dtype, op);
}

void DeviceHierarchicalBackend::abort(const std::string& reason) {
  fallback().abort(reason);
  hierarchy_.local->abort(reason);
  hierarchy_.cross->abort(reason);
}

WorkPtr DeviceHierarchicalBackend::allreduce(const void* input, void* output, int64_t count, DataType dtype,
                                             ReduceOp op, double factor) {
  if (!selection_.takes(count, dtype, op)) return fallback().allreduce(input, output, count, dtype, op, factor);
  return hierarchical_allreduce(input, output, count, dtype, op, factor);
}

Status DeviceHierarchicalBackend::reserve_scratch(size_t bytes) {
  if (scratch_ != nullptr && bytes <= scratch_bytes_) return Status::OK();
  const size_t grown = std::max({bytes, 2 * scratch_bytes_, kMinScratchBytes});
  if (scratch_ != nullptr) hierarchy_.device->record()->synchronize();
  scratch_.reset();
  scratch_bytes_ = 0;
  CHORUS_RETURN_IF_ERROR(hierarchy_.device->allocate(grown, &scratch_));
  scratch_bytes_ = grown;
  return Status::OK();
}

WorkPtr DeviceHierarchicalBackend::hierarchical_allreduce(const void* input, void* output, int64_t count,
                                                          DataType dtype, ReduceOp op, double factor) {
  Backend& local = *hierarchy_.local;
  Backend& cross = *hierarchy_.cross;
  if (count == 0) return finished_work(Status::OK());
  if (hierarchy_.local_size == 1) return cross.allreduce(input, output, count, dtype, op, factor);

  const HierarchicalShares shares = HierarchicalShares::of(count, hierarchy_.local_size);
  const size_t element_size = dtype_size(dtype);
  const int64_t mine = shares.share(hierarchy_.local_rank);
  const Status reserved = reserve_scratch(static_cast<size_t>(mine) * element_size);
  if (!reserved.ok()) return finished_work(reserved);
  void* share = scratch_.get();
  // The remainder sits after the even part, in the message and in the last
  // local rank's share alike.
  const int64_t even = shares.body * hierarchy_.local_size;
  void* share_remainder = advance(share, shares.body, element_size);

  // Every step is queued even when one fails at once (its arguments): the
  // peers queue theirs, and a rank that skipped its part of a collective
  // would leave them waiting in it. The work's outcome is the first error.
  std::vector<WorkPtr> steps;
  if (shares.body > 0) steps.push_back(local.reducescatter(input, share, shares.body_counts(), dtype, op, 1.0));
  if (shares.remainder > 0) {
    steps.push_back(local.reducescatter(advance(input, even, element_size), share_remainder,
                                        shares.remainder_counts(), dtype, op, 1.0));
  }
  if (mine > 0) steps.push_back(cross.allreduce(share, share, mine, dtype, op, factor));
  if (shares.body > 0) steps.push_back(local.allgatherv(share, output, shares.body_counts(), dtype));
  if (shares.remainder > 0) {
    steps.push_back(local.allgatherv(share_remainder, advance(output, even, element_size),
                                     shares.remainder_counts(), dtype));
  }
  return std::make_unique<StepsWork>(std::move(steps));
}

}  // namespace chorus
