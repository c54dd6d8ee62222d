// The public C++ API: argument checks, building entries, and the one owner
// of the process's Runtime (runtime/api.h says what the API's other files
// use of it).
#include "runtime/api.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "runtime/argument_checks.h"
#include "chorus/chorus.h"
#include "runtime/init_with_backends.h"
#include "base/launcher_rendezvous.h"
#include "runtime/runtime.h"

namespace chorus {
namespace {

using detail::base_request;
using detail::make_entry;
using detail::submit;
using detail::submit_one;

// Owns the process's runtime between init() and shutdown(), and the count of
// threads blocked on its handles, which lives as long as the process because
// handles may outlive the runtime. Framework threads take a reference to the
// runtime for the duration of a call, and a thread that runs cycles while it
// waits for the duration of those.
class RuntimeOwner : public detail::CycleRunner {
 public:
  static RuntimeOwner& instance() {
    static RuntimeOwner owner;
    return owner;
  }

  // Returns false when the runtime was already running.
  bool init(const std::vector<BackendMaker>& custom = {}) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (runtime_) return false;
    // Before MPI starts: a rank that waits there for a missing peer has
    // still reached init(), and chorusrun's start timeout says so.
    report_init_to_launcher();
    std::unique_ptr<Runtime> runtime;
    throw_if_error(Runtime::create(&runtime, &blocked_waiters_, this, nullptr, custom));
    runtime_ = std::move(runtime);
    if (!exit_hook_registered_) {
      // A rank that returns from main() without shutdown() still tells its
      // peers, so their pending collectives fail instead of hanging.
      std::atexit([] { RuntimeOwner::instance().shutdown(); });
      exit_hook_registered_ = true;
    }
    return true;
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

