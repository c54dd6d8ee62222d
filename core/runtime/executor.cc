#include "runtime/executor.h"

#include <algorithm>
#include <string>

namespace chorus {
namespace {

int64_t row_elements(const Shape& shape) {
  int64_t row = 1;
  for (size_t i = 1; i < shape.size(); ++i) row *= shape[i];
  return row;
}

}  // namespace

// A broadcast's root is a rank of the job; the set's backends number their
// ranks by set rank.
int Executor::set_root(const Run& run, int root) {
  if (run.place.ranks == nullptr) return root;
  const auto& ranks = *run.place.ranks;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == root) return static_cast<int>(i);
  }
  return root;  // the API admits members only
}

Status allocate_output(TensorEntry& entry, const Shape& shape, DeviceOps* device, Tensor* out) {
  const DataType dtype = entry.request.dtype;
  const Device where = entry.request.device;
  if (entry.allocator) {
    Status allocated;
    try {
      allocated = entry.allocator(shape, dtype, where, out);
    } catch (const std::exception& e) {
      allocated = Status::Internal("The output allocator for '" + entry.request.name + "' threw: " + e.what());
    }
    CHORUS_RETURN_IF_ERROR(allocated);
    if (out->shape != shape || out->dtype != dtype || (out->data == nullptr && num_elements(shape) > 0)) {
      return Status::InvalidArgument("The output allocator for '" + entry.request.name +
                                     "' returned a tensor of " + shape_to_string(out->shape) + " " +
                                     dtype_name(out->dtype) + "; expected " + shape_to_string(shape) +
                                     " " + dtype_name(dtype));
    }
    entry.handle->set_output(*out, nullptr);
    return Status::OK();
  }
  const size_t bytes = static_cast<size_t>(num_elements(shape)) * dtype_size(dtype);
  std::shared_ptr<void> storage;
  const Status allocated = device->allocate(bytes, &storage);
  if (!allocated.ok()) {
    return Status(allocated.code(), allocated.message() + " for the output of '" + entry.request.name + "'");
  }
  *out = Tensor(storage.get(), dtype, shape, where);
  entry.handle->set_output(*out, std::move(storage));
  return Status::OK();
}

void Executor::abandon_running(const Status& status) {
  std::lock_guard<std::mutex> lock(running_mutex_);
  if (running_ == nullptr) return;
  for (auto& entry : *running_) {
    if (entry) entry->handle->abandon(status);
  }
}

Status Executor::execute(const ExecutionUnit& unit, TensorQueue* queue, Clock::time_point negotiated) {
  Entries entries = queue->take_all_of(unit);
  // Visible to abandon_running() until the entries are completed or handed
  // to the completion queue (whose device work the backends' abort ends).
  struct Running {
    Executor* executor;
    Running(Executor* e, Entries* entries) : executor(e) {
      std::lock_guard<std::mutex> lock(executor->running_mutex_);
      executor->running_ = entries;
    }
    void end() {
      std::lock_guard<std::mutex> lock(executor->running_mutex_);
      executor->running_ = nullptr;
    }
    ~Running() { end(); }
  } running(this, &entries);
  own_errors_.assign(unit.size(), Status::OK());
  if (timeline_->enabled()) {
    for (size_t i = 0; i < unit.size(); ++i) {
      if (entries[i]) timeline_->span(unit[i].name, "NEGOTIATE", entries[i]->enqueued, negotiated);
    }
    span(entries, unit, "WAIT_FOR_OTHER_COLLECTIVES", negotiated);
  }

  const Response& first = unit.front();
  if (first.type == Response::Type::kError) {
    complete_entries(entries, Status(first.error_code, first.error_message));
    if (timeline_->enabled()) timeline_->instant(first.name, "ERROR");
    return Status::OK();
  }
  if (first.type == Response::Type::kJoin) {
    for (auto& entry : entries) {
      if (entry) entry->handle->set_last_joined_rank(first.last_joined_rank);
    }
    complete_entries(entries, Status::OK());
    return Status::OK();
  }

  SetPlace place;
  if (!resolve_set_(first.process_set, &place)) {
    // Only members get here with entries (the runtime skips other sets'
    // responses); a set removed meanwhile fails what it still holds.
    complete_entries(entries, Status::PreconditionFailed("process set " + std::to_string(first.process_set) +
                                                         " does not exist on this rank"));
    return Status::OK();
  }
  Backend* backend = place.backends->select(first.device);
  if (backend == nullptr) {
    const Status status = place.backends->check(first.name, first.device);
    complete_entries(entries, status);
    // A set's refusal (GPU tensors) is the same on every member: nothing
    // ran, so the runtime can go on. The job's own registry lacking a
    // backend is a bug in the argument checks.
    return first.process_set == 0 ? Status::InvalidArgument("No backend in this build supports device " +
                                                            first.device.to_string())
                                  : Status::OK();
  }
  Run run{unit, entries, backend, backend->device_ops(first.device), place};
  // The collective reads the inputs only after their producers are done.
  Status started;
  for (const auto& entry : entries) {
    if (started.ok() && entry && entry->ready) started = run.device->wait(entry->ready);
  }
  WorkPtr work;
  if (started.ok()) started = start(run, &work);
  if (!started.ok() || !work) {
    const Status status = started.ok() ? Status::Internal("a backend returned no work") : started;
    complete_entries(entries, status);
    return status;
  }
  std::shared_ptr<const Event> finished = run.device->record();
  if (work->test() && finished->done()) {
    const Status status = work->wait();
    complete_entries(entries, status, own_errors_);
    return status;
  }
  for (auto& entry : entries) {
    if (entry) entry->handle->set_completion_event(finished);
  }
  running.end();
  completions_.push(InFlightUnit{std::move(entries), own_errors_, std::move(work), std::move(finished)});
  return Status::OK();
}

