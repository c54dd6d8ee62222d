#include "ops/nccl/nccl_backend.h"

#include <cstdint>
#include <utility>

#include "ops/cuda/cuda_event.h"
#include "ops/nccl/nccl_arguments.h"
#include "ops/nccl/nccl_types.h"
#include "ops/nccl/nccl_work.h"

namespace chorus {
namespace {

// The calls of `body` as one NCCL group (one launch, all progressing
// together). ncclGroupEnd must follow ncclGroupStart even when a call in
// between failed; the first error wins.
ncclResult_t grouped(const std::function<ncclResult_t()>& body) {
  const ncclResult_t started = ncclGroupStart();
  if (started != ncclSuccess) return started;
  const ncclResult_t inner = body();
  const ncclResult_t ended = ncclGroupEnd();
  return inner != ncclSuccess ? inner : ended;
}

std::string describe(const char* call, const char* collective, size_t count, DataType dtype) {
  return std::string(call) + " (" + collective + " of " + std::to_string(count) + " " + dtype_name(dtype) + ")";
}

}  // namespace

NcclBackend::NcclBackend(std::shared_ptr<CudaDevice> device, std::unique_ptr<Backend> transport,
                         std::shared_ptr<NcclCommunicator> comm, const NcclOptions& options)
    : options_(options), device_(std::move(device)), transport_(std::move(transport)), comm_(std::move(comm)) {
  ScopedCudaDevice on_device(device_->index());
  init_status_ = on_device.status();
  if (init_status_.ok()) init_status_ = device_->allocate(sizeof(int32_t), &barrier_scalar_);
  // Its value never matters (barrier() only needs every rank to take
  // part), but a defined one keeps memory checkers quiet.
  if (init_status_.ok()) init_status_ = device_->copy({{barrier_scalar_.get(), nullptr, sizeof(int32_t)}});
}

NcclBackend::~NcclBackend() {
  ScopedCudaDevice on_device(device_->index());
  comm_->close(options_.close_timeout);
  scratch_.reset();
  barrier_scalar_.reset();
}

bool NcclBackend::supports(const Device& device) const {
  return device.kind == Device::Kind::kCUDA && device.index == device_->index();
}

DeviceOps* NcclBackend::device_ops(const Device& device) {
  (void)device;
  return device_.get();
}

void NcclBackend::abort(const std::string& reason) { comm_->abort(reason); }

WorkPtr NcclBackend::run(const char* collective, const std::function<Status()>& enqueue) {
  if (!init_status_.ok()) return finished_work(init_status_);
  if (comm_->failed()) return finished_work(comm_->failure());
  ScopedCudaDevice on_device(device_->index());
  if (!on_device.status().ok()) return finished_work(on_device.status());
  Status status = enqueue();
  if (!status.ok()) return finished_work(status);
  std::shared_ptr<const CudaEvent> done;
  status = CudaEvent::record(device_->stream(), &done);
  if (!status.ok()) return finished_work(status);
  return std::make_unique<NcclWork>(comm_, std::move(done), collective, options_.timeout);
}

Status NcclBackend::launch(const std::string& what, const std::function<ncclResult_t(ncclComm_t)>& calls) {
  return comm_->launch(what, calls, options_.timeout);
}

Status NcclBackend::reduce_and_scale(const char* collective, DataType dtype, ReduceOp op, double factor,
                                     const std::function<ncclResult_t(ncclComm_t, ncclRedOp_t)>& reduce,
                                     void* output, int64_t result_count) {
  ncclDataType_t type;
  ncclRedOp_t builtin;
  CHORUS_RETURN_IF_ERROR(nccl_reduction(collective, dtype, op, &type, &builtin));
  const std::string what = std::string("the NCCL calls of ") + collective;
  if (!scales_in_premul_sum(dtype, op, factor)) {
    CHORUS_RETURN_IF_ERROR(launch(what, [&](ncclComm_t comm) { return reduce(comm, builtin); }));
    if (factor == 1.0 || result_count == 0) return Status::OK();
    return device_->scale(output, output, result_count, dtype, factor);
  }
  uint64_t scalar = 0;
  premul_sum_scalar(dtype, factor, &scalar);
  ncclRedOp_t premul_sum;
  CHORUS_RETURN_IF_ERROR(comm_->call("ncclRedOpCreatePreMulSum", [&](ncclComm_t comm) {
    return ncclRedOpCreatePreMulSum(&premul_sum, &scalar, type, ncclScalarHostImmediate, comm);
  }));
  const Status reduced = launch(what, [&](ncclComm_t comm) { return reduce(comm, premul_sum); });
  // NCCL allows it once the calls that use it have returned (here: have
  // been enqueued); an aborted communicator has freed it already.
  if (!comm_->failed()) {
    (void)comm_->call("ncclRedOpDestroy", [&](ncclComm_t comm) { return ncclRedOpDestroy(premul_sum, comm); });
  }
  return reduced;
}

Status NcclBackend::scratch(size_t bytes, void** out) {
  if (scratch_bytes_ < bytes) {
    if (scratch_) {
      // The old buffer may still be read by queued work (DeviceOps::allocate).
      const std::shared_ptr<const Event> queued = device_->record();
      if (queued) queued->synchronize();
      scratch_.reset();
      scratch_bytes_ = 0;
    }
    CHORUS_RETURN_IF_ERROR(device_->allocate(bytes, &scratch_));
    scratch_bytes_ = bytes;
  }
  *out = scratch_.get();
  return Status::OK();
}

Status NcclBackend::move_within(void* to, const void* from, size_t count, size_t element_size) {
  const size_t bytes = count * element_size;
  if (to == from || bytes == 0) return Status::OK();
  const auto to_begin = reinterpret_cast<uintptr_t>(to);
  const auto from_begin = reinterpret_cast<uintptr_t>(from);
  const bool overlap = to_begin < from_begin + bytes && from_begin < to_begin + bytes;
  if (!overlap) return device_->copy({{to, from, bytes}});
  void* staging = nullptr;
  CHORUS_RETURN_IF_ERROR(scratch(bytes, &staging));
  CHORUS_RETURN_IF_ERROR(device_->copy({{staging, from, bytes}}));
  return device_->copy({{to, staging, bytes}});
}

WorkPtr NcclBackend::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                               double factor) {
  ncclDataType_t type;
  ncclRedOp_t unused;
  Status checked = nccl_reduction("allreduce", dtype, op, &type, &unused);
  if (checked.ok()) checked = check_factor("allreduce", dtype, factor);
  if (checked.ok()) checked = check_count("allreduce", "count", count, dtype_size(dtype));
  if (checked.ok()) checked = check_buffer("allreduce", "input", input, count);
  if (checked.ok()) checked = check_buffer("allreduce", "output", output, count);
  if (!checked.ok()) return finished_work(checked);
  const cudaStream_t stream = device_->stream();
  return run("allreduce", [&] {
    if (count == 0) return Status::OK();
    const auto reduce = [&](ncclComm_t comm, ncclRedOp_t nccl_op) {
      return ncclAllReduce(input, output, static_cast<size_t>(count), type, nccl_op, comm, stream);
    };
    return reduce_and_scale("allreduce", dtype, op, factor, reduce, output, count);
  });
}