  bool run_cycles_until(const std::function<bool()>& done) override {
    std::shared_ptr<Runtime> runtime;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      runtime = runtime_;
    }
    return runtime && runtime->run_cycles_until(done);
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

void check_device(Runtime& rt, const std::string& name, const Device& device) {
  throw_if_error(rt.check_device(name, device));
}

// The set's members (empty for the global set, which every rank is in):
// throws when the set does not exist or this rank is not a member.
std::vector<int> require_member(Runtime& rt, const ProcessSet& set, const char* op, const std::string& name) {
  if (set.is_global()) return {};
  std::vector<int> ranks;
  Status status = rt.process_sets().ranks(set.id, &ranks);
  if (!status.ok()) throw Error(Status::InvalidArgument(std::string(op) + " '" + name + "': " + status.message()));
  const int me = rt.topology().rank;
  if (!std::binary_search(ranks.begin(), ranks.end(), me)) {
    throw Error(Status::InvalidArgument(std::string(op) + " '" + name + "': rank " + std::to_string(me) +
                                        " is not in process set " + std::to_string(set.id) + " " +
                                        ProcessSetTable::describe(ranks) +
                                        "; only the set's members may submit to it"));
  }
  // A failed set refuses work at once (fail_process_set()).
  status = rt.process_sets().usable(set.id);
  if (!status.ok()) throw Error(Status(status.code(), std::string(op) + " '" + name + "': " + status.message()));
  return ranks;
}

// Process sets other than the global one run on host memory only.
void check_set_device(const ProcessSet& set, const std::string& name, const Device& device) {
  if (set.is_global() || device.kind == Device::Kind::kCPU) return;
  throw Error(Status::InvalidArgument("tensor '" + name + "' is on " + device.to_string() +
                                      " but process set " + std::to_string(set.id) +
                                      " runs on CPU tensors only (process sets on GPUs are not supported yet)"));
}

// The number of ranks a collective on `set` runs over.
int set_size(Runtime& rt, const ProcessSet& set, const std::vector<int>& members) {
  return set.is_global() ? rt.topology().size : static_cast<int>(members.size());
}

Request allreduce_request(const std::string& name, const Tensor& input, const AllreduceOptions& options,
                          int rank) {
  Request request = base_request(name, OpType::kAllreduce, input, rank);
  request.process_set = options.process_set.id;
  request.reduce_op = options.op;
  request.prescale = options.prescale_factor;
  request.postscale = options.postscale_factor;
  return request;
}

}  // namespace

namespace detail {

std::shared_ptr<Runtime> running_runtime() { return runtime(); }

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
                       std::shared_ptr<HandleState> handle) {
  TensorEntry entry;
  entry.request = std::move(request);
  entry.input_data = input.data;
  entry.output_data = output.data;
  entry.ready = input.ready;
  entry.handle = std::move(handle);
  entry.enqueued = std::chrono::steady_clock::now();
  return entry;
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

}  // namespace detail

void init() { RuntimeOwner::instance().init(); }
void init(const InitOptions& options) {
  if (!RuntimeOwner::instance().init()) return;
  try {
    // Collective like init() itself: ids 1..n in the given order.
    for (const std::vector<int>& ranks : options.process_sets) add_process_set(ranks);
  } catch (const Error& e) {
    // Every rank fails alike: a list some rank refuses, or lists that
    // disagree, fail the add in the negotiation, everywhere.
    RuntimeOwner::instance().shutdown();
    throw Error(Status(e.code(), std::string("init(): static process sets: ") + e.what()));
  }
}
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
  const std::vector<int> members = require_member(*rt, options.process_set, "allreduce", name);
  throw_if_error(check_adasum_ranks(name, options.op, options.process_set.id,
                                    set_size(*rt, options.process_set, members)));
  check_set_device(options.process_set, name, input.device);
  check_device(*rt, name, input.device);
  throw_if_error(rt->check_reduction(name, input.device, input.dtype));
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
  const std::vector<int> members = require_member(*rt, options.process_set, "grouped allreduce", name);
  throw_if_error(check_adasum_ranks(name, options.op, options.process_set.id,
                                    set_size(*rt, options.process_set, members)));
  auto handle = rt->new_handle(name, OpType::kAllreduce, static_cast<int>(inputs.size()));
  std::vector<TensorEntry> entries;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string member = name + "." + std::to_string(i);
    throw_if_error(check_allreduce(member, inputs[i], outputs[i], options));
    check_set_device(options.process_set, member, inputs[i].device);
    check_device(*rt, member, inputs[i].device);
    throw_if_error(rt->check_reduction(member, inputs[i].device, inputs[i].dtype));
    Request request = allreduce_request(member, inputs[i], options, rt->topology().rank);
    request.group = name;
    request.group_size = static_cast<int32_t>(inputs.size());
    entries.push_back(make_entry(std::move(request), inputs[i], outputs[i], handle));
    entries.back().member = static_cast<int>(i);
  }
  return submit(*rt, std::move(entries));
}

namespace {

// The checks every grouped collective whose outputs the runtime allocates
// makes of its inputs and allocators.
void check_group(const std::string& name, const char* op, size_t inputs, size_t allocators) {
  if (inputs == 0) {
    throw Error(Status::InvalidArgument("'" + name + "': grouped " + op + " got no inputs; expected at least one"));
  }
  if (allocators != 0 && allocators != inputs) {
    throw Error(Status::InvalidArgument("'" + name + "': grouped " + op + " got " + std::to_string(inputs) +
                                        " inputs and " + std::to_string(allocators) +
                                        " output allocators; expected one allocator per input, or none"));
  }
}

// Member `i` of a group of `size` named `group`: its request made, the
// caller's allocator for it (if any) attached.
TensorEntry group_member(Request request, const std::string& group, size_t i, size_t size, const Tensor& input,
                         const std::vector<OutputAllocator>& allocators,
                         const std::shared_ptr<detail::HandleState>& handle) {
  request.group = group;
  request.group_size = static_cast<int32_t>(size);
  TensorEntry entry = make_entry(std::move(request), input, Tensor(), handle);
  entry.member = static_cast<int>(i);
  if (!allocators.empty()) entry.allocator = allocators[i];
  return entry;
}

}  // namespace

