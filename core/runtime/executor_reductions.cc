// The executor's reductions: allreduce (alone, fused through the device's
// fusion buffer, or fused where the tensors lie) and reducescatter. Every
// copy, zero fill, prescale and integer division goes to the device; a
// floating-point average's and postscale's factor goes to the backend with
// the collective, an integer one's to the device afterwards.
#include <string>

#include "runtime/executor.h"

namespace chorus {
namespace {

ReduceOp backend_op(ReduceOp op) { return op == ReduceOp::kAverage ? ReduceOp::kSum : op; }

char* at(void* base, int64_t elements, DataType dtype) {
  return static_cast<char*>(base) + elements * static_cast<int64_t>(dtype_size(dtype));
}
const char* at(const void* base, int64_t elements, DataType dtype) {
  return static_cast<const char*>(base) + elements * static_cast<int64_t>(dtype_size(dtype));
}

size_t bytes_of(int64_t elements, DataType dtype) { return static_cast<size_t>(elements) * dtype_size(dtype); }

int64_t row_elements(const Shape& shape) {
  int64_t row = 1;
  for (size_t i = 1; i < shape.size(); ++i) row *= shape[i];
  return row;
}

// Rows of a `rows`-row tensor that reducescatter gives rank r.
int64_t rows_for_rank(int64_t rows, int size, int r) { return rows / size + (r < rows % size ? 1 : 0); }

int64_t first_row_of_rank(int64_t rows, int size, int r) {
  const int64_t base = rows / size;
  const int64_t extra = rows % size;
  return r * base + (r < extra ? r : extra);
}

}  // namespace

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

}  // namespace chorus