WorkPtr NcclBackend::allgatherv(const void* input, void* output, const std::vector<int64_t>& counts,
                                DataType dtype) {
  ncclDataType_t type;
  RankBlocks blocks;
  Status checked = nccl_data_type("allgatherv", dtype, &type);
  if (checked.ok()) checked = rank_blocks("allgatherv", "counts", counts, size(), dtype_size(dtype), &blocks);
  if (checked.ok()) checked = check_buffer("allgatherv", "input", input, counts[static_cast<size_t>(rank())]);
  if (checked.ok()) checked = check_buffer("allgatherv", "output", output, static_cast<int64_t>(blocks.total));
  if (!checked.ok()) return finished_work(checked);
  const cudaStream_t stream = device_->stream();
  const size_t element_size = dtype_size(dtype);
  return run("allgatherv", [&] {
    if (blocks.total == 0) return Status::OK();
    if (blocks.equal) {
      // In place when input sits at this rank's slot of the output.
      return launch(describe("ncclAllGather", "allgatherv", blocks.total, dtype), [&](ncclComm_t comm) {
        return ncclAllGather(input, output, blocks.counts[0], type, comm, stream);
      });
    }
    // Uneven counts: rank r's block is a broadcast from r into its slot
    // (the input is read on r only; in place there when it is the slot).
    return launch(describe("ncclBroadcast", "allgatherv", blocks.total, dtype), [&](ncclComm_t comm) {
      return grouped([&] {
        for (int r = 0; r < size(); ++r) {
          const size_t n = blocks.counts[static_cast<size_t>(r)];
          if (n == 0) continue;
          void* slot = advance(output, blocks.offsets[static_cast<size_t>(r)], element_size);
          const ncclResult_t result = ncclBroadcast(r == rank() ? input : slot, slot, n, type, r, comm, stream);
          if (result != ncclSuccess) return result;
        }
        return ncclSuccess;
      });
    });
  });
}

