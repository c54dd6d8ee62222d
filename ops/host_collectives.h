// HostCollectives: one transport's collectives on host memory, finished when
// each call returns (MPI, shared memory, the hierarchical combination of the
// two). They compose: a shared-memory allreduce sits in front of MPI and
// passes on what it does not take (ForwardingBackend). The executor reaches
// them through a HostBackend (ops/host_backend.h), which makes them one
// Backend with the host's device operations. A reduction multiplies its
// result by the factor it is given (an average's 1/size, a postscale), as it
// reduces where it can, so 16-bit results are rounded once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

// One tensor of a fused allreduce that stays where it is: `count` elements
// read from `input`, the result written to `output` (may equal input).
struct AllreducePiece {
  const void* input;
  void* output;
  int64_t count;
};

// Whether any two pieces share memory (a piece whose input is its output
// counts once; null pointers, placeholders for memory yet to be given, are
// skipped): a backend that writes one piece's result before it has read
// every input would then read a result instead of an input.
bool pieces_overlap(const std::vector<AllreducePiece>& pieces, size_t element_bytes);

class HostCollectives {
 public:
  virtual ~HostCollectives() = default;
  virtual const char* name() const = 0;
  virtual bool supports(const Device& device) const = 0;

  // Reduces `count` elements of every rank's `input` into `output` on every
  // rank. input == output means in place. op is kSum, kMin, kMax or
  // kProduct (the executor turns kAverage into kSum plus a scale).
  virtual Status allreduce(const void* input, void* output, int64_t count, DataType dtype,
                           ReduceOp op) = 0;
  // allreduce(), then the result times `factor` (an average's 1/size and a
  // postscale, for floating-point dtypes). This default scales the output
  // afterwards, one more pass over it, which rounds float16 and bfloat16
  // results a second time; a backend that can scale each rank's share of
  // the result as it reduces it overrides it (one pass, one rounding).
  // Like every collective, all ranks call it with the same arguments (and
  // factor).
  virtual Status allreduce_scaled(const void* input, void* output, int64_t count, DataType dtype,
                                  ReduceOp op, double factor);
  // Fusion without a staging buffer. An algorithm that copies its input into
  // memory of its own anyway (shared memory) can gather a fused message
  // straight from the tensors and scatter the result back, saving the
  // executor's copies into and out of its fusion buffer. Whether this
  // backend does so for a fused message of `count` elements (the same answer
  // on every rank); the default: no, the executor packs the pieces.
  virtual bool fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const;
  // allreduce_scaled() of the concatenation of `pieces`, each piece's result
  // in its own output; only where fuses_in_place() said yes.
  virtual Status allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                                  double factor);
  // Concatenates rank r's counts[r] elements of `input` into `output`, in
  // rank order.
  virtual Status allgatherv(const void* input, void* output, const std::vector<int64_t>& counts,
                            DataType dtype) = 0;
  // Copies root's `bytes` bytes of `buffer` to every rank.
  virtual Status broadcast(void* buffer, int64_t bytes, int root) = 0;
  // Tells every rank how many elements each other rank will send it:
  // recv_counts[r] = what rank r passed as send_counts[this rank].
  virtual Status exchange_counts(const std::vector<int64_t>& send_counts,
                                 std::vector<int64_t>* recv_counts) = 0;
  // Sends send_counts[r] elements (consecutive, in rank order) to rank r and
  // receives recv_counts[r] elements from rank r into `output` in rank order.
  virtual Status alltoallv(const void* input, const std::vector<int64_t>& send_counts,
                           void* output, const std::vector<int64_t>& recv_counts,
                           DataType dtype) = 0;
  // Reduces every rank's `input` (sum of recv_counts elements) and leaves
  // rank r's recv_counts[r] elements (at offset sum of the earlier counts),
  // times `factor` (1 for integer dtypes), in `output` on rank r. output may
  // equal input (then the result is at the start of the buffer). The factor
  // belongs to the backend, as in allreduce_scaled(), so that float16 and
  // bfloat16 results can be rounded once.
  virtual Status reducescatter_scaled(const void* input, void* output, const std::vector<int64_t>& recv_counts,
                                      DataType dtype, ReduceOp op, double factor) = 0;
  // reducescatter_scaled() with factor 1.
  Status reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts, DataType dtype,
                       ReduceOp op) {
    return reducescatter_scaled(input, output, recv_counts, dtype, op, 1.0);
  }
  virtual Status barrier() = 0;

  // The allreduce algorithms this transport can switch between, by name,
  // the one in use at the start first (the same on every rank); the
  // autotuner chooses among them. One, its own name, unless it has a choice.
  virtual std::vector<std::string> allreduce_algorithms() const { return {name()}; }
  // Runs allreduces with `algorithm` (one of the names above) from now on;
  // called between cycles, by every rank alike.
  virtual Status use_allreduce_algorithm(const std::string& algorithm);
};

}  // namespace chorus
