#include "ops/host_backend.h"

namespace chorus {

WorkPtr HostBackend::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                               double factor) {
  return finished_work(collectives_->allreduce_scaled(input, output, count, dtype, op, factor));
}

bool HostBackend::fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const {
  return collectives_->fuses_in_place(count, dtype, op);
}

WorkPtr HostBackend::allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                                      double factor) {
  return finished_work(collectives_->allreduce_pieces(pieces, dtype, op, factor));
}

WorkPtr HostBackend::allgatherv(const void* input, void* output, const std::vector<int64_t>& counts,
                                DataType dtype) {
  return finished_work(collectives_->allgatherv(input, output, counts, dtype));
}

WorkPtr HostBackend::broadcast(void* buffer, int64_t bytes, int root) {
  return finished_work(collectives_->broadcast(buffer, bytes, root));
}

Status HostBackend::exchange_counts(const std::vector<int64_t>& send_counts, std::vector<int64_t>* recv_counts) {
  return collectives_->exchange_counts(send_counts, recv_counts);
}

WorkPtr HostBackend::alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                               const std::vector<int64_t>& recv_counts, DataType dtype) {
  return finished_work(collectives_->alltoallv(input, send_counts, output, recv_counts, dtype));
}

WorkPtr HostBackend::reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts,
                                   DataType dtype, ReduceOp op, double factor) {
  return finished_work(collectives_->reducescatter_scaled(input, output, recv_counts, dtype, op, factor));
}

WorkPtr HostBackend::barrier() { return finished_work(collectives_->barrier()); }

}  // namespace chorus
