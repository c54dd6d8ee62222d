#include "executor.h"

#include <cstring>

#include "ops/kernels/scale.h"

namespace chorus {
namespace {

ReduceOp backend_op(ReduceOp op) { return op == ReduceOp::kAverage ? ReduceOp::kSum : op; }

char* at(void* base, int64_t elements, DataType dtype) {
  return static_cast<char*>(base) + elements * static_cast<int64_t>(dtype_size(dtype));
}

int64_t row_elements(const Shape& shape) {
  int64_t row = 1;
  for (size_t i = 1; i < shape.size(); ++i) row *= shape[i];
  return row;
}

// Rows of a `rows`-row tensor that reducescatter gives rank r.
int64_t rows_for_rank(int64_t rows, int size, int r) {
  return rows / size + (r < rows % size ? 1 : 0);
}

int64_t first_row_of_rank(int64_t rows, int size, int r) {
  const int64_t base = rows / size;
  const int64_t extra = rows % size;
  return r * base + (r < extra ? r : extra);
}

// Marks every entry's handle, then wakes the waiters (see finish_member).
// An entry with its own error (its output could not be allocated) gets that
// instead of `status`.
void complete_all(std::vector<std::optional<TensorEntry>>& entries, const Status& status,
                  const std::vector<Status>& own_errors = {}) {
  std::vector<detail::HandleState*> done;
  done.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i]) continue;
    const bool own = status.ok() && i < own_errors.size() && !own_errors[i].ok();
    if (entries[i]->handle->finish_member(own ? own_errors[i] : status)) done.push_back(entries[i]->handle.get());
  }
  for (detail::HandleState* handle : done) handle->notify_done();
}

}  // namespace