Handle grouped_allgather_async(const std::string& name, const std::vector<Tensor>& inputs,
                               const std::vector<OutputAllocator>& allocators, const ProcessSet& process_set) {
  auto rt = runtime();
  throw_if_error(check_name(name));
  check_group(name, "allgather", inputs.size(), allocators.size());
  require_member(*rt, process_set, "grouped allgather", name);
  auto handle = rt->new_handle(name, OpType::kAllgather, static_cast<int>(inputs.size()));
  std::vector<TensorEntry> entries;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string member = name + "." + std::to_string(i);
    throw_if_error(check_has_first_dim(member, "allgather", inputs[i]));
    check_set_device(process_set, member, inputs[i].device);
    check_device(*rt, member, inputs[i].device);
    Request request = base_request(member, OpType::kAllgather, inputs[i], rt->topology().rank);
    request.process_set = process_set.id;
    entries.push_back(group_member(std::move(request), name, i, inputs.size(), inputs[i], allocators, handle));
  }
  return submit(*rt, std::move(entries));
}

Handle grouped_reducescatter_async(const std::string& name, const std::vector<Tensor>& inputs, ReduceOp op,
                                   const std::vector<OutputAllocator>& allocators, const ProcessSet& process_set) {
  ReducescatterOptions options;
  options.op = op;
  options.process_set = process_set;
  return grouped_reducescatter_async(name, inputs, options, allocators);
}

Handle grouped_reducescatter_async(const std::string& name, const std::vector<Tensor>& inputs,
                                   const ReducescatterOptions& options,
                                   const std::vector<OutputAllocator>& allocators) {
  auto rt = runtime();
  throw_if_error(check_name(name));
  check_group(name, "reducescatter", inputs.size(), allocators.size());
  require_member(*rt, options.process_set, "grouped reducescatter", name);
  auto handle = rt->new_handle(name, OpType::kReducescatter, static_cast<int>(inputs.size()));
  std::vector<TensorEntry> entries;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string member = name + "." + std::to_string(i);
    throw_if_error(check_reducescatter(member, inputs[i], options));
    check_set_device(options.process_set, member, inputs[i].device);
    check_device(*rt, member, inputs[i].device);
    throw_if_error(rt->check_reduction(member, inputs[i].device, inputs[i].dtype));
    Request request = base_request(member, OpType::kReducescatter, inputs[i], rt->topology().rank);
    request.reduce_op = options.op;
    request.prescale = options.prescale_factor;
    request.postscale = options.postscale_factor;
    request.process_set = options.process_set.id;
    entries.push_back(group_member(std::move(request), name, i, inputs.size(), inputs[i], allocators, handle));
  }
  return submit(*rt, std::move(entries));
}

Handle allgather_async(const std::string& name, const Tensor& input, OutputAllocator allocator,
                       const ProcessSet& process_set) {
  auto rt = runtime();
  throw_if_error(check_name(name));
  throw_if_error(check_has_first_dim(name, "allgather", input));
  require_member(*rt, process_set, "allgather", name);
  check_set_device(process_set, name, input.device);
  check_device(*rt, name, input.device);
  Request request = base_request(name, OpType::kAllgather, input, rt->topology().rank);
  request.process_set = process_set.id;
  TensorEntry entry = make_entry(std::move(request), input, Tensor(), rt->new_handle(name, OpType::kAllgather));
  entry.allocator = std::move(allocator);
  return submit_one(*rt, std::move(entry));
}

Handle broadcast_async(const std::string& name, const Tensor& inout, int root_rank,
                       const ProcessSet& process_set) {
  auto rt = runtime();
  throw_if_error(check_name(name));
  throw_if_error(check_tensor(name, "tensor", inout));
  throw_if_error(check_root(name, root_rank, rt->topology().size));
  const std::vector<int> members = require_member(*rt, process_set, "broadcast", name);
  if (!process_set.is_global() && !std::binary_search(members.begin(), members.end(), root_rank)) {
    throw Error(Status::InvalidArgument("'" + name + "': root rank " + std::to_string(root_rank) +
                                        " is not in process set " + std::to_string(process_set.id) + " " +
                                        ProcessSetTable::describe(members) +
                                        "; expected a rank of the job that is a member of the set"));
  }
  check_set_device(process_set, name, inout.device);
  check_device(*rt, name, inout.device);
  Request request = base_request(name, OpType::kBroadcast, inout, rt->topology().rank);
  request.root = root_rank;
  request.process_set = process_set.id;
  return submit_one(*rt, make_entry(std::move(request), inout, inout, rt->new_handle(name, OpType::kBroadcast)));
}