Status Executor::start(Run& run, WorkPtr* work) {
  const Response& first = run.unit.front();
  TensorEntry* entry = run.entries[0] ? &*run.entries[0] : nullptr;
  const auto began = Clock::now();
  switch (first.type) {
    case Response::Type::kAllreduce: return allreduce(run, work);
    case Response::Type::kAllgather: return allgather(run, work);
    case Response::Type::kAlltoall: return alltoall(run, work);
    case Response::Type::kReducescatter: return reducescatter(run, work);
    case Response::Type::kBroadcast:
      if (entry == nullptr) return Status::Internal("broadcast response without a local entry");
      *work = run.backend->broadcast(entry->output_data, static_cast<int64_t>(entry->bytes()), set_root(run, first.root));
      span(run.entries, run.unit, "BROADCAST", began);
      return Status::OK();
    case Response::Type::kBarrier:
      *work = run.backend->barrier();
      span(run.entries, run.unit, "BARRIER", began);
      return Status::OK();
    default:
      return Status::Internal(std::string("The executor cannot run a ") + response_type_name(first.type) +
                              " response");
  }
}

Status Executor::output_for(Run& run, size_t index, const Shape& shape, bool scratch_if_failed, Tensor* out) {
  TensorEntry& entry = *run.entries[index];
  const Status status = allocate_output(entry, shape, run.device, out);
  if (status.ok()) return Status::OK();
  // Only this rank failed: the others are already in the collective, so this
  // rank takes part too, receiving into scratch memory, and fails the entry.
  own_errors_[index] = status;
  const size_t bytes = static_cast<size_t>(num_elements(shape)) * dtype_size(entry.request.dtype);
  void* memory = nullptr;
  if (scratch_if_failed) CHORUS_RETURN_IF_ERROR(buffers_of(run.device->device()).scratch.get(run.device, bytes, &memory));
  *out = Tensor(memory, entry.request.dtype, shape, entry.request.device);
  return Status::OK();
}

Status Executor::fusion_buffer(Run& run, size_t bytes, void** out) {
  return buffers_of(run.device->device()).fusion.get(run.device, bytes, out);
}

Executor::DeviceBuffers& Executor::buffers_of(const Device& device) {
  for (DeviceBuffers& buffers : buffers_) {
    if (buffers.device == device) return buffers;
  }
  buffers_.push_back(DeviceBuffers{device, {}, {}});
  return buffers_.back();
}

Status Executor::allgather(Run& run, WorkPtr* work) {
  const Response& response = run.unit.front();
  TensorEntry& entry = *run.entries[0];
  const Shape& shape = entry.request.shape;
  const int64_t row = row_elements(shape);
  std::vector<int64_t> counts(response.first_dims.size());
  int64_t rows = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    counts[r] = response.first_dims[r] * row;
    rows += response.first_dims[r];
  }
  Shape out_shape = shape;
  out_shape[0] = rows;
  Tensor output;
  CHORUS_RETURN_IF_ERROR(output_for(run, 0, out_shape, true, &output));
  const auto start = Clock::now();
  *work = run.backend->allgatherv(entry.input_data, output.data, counts, response.dtype);
  if (timeline_->enabled()) timeline_->span(response.name, "ALLGATHER", start, Clock::now());
  return Status::OK();
}

Status Executor::alltoall(Run& run, WorkPtr* work) {
  TensorEntry& entry = *run.entries[0];
  const Shape& shape = entry.request.shape;
  const int64_t row = row_elements(shape);
  // Exchange rows, not elements, so zero-sized rows still tell the splits.
  std::vector<int64_t> received_rows;
  CHORUS_RETURN_IF_ERROR(run.backend->exchange_counts(entry.splits, &received_rows));
  std::vector<int64_t> send_counts(entry.splits.size());
  std::vector<int64_t> recv_counts(received_rows.size());
  int64_t rows = 0;
  for (size_t r = 0; r < send_counts.size(); ++r) send_counts[r] = entry.splits[r] * row;
  for (size_t r = 0; r < recv_counts.size(); ++r) {
    recv_counts[r] = received_rows[r] * row;
    rows += received_rows[r];
  }
  Shape out_shape = shape;
  out_shape[0] = rows;
  Tensor output;
  CHORUS_RETURN_IF_ERROR(output_for(run, 0, out_shape, true, &output));
  const auto start = Clock::now();
  *work = run.backend->alltoallv(entry.input_data, send_counts, output.data, recv_counts, entry.request.dtype);
  if (timeline_->enabled()) timeline_->span(entry.request.name, "ALLTOALL", start, Clock::now());
  entry.handle->set_received_splits(std::move(received_rows));
  return Status::OK();
}

void Executor::span(const Entries& entries, const ExecutionUnit& unit, const char* activity,
                    Clock::time_point start, const TimelineArgs& args) {
  if (!timeline_->enabled()) return;
  const auto end = Clock::now();
  for (size_t i = 0; i < unit.size(); ++i) {
    if (entries[i]) timeline_->span(unit[i].name, activity, start, end, args);
  }
}

}  // namespace chorus
