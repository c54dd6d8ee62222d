// The public C++ API: argument checks, building entries, and the one owner
// of the process's Runtime.
#include <cstdlib>
#include <chrono>
#include <mutex>
#include <thread>

#include "runtime/argument_checks.h"
#include "chorus/chorus.h"
#include "runtime/init_with_backends.h"
#include "base/launcher_rendezvous.h"
#include "runtime/runtime.h"
#include "runtime/running_runtime.h"

namespace chorus {
namespace {

// Owns the process's runtime between init() and shutdown(), and the count of
// threads blocked on its handles, which lives as long as the process because
// handles may outlive the runtime. Framework threads take a reference to the
// runtime for the duration of a call.
class RuntimeOwner {
 public:
  static RuntimeOwner& instance() {
    static RuntimeOwner owner;
    return owner;
  }

  void init(const std::vector<BackendMaker>& custom = {}) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (runtime_) return;
    // Before MPI starts: a rank that waits there for a missing peer has
    // still reached init(), and chorusrun's start timeout says so.
    report_init_to_launcher();
    std::unique_ptr<Runtime> runtime;
    throw_if_error(Runtime::create(&runtime, &blocked_waiters_, nullptr, custom));
    runtime_ = std::move(runtime);
    if (!exit_hook_registered_) {
      // A rank that returns from main() without shutdown() still tells its
      // peers, so their pending collectives fail instead of hanging.
      std::atexit([] { RuntimeOwner::instance().shutdown(); });
      exit_hook_registered_ = true;
    }
  }

  void shutdown() {
    std::shared_ptr<Runtime> runtime;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      runtime.swap(runtime_);
      if (runtime) was_shut_down_ = true;
    }
    if (!runtime) return;
    runtime->shutdown();
    // Release communication (and finalize MPI when Chorus initialised it) on
    // this thread and before returning: wait out framework threads that are
    // still inside a call holding a reference.
    while (runtime.use_count() > 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    runtime.reset();
  }

  bool initialized() {
    std::lock_guard<std::mutex> lock(mutex_);
    return runtime_ != nullptr;
  }

  std::shared_ptr<Runtime> get() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!runtime_) {
      throw Error(was_shut_down_ ? Status::PreconditionFailed("Chorus has been shut down")
                                 : Status::PreconditionFailed(
                                       "Chorus is not initialized: call chorus::init() first"));
    }
    return runtime_;
  }

 private:
  std::mutex mutex_;
  std::shared_ptr<Runtime> runtime_;
  detail::BlockedWaiters blocked_waiters_{0};
  bool was_shut_down_ = false;
  bool exit_hook_registered_ = false;
};

// The running runtime; throws when there is none or it has stopped.
std::shared_ptr<Runtime> runtime() {
  std::shared_ptr<Runtime> rt = RuntimeOwner::instance().get();
  throw_if_error(rt->stopped_reason());
  return rt;
}

Request base_request(const std::string& name, OpType op, const Tensor& tensor, int rank) {
  Request request;
  request.name = name;
  request.op = op;
  request.rank = rank;
  request.dtype = tensor.dtype;
  request.shape = tensor.shape;
  request.device = tensor.device;
  return request;
}

TensorEntry make_entry(Request request, const Tensor& input, const Tensor& output,
                       std::shared_ptr<detail::HandleState> handle) {
  TensorEntry entry;
  entry.request = std::move(request);
  entry.input_data = input.data;
  entry.output_data = output.data;
  entry.ready = input.ready;
  entry.handle = std::move(handle);
  entry.enqueued = std::chrono::steady_clock::now();
  return entry;
}

void check_device(Runtime& rt, const std::string& name, const Device& device) {
  throw_if_error(rt.check_device(name, device));
}

Handle submit(Runtime& rt, std::vector<TensorEntry> entries) {
  Handle handle(entries.front().handle);
  throw_if_error(rt.enqueue(std::move(entries)));
  return handle;
}

Handle submit_one(Runtime& rt, TensorEntry&& entry) {
  Handle handle(entry.handle);
  throw_if_error(rt.enqueue(std::move(entry)));
  return handle;
}