WorkPtr NcclBackend::broadcast(void* buffer, int64_t bytes, int root) {
  Status checked = check_root("broadcast", root, size());
  if (checked.ok()) checked = check_count("broadcast", "size in bytes", bytes, 1);
  if (checked.ok()) checked = check_buffer("broadcast", "buffer", buffer, bytes);
  if (!checked.ok()) return finished_work(checked);
  const cudaStream_t stream = device_->stream();
  return run("broadcast", [&] {
    if (bytes == 0) return Status::OK();
    return launch("ncclBroadcast (broadcast of " + std::to_string(bytes) + " bytes from rank " +
                      std::to_string(root) + ")",
                  [&](ncclComm_t comm) {
                    return ncclBroadcast(buffer, buffer, static_cast<size_t>(bytes), ncclUint8, root, comm, stream);
                  });
  });
}

Status NcclBackend::exchange_counts(const std::vector<int64_t>& send_counts, std::vector<int64_t>* recv_counts) {
  CHORUS_RETURN_IF_ERROR(init_status_);
  if (comm_->failed()) return comm_->failure();
  return transport_->exchange_counts(send_counts, recv_counts);
}

WorkPtr NcclBackend::alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                               const std::vector<int64_t>& recv_counts, DataType dtype) {
  ncclDataType_t type;
  RankBlocks sends;
  RankBlocks receives;
  const size_t element_size = static_cast<int>(dtype) < kNumDataTypes ? dtype_size(dtype) : 1;
  Status checked = nccl_data_type("alltoallv", dtype, &type);
  if (checked.ok()) checked = rank_blocks("alltoallv", "send_counts", send_counts, size(), element_size, &sends);
  if (checked.ok()) checked = rank_blocks("alltoallv", "recv_counts", recv_counts, size(), element_size, &receives);
  if (checked.ok()) checked = check_buffer("alltoallv", "input", input, static_cast<int64_t>(sends.total));
  if (checked.ok()) checked = check_buffer("alltoallv", "output", output, static_cast<int64_t>(receives.total));
  if (checked.ok() && input == output && sends.total > 0 && receives.total > 0) {
    checked = Status::InvalidArgument("alltoallv: input and output must be different buffers");
  }
  if (!checked.ok()) return finished_work(checked);
  const cudaStream_t stream = device_->stream();
  return run("alltoallv", [&] {
    if (sends.total == 0 && receives.total == 0) return Status::OK();
    return launch(describe("ncclSend/ncclRecv", "alltoallv", sends.total, dtype), [&](ncclComm_t comm) {
      return grouped([&] {
        for (int r = 0; r < size(); ++r) {
          const size_t peer = static_cast<size_t>(r);
          if (sends.counts[peer] > 0) {
            const ncclResult_t sent = ncclSend(advance(input, sends.offsets[peer], element_size),
                                               sends.counts[peer], type, r, comm, stream);
            if (sent != ncclSuccess) return sent;
          }
          if (receives.counts[peer] > 0) {
            const ncclResult_t received = ncclRecv(advance(output, receives.offsets[peer], element_size),
                                                   receives.counts[peer], type, r, comm, stream);
            if (received != ncclSuccess) return received;
          }
        }
        return ncclSuccess;
      });
    });
  });
}