Status allocate_output(TensorEntry& entry, const Shape& shape, Tensor* out) {
  const DataType dtype = entry.request.dtype;
  const Device device = entry.request.device;
  if (entry.allocator) {
    Status allocated;
    try {
      allocated = entry.allocator(shape, dtype, device, out);
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
  std::shared_ptr<void> storage(std::malloc(bytes > 0 ? bytes : 1), std::free);
  if (!storage) return Status::Internal("Out of memory allocating " + std::to_string(bytes) +
                                        " bytes for the output of '" + entry.request.name + "'");
  *out = Tensor(storage.get(), dtype, shape, device);
  entry.handle->set_output(*out, std::move(storage));
  return Status::OK();
}

Status Executor::execute(const ExecutionUnit& unit, TensorQueue* queue, Clock::time_point negotiated) {
  Entries entries = queue->take_all_of(unit);
  own_errors_.assign(unit.size(), Status::OK());
  if (timeline_->enabled()) {
    for (size_t i = 0; i < unit.size(); ++i) {
      if (entries[i]) timeline_->span(unit[i].name, "NEGOTIATE", entries[i]->enqueued, negotiated);
    }
    span(entries, unit, "WAIT_FOR_OTHER_COLLECTIVES", negotiated);
  }

  const Response& first = unit.front();
  Status status;
  if (first.type == Response::Type::kError) {
    complete_all(entries, Status::Mismatch(first.error_message));
    if (timeline_->enabled()) timeline_->instant(first.name, "ERROR");
    return Status::OK();
  }
  if (first.type == Response::Type::kJoin) {
    for (auto& entry : entries) {
      if (!entry) continue;
      entry->handle->set_last_joined_rank(first.last_joined_rank);
      entry->handle->complete_member(Status::OK());
    }
    return Status::OK();
  }

  Backend* backend = backends_->select(first.device);
  if (backend == nullptr) {
    status = Status::InvalidArgument("No backend in this build supports device " + first.device.to_string());
  } else {
    switch (first.type) {
      case Response::Type::kAllreduce: status = allreduce(unit, entries, backend); break;
      case Response::Type::kAllgather: status = allgather(first, *entries[0], backend); break;
      case Response::Type::kBroadcast: {
        const auto start = Clock::now();
        status = backend->broadcast(entries[0]->output_data, static_cast<int64_t>(entries[0]->bytes()),
                                    first.root);
        span(entries, unit, "BROADCAST", start);
        break;
      }
      case Response::Type::kAlltoall: status = alltoall(*entries[0], backend); break;
      case Response::Type::kReducescatter: status = reducescatter(unit, entries, backend); break;
      case Response::Type::kBarrier: {
        const auto start = Clock::now();
        status = backend->barrier();
        span(entries, unit, "BARRIER", start);
        break;
      }
      default:
        status = Status::Internal(std::string("The executor cannot run a ") +
                                  response_type_name(first.type) + " response");
    }
  }
  complete_all(entries, status, own_errors_);
  return status;
}

Tensor Executor::output_for(TensorEntry& entry, size_t index, const Shape& shape, bool scratch_if_failed) {
  Tensor out;
  const Status status = allocate_output(entry, shape, &out);
  if (status.ok()) return out;
  // Only this rank failed: the others are already in the collective, so this
  // rank takes part too, receiving into scratch memory, and fails the entry.
  own_errors_[index] = status;
  const size_t bytes = static_cast<size_t>(num_elements(shape)) * dtype_size(entry.request.dtype);
  void* memory = scratch_if_failed ? scratch_.get(bytes) : nullptr;
  return Tensor(memory, entry.request.dtype, shape, entry.request.device);
}

Status Executor::allreduce(const ExecutionUnit& unit, Entries& entries, Backend* backend) {
  if (unit.size() == 1) return allreduce_one(unit[0], entries[0] ? &*entries[0] : nullptr, backend);

  const Response& first = unit.front();
  const DataType dtype = first.dtype;
  int64_t total = 0;
  for (const Response& response : unit) total += response.elements;
  // Every rank decides alike (same unit, same backend state), a joined one
  // too: it must scale the shares it owns like the others do.
  if (is_floating_point(dtype) && first.prescale == 1.0 &&
      backend->fuses_in_place(total, dtype, backend_op(first.reduce_op))) {
    return allreduce_in_place(unit, entries, backend);
  }
  void* buffer = fusion_buffer_.get(static_cast<size_t>(total) * dtype_size(dtype));

  auto start = Clock::now();
  int64_t offset = 0;
  for (size_t i = 0; i < unit.size(); ++i) {
    const int64_t n = unit[i].elements;
    char* slot = at(buffer, offset, dtype);
    if (!entries[i]) {
      std::memset(slot, 0, static_cast<size_t>(n) * dtype_size(dtype));
    } else if (first.prescale != 1.0) {
      CHORUS_RETURN_IF_ERROR(scale(entries[i]->input_data, slot, n, dtype, first.prescale));
    } else if (n > 0) {
      std::memcpy(slot, entries[i]->input_data, static_cast<size_t>(n) * dtype_size(dtype));
    }
    offset += n;
  }
  span(entries, unit, "MEMCPY_IN_FUSION_BUFFER", start);

  start = Clock::now();
  CHORUS_RETURN_IF_ERROR(
      backend->allreduce_scaled(buffer, buffer, total, dtype, backend_op(first.reduce_op), result_factor(first)));
  span(entries, unit, "ALLREDUCE", start, "\"fused_tensors\": " + std::to_string(unit.size()));

  start = Clock::now();
  offset = 0;
  for (size_t i = 0; i < unit.size(); ++i) {
    if (entries[i]) {
      CHORUS_RETURN_IF_ERROR(finish_reduction(unit[i], at(buffer, offset, dtype),
                                              entries[i]->output_data, unit[i].elements));
    }
    offset += unit[i].elements;
  }
  span(entries, unit, "MEMCPY_OUT_FUSION_BUFFER", start);
  return Status::OK();
}

Status Executor::allreduce_in_place(const ExecutionUnit& unit, Entries& entries, Backend* backend) {
  const Response& first = unit.front();
  const DataType dtype = first.dtype;
  const size_t element_bytes = dtype_size(dtype);
  int64_t total = 0;
  int64_t missing = 0;
  pieces_.clear();
  for (size_t i = 0; i < unit.size(); ++i) {
    const int64_t n = unit[i].elements;
    total += n;
    if (entries[i]) {
      pieces_.push_back({entries[i]->input_data, entries[i]->output_data, n});
    } else {
      missing += n;
      pieces_.push_back({nullptr, nullptr, n});
    }
  }
  // Members sharing memory (one tensor twice in a group, overlapping views)
  // would be read after the backend wrote another's result there: they are
  // staged in the fusion buffer, which goes to the backend as one piece (the
  // same message, so the ranks still agree on the collective).
  const bool staged = pieces_overlap(pieces_, element_bytes);
  // A joined rank's missing tensors contribute zeros, reduced into the same
  // zeros and dropped.
  const int64_t buffered = staged ? total : missing;
  char* buffer = buffered > 0 ? static_cast<char*>(fusion_buffer_.get(static_cast<size_t>(buffered) * element_bytes))
                              : nullptr;
  char* slot = buffer;
  for (AllreducePiece& piece : pieces_) {
    const size_t bytes = static_cast<size_t>(piece.count) * element_bytes;
    if (!staged && piece.input != nullptr) continue;
    if (piece.input != nullptr) {
      std::memcpy(slot, piece.input, bytes);
    } else if (bytes > 0) {
      std::memset(slot, 0, bytes);
    }
    if (!staged) piece = {slot, slot, piece.count};
    slot += bytes;
  }
  if (staged) pieces_.assign(1, AllreducePiece{buffer, buffer, total});
  const auto start = Clock::now();
  CHORUS_RETURN_IF_ERROR(
      backend->allreduce_pieces(pieces_, dtype, backend_op(first.reduce_op), result_factor(first)));
  span(entries, unit, "ALLREDUCE", start, "\"fused_tensors\": " + std::to_string(unit.size()));
  if (!staged) return Status::OK();
  slot = buffer;
  for (size_t i = 0; i < unit.size(); ++i) {
    const size_t bytes = static_cast<size_t>(unit[i].elements) * element_bytes;
    if (entries[i] && bytes > 0) std::memcpy(entries[i]->output_data, slot, bytes);
    slot += bytes;
  }
  return Status::OK();
}

Status Executor::allreduce_one(const Response& response, TensorEntry* entry, Backend* backend) {
  const DataType dtype = response.dtype;
  const int64_t n = response.elements;
  const auto start = Clock::now();
  // Every rank must ask for the same scaling, a joined one too: on shared
  // memory each rank scales the share it owns.
  const ReduceOp op = backend_op(response.reduce_op);
  const double factor = result_factor(response);
  if (entry == nullptr) {  // joined: contribute zeros and drop the result
    void* zeros = fusion_buffer_.get(static_cast<size_t>(n) * dtype_size(dtype));
    std::memset(zeros, 0, static_cast<size_t>(n) * dtype_size(dtype));
    return backend->allreduce_scaled(zeros, zeros, n, dtype, op, factor);
  }
  const void* input = entry->input_data;
  void* output = entry->output_data;
  if (response.prescale != 1.0) {
    CHORUS_RETURN_IF_ERROR(scale(input, output, n, dtype, response.prescale));
    input = output;
  }
  CHORUS_RETURN_IF_ERROR(backend->allreduce_scaled(input, output, n, dtype, op, factor));
  CHORUS_RETURN_IF_ERROR(finish_reduction(response, output, output, n));
  if (timeline_->enabled()) timeline_->span(response.name, "ALLREDUCE", start, Clock::now());
  return Status::OK();
}

double Executor::result_factor(const Response& response) const {
  const bool average = response.reduce_op == ReduceOp::kAverage;
  return average && is_floating_point(response.dtype) ? response.postscale / topology_.size : response.postscale;
}

Status Executor::finish_reduction(const Response& response, const void* from, void* to, int64_t count) {
  const DataType dtype = response.dtype;
  if (from != to && count > 0) std::memcpy(to, from, static_cast<size_t>(count) * dtype_size(dtype));
  if (response.reduce_op == ReduceOp::kAverage && !is_floating_point(dtype)) {
    return divide(to, count, dtype, topology_.size);
  }
  return Status::OK();
}

Status Executor::allgather(const Response& response, TensorEntry& entry, Backend* backend) {
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
  const Tensor output = output_for(entry, 0, out_shape, true);
  const auto start = Clock::now();
  CHORUS_RETURN_IF_ERROR(backend->allgatherv(entry.input_data, output.data, counts, response.dtype));
  if (timeline_->enabled()) timeline_->span(response.name, "ALLGATHER", start, Clock::now());
  return Status::OK();
}

Status Executor::alltoall(TensorEntry& entry, Backend* backend) {
  const Shape& shape = entry.request.shape;
  const int64_t row = row_elements(shape);
  // Exchange rows, not elements, so zero-sized rows still tell the splits.
  std::vector<int64_t> received_rows;
  CHORUS_RETURN_IF_ERROR(backend->exchange_counts(entry.splits, &received_rows));
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
  const Tensor output = output_for(entry, 0, out_shape, true);
  const auto start = Clock::now();
  CHORUS_RETURN_IF_ERROR(
      backend->alltoallv(entry.input_data, send_counts, output.data, recv_counts, entry.request.dtype));
  if (timeline_->enabled()) timeline_->span(entry.request.name, "ALLTOALL", start, Clock::now());
  entry.handle->set_received_splits(std::move(received_rows));
  return Status::OK();
}

Status Executor::reducescatter(const ExecutionUnit& unit, Entries& entries, Backend* backend) {
  const int size = topology_.size;
  const int me = topology_.rank;
  const DataType dtype = unit.front().dtype;
  const size_t esize = dtype_size(dtype);
  for (const auto& entry : entries) {
    if (!entry) return Status::Internal("reducescatter response without a local entry");
  }
  std::vector<int64_t> recv_counts(size, 0);
  for (const auto& entry : entries) {
    const Shape& shape = entry->request.shape;
    for (int r = 0; r < size; ++r) recv_counts[r] += rows_for_rank(shape[0], size, r) * row_elements(shape);
  }

  // Single tensor: the input is already laid out rank by rank.
  const bool fused = unit.size() > 1;
  int64_t total = 0;
  for (const Response& response : unit) total += response.elements;
  void* buffer = fused ? fusion_buffer_.get(static_cast<size_t>(total) * esize) : nullptr;
  auto start = Clock::now();
  if (fused) {
    int64_t offset = 0;
    for (int r = 0; r < size; ++r) {
      for (const auto& entry : entries) {
        const Shape& shape = entry->request.shape;
        const int64_t row = row_elements(shape);
        const int64_t n = rows_for_rank(shape[0], size, r) * row;
        const int64_t first = first_row_of_rank(shape[0], size, r) * row;
        if (n > 0) std::memcpy(at(buffer, offset, dtype), at(entry->input_data, first, dtype), n * esize);
        offset += n;
      }
    }
    span(entries, unit, "MEMCPY_IN_FUSION_BUFFER", start);
  }

  std::vector<Tensor> outputs(unit.size());
  for (size_t i = 0; i < unit.size(); ++i) {
    Shape out_shape = entries[i]->request.shape;
    out_shape[0] = rows_for_rank(out_shape[0], size, me);
    // Fused outputs are filled by copies, which a failed one skips; a single
    // output is written by the collective itself and needs scratch memory.
    outputs[i] = output_for(*entries[i], i, out_shape, !fused);
  }

  start = Clock::now();
  const ReduceOp op = backend_op(unit.front().reduce_op);
  const double factor = result_factor(unit.front());
  if (fused) {
    CHORUS_RETURN_IF_ERROR(backend->reducescatter_scaled(buffer, buffer, recv_counts, dtype, op, factor));
  } else {
    CHORUS_RETURN_IF_ERROR(
        backend->reducescatter_scaled(entries[0]->input_data, outputs[0].data, recv_counts, dtype, op, factor));
  }
  span(entries, unit, "REDUCESCATTER", start);

  start = Clock::now();
  int64_t offset = 0;
  for (size_t i = 0; i < unit.size(); ++i) {
    const int64_t n = outputs[i].elements();
    const void* from = fused ? at(buffer, offset, dtype) : outputs[i].data;
    if (own_errors_[i].ok()) CHORUS_RETURN_IF_ERROR(finish_reduction(unit[i], from, outputs[i].data, n));
    offset += n;
  }
  if (fused) span(entries, unit, "MEMCPY_OUT_FUSION_BUFFER", start);
  return Status::OK();
}

void Executor::span(const Entries& entries, const ExecutionUnit& unit, const char* activity,
                    Clock::time_point start, const std::string& args) {
  if (!timeline_->enabled()) return;
  const auto end = Clock::now();
  for (size_t i = 0; i < unit.size(); ++i) {
    if (entries[i]) timeline_->span(unit[i].name, activity, start, end, args);
  }
}

}  // namespace chorus