// Until process sets are implemented (issue 27, in progress): a set other
// than the global one is refused rather than silently ignored.
void require_global(const ProcessSet& process_set) {
  if (!process_set.is_global()) {
    throw Error(Status::PreconditionFailed("process set " + std::to_string(process_set.id) +
                                           ": process sets are not implemented yet"));
  }
}

Request allreduce_request(const std::string& name, const Tensor& input, const AllreduceOptions& options,
                          int rank) {
  require_global(options.process_set);
  Request request = base_request(name, OpType::kAllreduce, input, rank);
  request.reduce_op = options.op;
  request.prescale = options.prescale_factor;
  request.postscale = options.postscale_factor;
  return request;
}

}  // namespace

std::shared_ptr<Runtime> detail::running_runtime() { return runtime(); }

void init() { RuntimeOwner::instance().init(); }
void detail::init_with_backends(std::vector<BackendMaker> makers) { RuntimeOwner::instance().init(makers); }
void shutdown() { RuntimeOwner::instance().shutdown(); }
bool is_initialized() { return RuntimeOwner::instance().initialized(); }

int rank() { return runtime()->topology().rank; }
int size() { return runtime()->topology().size; }
int local_rank() { return runtime()->topology().local_rank; }
int local_size() { return runtime()->topology().local_size; }
int cross_rank() { return runtime()->topology().cross_rank; }
int cross_size() { return runtime()->topology().cross_size; }

// The backends are fixed once the runtime exists, so a stopped one still
// answers (the collective that follows reports why it stopped).
bool supports(const Device& device) { return RuntimeOwner::instance().get()->supports(device); }
Status check_device(const std::string& name, const Device& device) {
  return RuntimeOwner::instance().get()->check_device(name, device);
}

Handle allreduce_async(const std::string& name, const Tensor& input, const Tensor& output,
                       const AllreduceOptions& options) {
  auto rt = runtime();
  throw_if_error(check_name(name));
  throw_if_error(check_allreduce(name, input, output, options));
  check_device(*rt, name, input.device);
  auto handle = rt->new_handle(name, OpType::kAllreduce);
  return submit_one(*rt, make_entry(allreduce_request(name, input, options, rt->topology().rank), input,
                                    output, handle));
}

Handle grouped_allreduce_async(const std::string& name, const std::vector<Tensor>& inputs,
                               const std::vector<Tensor>& outputs, const AllreduceOptions& options) {
  auto rt = runtime();
  throw_if_error(check_name(name));
  if (inputs.empty() || inputs.size() != outputs.size()) {
    throw Error(Status::InvalidArgument("'" + name + "': grouped allreduce got " +
                                        std::to_string(inputs.size()) + " inputs and " +
                                        std::to_string(outputs.size()) +
                                        " outputs; expected the same non-zero number"));
  }
  auto handle = rt->new_handle(name, OpType::kAllreduce, static_cast<int>(inputs.size()));
  std::vector<TensorEntry> entries;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string member = name + "." + std::to_string(i);
    throw_if_error(check_allreduce(member, inputs[i], outputs[i], options));
    check_device(*rt, member, inputs[i].device);
    Request request = allreduce_request(member, inputs[i], options, rt->topology().rank);
    request.group = name;
    request.group_size = static_cast<int32_t>(inputs.size());
    entries.push_back(make_entry(std::move(request), inputs[i], outputs[i], handle));
  }
  return submit(*rt, std::move(entries));
}

Handle allgather_async(const std::string& name, const Tensor& input, OutputAllocator allocator,
                       const ProcessSet& process_set) {
  auto rt = runtime();
  require_global(process_set);
  throw_if_error(check_name(name));
  throw_if_error(check_has_first_dim(name, "allgather", input));
  check_device(*rt, name, input.device);
  TensorEntry entry = make_entry(base_request(name, OpType::kAllgather, input, rt->topology().rank), input,
                                 Tensor(), rt->new_handle(name, OpType::kAllgather));
  entry.allocator = std::move(allocator);
  return submit_one(*rt, std::move(entry));
}

Handle broadcast_async(const std::string& name, const Tensor& inout, int root_rank,
                       const ProcessSet& process_set) {
  auto rt = runtime();
  require_global(process_set);
  throw_if_error(check_name(name));
  throw_if_error(check_tensor(name, "tensor", inout));
  throw_if_error(check_root(name, root_rank, rt->topology().size));
  check_device(*rt, name, inout.device);
  Request request = base_request(name, OpType::kBroadcast, inout, rt->topology().rank);
  request.root = root_rank;
  return submit_one(*rt, make_entry(std::move(request), inout, inout, rt->new_handle(name, OpType::kBroadcast)));
}