WorkPtr NcclBackend::reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts,
                                   DataType dtype, ReduceOp op, double factor) {
  ncclDataType_t type;
  ncclRedOp_t unused;
  RankBlocks blocks;
  Status checked = nccl_reduction("reducescatter", dtype, op, &type, &unused);
  if (checked.ok()) checked = check_factor("reducescatter", dtype, factor);
  if (checked.ok()) {
    checked = rank_blocks("reducescatter", "recv_counts", recv_counts, size(), dtype_size(dtype), &blocks);
  }
  const size_t me = static_cast<size_t>(rank());
  if (checked.ok()) checked = check_buffer("reducescatter", "input", input, static_cast<int64_t>(blocks.total));
  if (checked.ok()) checked = check_buffer("reducescatter", "output", output, recv_counts[me]);
  if (!checked.ok()) return finished_work(checked);
  const cudaStream_t stream = device_->stream();
  const size_t element_size = dtype_size(dtype);
  const size_t mine = blocks.counts[me];
  // In place (output == input): the result is reduced where this rank's
  // block lies in the input, NCCL's own in-place layout, then moved to the
  // start, as backend.h asks.
  const bool in_place = input == output;
  void* result = in_place ? advance(output, blocks.offsets[me], element_size) : output;
  return run("reducescatter", [&] {
    if (blocks.total == 0) return Status::OK();
    if (blocks.equal) {
      const auto reduce = [&](ncclComm_t comm, ncclRedOp_t nccl_op) {
        return ncclReduceScatter(input, result, mine, type, nccl_op, comm, stream);
      };
      CHORUS_RETURN_IF_ERROR(reduce_and_scale("reducescatter", dtype, op, factor, reduce, result,
                                              static_cast<int64_t>(mine)));
    } else {
      // Uneven blocks: block r is a reduce to root r; recvbuff matters only
      // on the root.
      const auto reduce = [&](ncclComm_t comm, ncclRedOp_t nccl_op) {
        return grouped([&] {
          for (int r = 0; r < size(); ++r) {
            const size_t block = static_cast<size_t>(r);
            if (blocks.counts[block] == 0) continue;
            const ncclResult_t reduced =
                ncclReduce(advance(input, blocks.offsets[block], element_size), r == rank() ? result : nullptr,
                           blocks.counts[block], type, nccl_op, r, comm, stream);
            if (reduced != ncclSuccess) return reduced;
          }
          return ncclSuccess;
        });
      };
      CHORUS_RETURN_IF_ERROR(reduce_and_scale("reducescatter", dtype, op, factor, reduce, result,
                                              static_cast<int64_t>(mine)));
    }
    return move_within(output, result, mine, element_size);
  });
}

WorkPtr NcclBackend::barrier() {
  const cudaStream_t stream = device_->stream();
  return run("barrier", [&] {
    return launch("ncclAllReduce (barrier)", [&](ncclComm_t comm) {
      return ncclAllReduce(barrier_scalar_.get(), barrier_scalar_.get(), 1, ncclInt32, ncclSum, comm, stream);
    });
  });
}

}  // namespace chorus
