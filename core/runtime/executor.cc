#include "runtime/executor.h"

#include <algorithm>
#include <string>

namespace chorus {
namespace {

ReduceOp backend_op(ReduceOp op) { return op == ReduceOp::kAverage ? ReduceOp::kSum : op; }

// The timeline's negotiation span per op, named as Horovod's timeline names
// it (NEGOTIATE_ALLREDUCE, ...), so tools written for those traces read ours.
const char* negotiate_activity(OpType op) {
  switch (op) {
    case OpType::kAllreduce: return "NEGOTIATE_ALLREDUCE";
    case OpType::kAllgather: return "NEGOTIATE_ALLGATHER";
    case OpType::kBroadcast: return "NEGOTIATE_BROADCAST";
    case OpType::kAlltoall: return "NEGOTIATE_ALLTOALL";
    case OpType::kReducescatter: return "NEGOTIATE_REDUCESCATTER";
    case OpType::kBarrier: return "NEGOTIATE_BARRIER";
    case OpType::kJoin: return "NEGOTIATE_JOIN";
    default: return "NEGOTIATE";
  }
}

char* at(void* base, int64_t elements, DataType dtype) {
  return static_cast<char*>(base) + elements * static_cast<int64_t>(dtype_size(dtype));
}
const char* at(const void* base, int64_t elements, DataType dtype) {
  return static_cast<const char*>(base) + elements * static_cast<int64_t>(dtype_size(dtype));
}

size_t bytes_of(int64_t elements, DataType dtype) { return static_cast<size_t>(elements) * dtype_size(dtype); }

// Rows of a `rows`-row tensor that reducescatter gives rank r.
int64_t rows_for_rank(int64_t rows, int size, int r) { return rows / size + (r < rows % size ? 1 : 0); }

int64_t first_row_of_rank(int64_t rows, int size, int r) {
  const int64_t base = rows / size;
  const int64_t extra = rows % size;
  return r * base + (r < extra ? r : extra);
}


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
    entry.handle->set_output(entry.member, *out, nullptr);
    return Status::OK();
  }
  const size_t bytes = static_cast<size_t>(num_elements(shape)) * dtype_size(dtype);
  std::shared_ptr<void> storage;
  const Status allocated = device->allocate(bytes, &storage);
  if (!allocated.ok()) {
    return Status(allocated.code(), allocated.message() + " for the output of '" + entry.request.name + "'");
  }
  *out = Tensor(storage.get(), dtype, shape, where);
  entry.handle->set_output(entry.member, *out, std::move(storage));
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
      if (entries[i]) {
        timeline_->span(unit[i].name, negotiate_activity(entries[i]->request.op), entries[i]->enqueued, negotiated);
      }
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
  if (run.unit.size() > 1) return allgather_fused(run, work);
  const Response& response = run.unit.front();
  if (!run.entries[0]) return Status::Internal("allgather response without a local entry");
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

// Several allgathers as one: this rank's inputs go one after the other into
// the fusion buffer, one allgatherv gathers every rank's block (rank r's
// holds its rows of each tensor in unit order), and each tensor's rows are
// copied out of every rank's block into its output. The buffer holds this
// rank's block, then the gathered blocks.
Status Executor::allgather_fused(Run& run, WorkPtr* work) {
  const ExecutionUnit& unit = run.unit;
  Entries& entries = run.entries;
  const DataType dtype = unit.front().dtype;
  const size_t element = dtype_size(dtype);
  const int size = run.place.size;
  for (const auto& entry : entries) {
    if (!entry) return Status::Internal("allgather response without a local entry");
  }
  std::vector<int64_t> rows_of(unit.size(), 0);  // each tensor's gathered rows
  std::vector<int64_t> counts(static_cast<size_t>(size), 0);  // each rank's block
  int64_t total = 0;
  for (size_t i = 0; i < unit.size(); ++i) {
    const int64_t row = row_elements(entries[i]->request.shape);
    for (int r = 0; r < size; ++r) {
      const int64_t rows = unit[i].first_dims[static_cast<size_t>(r)];
      rows_of[i] += rows;
      counts[static_cast<size_t>(r)] += rows * row;
    }
    total += rows_of[i] * row;
  }
  const int64_t mine = counts[static_cast<size_t>(run.place.rank)];
  void* buffer = nullptr;
  CHORUS_RETURN_IF_ERROR(fusion_buffer(run, static_cast<size_t>(mine + total) * element, &buffer));
  char* send = static_cast<char*>(buffer);
  char* gathered = send + static_cast<size_t>(mine) * element;

  auto start = Clock::now();
  copies_.clear();
  size_t offset = 0;
  for (const auto& entry : entries) {
    const size_t bytes = entry->bytes();
    copies_.push_back({send + offset, entry->input_data, bytes});
    offset += bytes;
  }
  CHORUS_RETURN_IF_ERROR(run.device->copy(copies_));
  span(entries, unit, "MEMCPY_IN_FUSION_BUFFER", start);

  // Outputs are filled by copies, which an output that could not be
  // allocated skips.
  std::vector<Tensor> outputs(unit.size());
  for (size_t i = 0; i < unit.size(); ++i) {
    Shape out_shape = entries[i]->request.shape;
    out_shape[0] = rows_of[i];
    CHORUS_RETURN_IF_ERROR(output_for(run, i, out_shape, false, &outputs[i]));
  }

  start = Clock::now();
  *work = run.backend->allgatherv(send, gathered, counts, dtype);
  span(entries, unit, "ALLGATHER", start, {{"fused_tensors", static_cast<int64_t>(unit.size())}});

  start = Clock::now();
  copies_.clear();
  std::vector<size_t> written(unit.size(), 0);  // bytes of each output filled so far
  size_t block = 0;                             // where rank r's block starts
  for (int r = 0; r < size; ++r) {
    size_t at = block;
    for (size_t i = 0; i < unit.size(); ++i) {
      const size_t bytes = static_cast<size_t>(unit[i].first_dims[static_cast<size_t>(r)] *
                                               row_elements(entries[i]->request.shape)) *
                           element;
      if (own_errors_[i].ok() && bytes > 0) {
        copies_.push_back({static_cast<char*>(outputs[i].data) + written[i], gathered + at, bytes});
      }
      written[i] += bytes;
      at += bytes;
    }
    block += static_cast<size_t>(counts[static_cast<size_t>(r)]) * element;
  }
  CHORUS_RETURN_IF_ERROR(run.device->copy(copies_));
  span(entries, unit, "MEMCPY_OUT_FUSION_BUFFER", start);
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

// The reductions: allreduce (alone, fused through the device's fusion
// buffer, or fused where the tensors lie), Adasum and reducescatter.
double Executor::result_factor(const Run& run, const Response& response) const {
  if (!is_floating_point(response.dtype)) return 1.0;
  const bool average = response.reduce_op == ReduceOp::kAverage;
  return average ? response.postscale / run.place.size : response.postscale;
}

// Horovod folds an average into the postscale (postscale / size, scaled in
// double and truncated): with a postscale, integers do the same, so a test
// can predict Horovod's bits; without one, the average is the exact
// truncating division (the same value wherever double holds the sum).
Status Executor::finish_integer_result(Run& run, const Response& response, void* data, int64_t count) {
  if (is_floating_point(response.dtype)) return Status::OK();
  const bool average = response.reduce_op == ReduceOp::kAverage;
  if (response.postscale != 1.0) {
    const double factor = average ? response.postscale / run.place.size : response.postscale;
    return run.device->scale(data, data, count, response.dtype, factor);
  }
  if (!average) return Status::OK();
  return run.device->divide(data, count, response.dtype, run.place.size);
}

Status Executor::pack_fused(Run& run, void* buffer, double prescale) {
  const DataType dtype = run.unit.front().dtype;
  copies_.clear();
  int64_t offset = 0;
  for (size_t i = 0; i < run.unit.size(); ++i) {
    const int64_t n = run.unit[i].elements;
    char* slot = at(buffer, offset, dtype);
    const void* input = run.entries[i] ? run.entries[i]->input_data : nullptr;
    if (input != nullptr && prescale != 1.0) {
      CHORUS_RETURN_IF_ERROR(run.device->scale(input, slot, n, dtype, prescale));
    } else if (input != slot) {
      copies_.push_back({slot, input, bytes_of(n, dtype)});  // zeros when missing (no source)
    }
    offset += n;
  }
  return run.device->copy(copies_);
}

Status Executor::unpack_fused(Run& run, const void* buffer) {
  const DataType dtype = run.unit.front().dtype;
  copies_.clear();
  int64_t offset = 0;
  for (size_t i = 0; i < run.unit.size(); ++i) {
    if (run.entries[i]) {
      copies_.push_back({run.entries[i]->output_data, at(buffer, offset, dtype),
                         bytes_of(run.unit[i].elements, dtype)});
    }
    offset += run.unit[i].elements;
  }
  return run.device->copy(copies_);
}

Status Executor::allreduce(Run& run, WorkPtr* work) {
  const ExecutionUnit& unit = run.unit;
  if (unit.front().reduce_op == ReduceOp::kAdasum) return adasum(run, work);
  if (unit.size() == 1) return allreduce_one(run, work);

  const Response& first = unit.front();
  const DataType dtype = first.dtype;
  int64_t total = 0;
  for (const Response& response : unit) total += response.elements;
  // Every rank decides alike (same unit, same backend state), a joined one
  // too: it must scale the shares it owns like the others do.
  if (is_floating_point(dtype) && first.prescale == 1.0 &&
      run.backend->fuses_in_place(total, dtype, backend_op(first.reduce_op))) {
    return allreduce_in_place(run, total, work);
  }
  void* buffer = nullptr;
  CHORUS_RETURN_IF_ERROR(fusion_buffer(run, bytes_of(total, dtype), &buffer));

  auto start = Clock::now();
  CHORUS_RETURN_IF_ERROR(pack_fused(run, buffer, first.prescale));
  span(run.entries, unit, "MEMCPY_IN_FUSION_BUFFER", start);

  start = Clock::now();
  *work = run.backend->allreduce(buffer, buffer, total, dtype, backend_op(first.reduce_op), result_factor(run, first));
  span(run.entries, unit, "ALLREDUCE", start, {{"fused_tensors", static_cast<int64_t>(unit.size())}});

  start = Clock::now();
  CHORUS_RETURN_IF_ERROR(unpack_fused(run, buffer));
  for (size_t i = 0; i < unit.size(); ++i) {
    if (run.entries[i]) {
      CHORUS_RETURN_IF_ERROR(finish_integer_result(run, unit[i], run.entries[i]->output_data, unit[i].elements));
    }
  }
  span(run.entries, unit, "MEMCPY_OUT_FUSION_BUFFER", start);
  return Status::OK();
}

Status Executor::allreduce_in_place(Run& run, int64_t total, WorkPtr* work) {
  const ExecutionUnit& unit = run.unit;
  const Response& first = unit.front();
  const DataType dtype = first.dtype;
  int64_t missing = 0;
  pieces_.clear();
  for (size_t i = 0; i < unit.size(); ++i) {
    const int64_t n = unit[i].elements;
    if (run.entries[i]) {
      pieces_.push_back({run.entries[i]->input_data, run.entries[i]->output_data, n});
    } else {
      missing += n;
      pieces_.push_back({nullptr, nullptr, n});
    }
  }
  // Members sharing memory (one tensor twice in a group, overlapping views)
  // would be read after the backend wrote another's result there: they are
  // staged in the fusion buffer, which goes to the backend as one piece (the
  // same message, so the ranks still agree on the collective).
  const bool staged = pieces_overlap(pieces_, dtype_size(dtype));
  // A joined rank's missing tensors contribute zeros, reduced into the same
  // zeros and dropped.
  const int64_t buffered = staged ? total : missing;
  void* buffer = nullptr;
  if (buffered > 0) CHORUS_RETURN_IF_ERROR(fusion_buffer(run, bytes_of(buffered, dtype), &buffer));
  char* slot = static_cast<char*>(buffer);
  copies_.clear();
  for (AllreducePiece& piece : pieces_) {
    if (!staged && piece.input != nullptr) continue;
    copies_.push_back({slot, piece.input, bytes_of(piece.count, dtype)});  // zeros when missing
    if (!staged) piece = {slot, slot, piece.count};
    slot += bytes_of(piece.count, dtype);
  }
  CHORUS_RETURN_IF_ERROR(run.device->copy(copies_));
  if (staged) pieces_.assign(1, AllreducePiece{buffer, buffer, total});
  const auto start = Clock::now();
  *work = run.backend->allreduce_pieces(pieces_, dtype, backend_op(first.reduce_op), result_factor(run, first));
  span(run.entries, unit, "ALLREDUCE", start, {{"fused_tensors", static_cast<int64_t>(unit.size())}});
  if (!staged) return Status::OK();
  copies_.clear();
  slot = static_cast<char*>(buffer);
  for (size_t i = 0; i < unit.size(); ++i) {
    if (run.entries[i]) copies_.push_back({run.entries[i]->output_data, slot, bytes_of(unit[i].elements, dtype)});
    slot += bytes_of(unit[i].elements, dtype);
  }
  return run.device->copy(copies_);
}

Status Executor::allreduce_one(Run& run, WorkPtr* work) {
  const Response& response = run.unit.front();
  TensorEntry* entry = run.entries[0] ? &*run.entries[0] : nullptr;
  const DataType dtype = response.dtype;
  const int64_t n = response.elements;
  const auto start = Clock::now();
  // Every rank must ask for the same scaling, a joined one too: on shared
  // memory each rank scales the share it owns.
  const ReduceOp op = backend_op(response.reduce_op);
  const double factor = result_factor(run, response);
  if (entry == nullptr) {  // joined: contribute zeros and drop the result
    void* zeros = nullptr;
    CHORUS_RETURN_IF_ERROR(fusion_buffer(run, bytes_of(n, dtype), &zeros));
    CHORUS_RETURN_IF_ERROR(run.device->copy({DeviceOps::Copy{zeros, nullptr, bytes_of(n, dtype)}}));
    *work = run.backend->allreduce(zeros, zeros, n, dtype, op, factor);
    return Status::OK();
  }
  const void* input = entry->input_data;
  void* output = entry->output_data;
  if (response.prescale != 1.0) {
    CHORUS_RETURN_IF_ERROR(run.device->scale(input, output, n, dtype, response.prescale));
    input = output;
  }
  *work = run.backend->allreduce(input, output, n, dtype, op, factor);
  CHORUS_RETURN_IF_ERROR(finish_integer_result(run, response, output, n));
  if (timeline_->enabled()) timeline_->span(response.name, "ALLREDUCE", start, Clock::now());
  return Status::OK();
}

// Each tensor is combined by its own dot products, so a fused unit is never
// reduced where it lies (the backend needs one message and its tensors'
// sizes): it goes through the fusion buffer; a tensor alone is reduced in
// its output. The prescale applies as the inputs are copied, the postscale
// (the backend's factor) to the result; Adasum is no average. A joined rank
// contributes zeros, which leave the others' combination as it is.
Status Executor::adasum(Run& run, WorkPtr* work) {
  const ExecutionUnit& unit = run.unit;
  const Response& first = unit.front();
  const DataType dtype = first.dtype;
  counts_.clear();
  int64_t total = 0;
  for (const Response& response : unit) {
    counts_.push_back(response.elements);
    total += response.elements;
  }
  const bool alone = unit.size() == 1 && run.entries[0];
  void* buffer = nullptr;
  if (alone) {
    buffer = run.entries[0]->output_data;
  } else {
    CHORUS_RETURN_IF_ERROR(fusion_buffer(run, bytes_of(total, dtype), &buffer));
  }
  auto start = Clock::now();
  CHORUS_RETURN_IF_ERROR(pack_fused(run, buffer, first.prescale));
  if (!alone) span(run.entries, unit, "MEMCPY_IN_FUSION_BUFFER", start);

  start = Clock::now();
  *work = run.backend->adasum(buffer, counts_, dtype, first.postscale);
  span(run.entries, unit, "ADASUM", start, {{"fused_tensors", static_cast<int64_t>(unit.size())}});
  if (alone) return Status::OK();

  start = Clock::now();
  CHORUS_RETURN_IF_ERROR(unpack_fused(run, buffer));
  span(run.entries, unit, "MEMCPY_OUT_FUSION_BUFFER", start);
  return Status::OK();
}

Status Executor::reducescatter(Run& run, WorkPtr* work) {
  const ExecutionUnit& unit = run.unit;
  Entries& entries = run.entries;
  const int size = run.place.size;
  const int me = run.place.rank;
  const DataType dtype = unit.front().dtype;
  for (const auto& entry : entries) {
    if (!entry) return Status::Internal("reducescatter response without a local entry");
  }
  std::vector<int64_t> recv_counts(size, 0);
  for (const auto& entry : entries) {
    const Shape& shape = entry->request.shape;
    for (int r = 0; r < size; ++r) recv_counts[r] += rows_for_rank(shape[0], size, r) * row_elements(shape);
  }

  // Single tensor: the input is already laid out rank by rank, and is used
  // where it is unless it must be prescaled first.
  const bool fused = unit.size() > 1;
  const double prescale = unit.front().prescale;
  const bool staged = fused || prescale != 1.0;
  int64_t total = 0;
  for (const Response& response : unit) total += response.elements;
  void* buffer = nullptr;
  auto start = Clock::now();
  if (staged) {
    CHORUS_RETURN_IF_ERROR(fusion_buffer(run, bytes_of(total, dtype), &buffer));
    copies_.clear();
    int64_t offset = 0;
    for (int r = 0; r < size; ++r) {
      for (const auto& entry : entries) {
        const Shape& shape = entry->request.shape;
        const int64_t row = row_elements(shape);
        const int64_t n = rows_for_rank(shape[0], size, r) * row;
        const int64_t first = first_row_of_rank(shape[0], size, r) * row;
        if (prescale != 1.0) {
          CHORUS_RETURN_IF_ERROR(
              run.device->scale(at(entry->input_data, first, dtype), at(buffer, offset, dtype), n, dtype, prescale));
        } else {
          copies_.push_back({at(buffer, offset, dtype), at(entry->input_data, first, dtype), bytes_of(n, dtype)});
        }
        offset += n;
      }
    }
    CHORUS_RETURN_IF_ERROR(run.device->copy(copies_));
    span(entries, unit, "MEMCPY_IN_FUSION_BUFFER", start);
  }

  std::vector<Tensor> outputs(unit.size());
  for (size_t i = 0; i < unit.size(); ++i) {
    Shape out_shape = entries[i]->request.shape;
    out_shape[0] = rows_for_rank(out_shape[0], size, me);
    // Fused outputs are filled by copies, which a failed one skips; a single
    // output is written by the collective itself and needs scratch memory.
    CHORUS_RETURN_IF_ERROR(output_for(run, i, out_shape, !fused, &outputs[i]));
  }

  start = Clock::now();
  const ReduceOp op = backend_op(unit.front().reduce_op);
  const double factor = result_factor(run, unit.front());
  if (fused) {
    *work = run.backend->reducescatter(buffer, buffer, recv_counts, dtype, op, factor);
  } else {
    const void* input = staged ? buffer : entries[0]->input_data;
    *work = run.backend->reducescatter(input, outputs[0].data, recv_counts, dtype, op, factor);
  }
  span(entries, unit, "REDUCESCATTER", start);

  start = Clock::now();
  copies_.clear();
  int64_t offset = 0;
  for (size_t i = 0; i < unit.size(); ++i) {
    const int64_t n = outputs[i].elements();
    if (fused && own_errors_[i].ok()) copies_.push_back({outputs[i].data, at(buffer, offset, dtype), bytes_of(n, dtype)});
    offset += n;
  }
  CHORUS_RETURN_IF_ERROR(run.device->copy(copies_));
  for (size_t i = 0; i < unit.size(); ++i) {
    if (own_errors_[i].ok()) {
      CHORUS_RETURN_IF_ERROR(finish_integer_result(run, unit[i], outputs[i].data, outputs[i].elements()));
    }
  }
  if (fused) span(entries, unit, "MEMCPY_OUT_FUSION_BUFFER", start);
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