Handle alltoall_async(const std::string& name, const Tensor& input, const std::vector<int64_t>& splits,
                      OutputAllocator allocator, const ProcessSet& process_set) {
  auto rt = runtime();
  require_global(process_set);
  throw_if_error(check_name(name));
  std::vector<int64_t> rows = splits;
  throw_if_error(check_alltoall_splits(name, input, rt->topology().size, &rows));
  check_device(*rt, name, input.device);
  TensorEntry entry = make_entry(base_request(name, OpType::kAlltoall, input, rt->topology().rank), input,
                                 Tensor(), rt->new_handle(name, OpType::kAlltoall));
  entry.splits = std::move(rows);
  entry.allocator = std::move(allocator);
  return submit_one(*rt, std::move(entry));
}

Handle reducescatter_async(const std::string& name, const Tensor& input, ReduceOp op,
                           OutputAllocator allocator, const ProcessSet& process_set) {
  auto rt = runtime();
  require_global(process_set);
  throw_if_error(check_name(name));
  throw_if_error(check_reducescatter(name, input, op));
  check_device(*rt, name, input.device);
  Request request = base_request(name, OpType::kReducescatter, input, rt->topology().rank);
  request.reduce_op = op;
  TensorEntry entry =
      make_entry(std::move(request), input, Tensor(), rt->new_handle(name, OpType::kReducescatter));
  entry.allocator = std::move(allocator);
  return submit_one(*rt, std::move(entry));
}

Handle barrier_async(const ProcessSet& process_set) {
  auto rt = runtime();
  require_global(process_set);
  const std::string name = rt->next_barrier_name();
  Request request = base_request(name, OpType::kBarrier, Tensor(nullptr, DataType::kUInt8, {0}), rt->topology().rank);
  return submit_one(*rt, make_entry(std::move(request), Tensor(), Tensor(), rt->new_handle(name, OpType::kBarrier)));
}

Handle join_async() {
  auto rt = runtime();
  const std::string name = "chorus.join";
  Request request = base_request(name, OpType::kJoin, Tensor(nullptr, DataType::kUInt8, {0}), rt->topology().rank);
  return submit_one(*rt, make_entry(std::move(request), Tensor(), Tensor(), rt->new_handle(name, OpType::kJoin)));
}

void allreduce(const std::string& name, const Tensor& input, const Tensor& output,
               const AllreduceOptions& options) {
  allreduce_async(name, input, output, options).wait();
}
void allreduce(const std::string& name, const Tensor& inout, const AllreduceOptions& options) {
  allreduce_async(name, inout, inout, options).wait();
}
void grouped_allreduce(const std::string& name, const std::vector<Tensor>& inputs,
                       const std::vector<Tensor>& outputs, const AllreduceOptions& options) {
  grouped_allreduce_async(name, inputs, outputs, options).wait();
}
Handle allgather(const std::string& name, const Tensor& input, OutputAllocator allocator,
                 const ProcessSet& process_set) {
  Handle handle = allgather_async(name, input, std::move(allocator), process_set);
  handle.wait();
  return handle;
}
void broadcast(const std::string& name, const Tensor& inout, int root_rank, const ProcessSet& process_set) {
  broadcast_async(name, inout, root_rank, process_set).wait();
}
Handle alltoall(const std::string& name, const Tensor& input, const std::vector<int64_t>& splits,
                OutputAllocator allocator, const ProcessSet& process_set) {
  Handle handle = alltoall_async(name, input, splits, std::move(allocator), process_set);
  handle.wait();
  return handle;
}
Handle reducescatter(const std::string& name, const Tensor& input, ReduceOp op, OutputAllocator allocator,
                     const ProcessSet& process_set) {
  Handle handle = reducescatter_async(name, input, op, std::move(allocator), process_set);
  handle.wait();
  return handle;
}
void barrier(const ProcessSet& process_set) { barrier_async(process_set).wait(); }
int join() {
  Handle handle = join_async();
  handle.wait();
  return handle.last_joined_rank();
}

}  // namespace chorus