Handle alltoall_async(const std::string& name, const Tensor& input, const std::vector<int64_t>& splits,
                      OutputAllocator allocator, const ProcessSet& process_set) {
  auto rt = runtime();
  throw_if_error(check_name(name));
  const std::vector<int> members = require_member(*rt, process_set, "alltoall", name);
  std::vector<int64_t> rows = splits;
  throw_if_error(check_alltoall_splits(name, input, set_size(*rt, process_set, members), &rows));
  check_set_device(process_set, name, input.device);
  check_device(*rt, name, input.device);
  Request request = base_request(name, OpType::kAlltoall, input, rt->topology().rank);
  request.process_set = process_set.id;
  TensorEntry entry = make_entry(std::move(request), input, Tensor(), rt->new_handle(name, OpType::kAlltoall));
  entry.splits = std::move(rows);
  entry.allocator = std::move(allocator);
  return submit_one(*rt, std::move(entry));
}

Handle reducescatter_async(const std::string& name, const Tensor& input, ReduceOp op,
                           OutputAllocator allocator, const ProcessSet& process_set) {
  ReducescatterOptions options;
  options.op = op;
  options.process_set = process_set;
  return reducescatter_async(name, input, options, std::move(allocator));
}

Handle reducescatter_async(const std::string& name, const Tensor& input, const ReducescatterOptions& options,
                           OutputAllocator allocator) {
  auto rt = runtime();
  throw_if_error(check_name(name));
  throw_if_error(check_reducescatter(name, input, options));
  require_member(*rt, options.process_set, "reducescatter", name);
  check_set_device(options.process_set, name, input.device);
  check_device(*rt, name, input.device);
  throw_if_error(rt->check_reduction(name, input.device, input.dtype));
  Request request = base_request(name, OpType::kReducescatter, input, rt->topology().rank);
  request.reduce_op = options.op;
  request.prescale = options.prescale_factor;
  request.postscale = options.postscale_factor;
  request.process_set = options.process_set.id;
  TensorEntry entry =
      make_entry(std::move(request), input, Tensor(), rt->new_handle(name, OpType::kReducescatter));
  entry.allocator = std::move(allocator);
  return submit_one(*rt, std::move(entry));
}

Handle barrier_async(const ProcessSet& process_set) {
  auto rt = runtime();
  require_member(*rt, process_set, "barrier", "chorus.barrier");
  const std::string name =
      process_set.is_global() ? rt->next_barrier_name() : rt->process_sets().next_barrier_name(process_set.id);
  Request request = base_request(name, OpType::kBarrier, Tensor(nullptr, DataType::kUInt8, {0}), rt->topology().rank);
  request.process_set = process_set.id;
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
Handle grouped_allgather(const std::string& name, const std::vector<Tensor>& inputs,
                         const std::vector<OutputAllocator>& allocators, const ProcessSet& process_set) {
  Handle handle = grouped_allgather_async(name, inputs, allocators, process_set);
  handle.wait();
  return handle;
}
Handle grouped_reducescatter(const std::string& name, const std::vector<Tensor>& inputs, ReduceOp op,
                             const std::vector<OutputAllocator>& allocators, const ProcessSet& process_set) {
  Handle handle = grouped_reducescatter_async(name, inputs, op, allocators, process_set);
  handle.wait();
  return handle;
}
Handle grouped_reducescatter(const std::string& name, const std::vector<Tensor>& inputs,
                             const ReducescatterOptions& options, const std::vector<OutputAllocator>& allocators) {
  Handle handle = grouped_reducescatter_async(name, inputs, options, allocators);
  handle.wait();
  return handle;
}
Handle reducescatter(const std::string& name, const Tensor& input, const ReducescatterOptions& options,
                     OutputAllocator allocator) {
  Handle handle = reducescatter_async(name, input, options, std::move(allocator));
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
