#include "chorus/handle.h"

#include "runtime/handle_state.h"

namespace chorus {
namespace detail {

bool HandleState::finish_member(const Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (remaining_ == 0) return false;
  if (!status.ok() && status_.ok()) status_ = status;
  --remaining_;
  return remaining_ == 0;
}

void HandleState::abandon(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (remaining_ == 0) return;
    if (status_.ok()) status_ = status;
    remaining_ = 0;
  }
  notify_done();
}

void HandleState::set_completion_event(std::shared_ptr<const Event> finished) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++handed_to_device_;
    // Members go to one device's stream in order: the last event covers all.
    finished_on_device_ = std::move(finished);
  }
  done_cv_.notify_all();
}

bool HandleState::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return remaining_ == 0;
}

void HandleState::drive(std::optional<std::chrono::steady_clock::time_point> deadline) const {
  if (!progress_ || finished()) return;
  progress_->drive([this] { return finished(); }, deadline);
}

Status HandleState::completion_event(std::shared_ptr<const Event>* out) const {
  drive(std::nullopt);  // a driven handle's work is on the host: done is handed
  std::unique_lock<std::mutex> lock(mutex_);
  const auto handed = [this] { return remaining_ == 0 || handed_to_device_ == members_; };
  if (!handed()) {
    if (blocked_) blocked_->fetch_add(1, std::memory_order_relaxed);
    done_cv_.wait(lock, handed);
    if (blocked_) blocked_->fetch_sub(1, std::memory_order_relaxed);
  }
  if (remaining_ == 0 && !status_.ok()) return status_;
  *out = handed_to_device_ == members_ && finished_on_device_ ? finished_on_device_ : done_event();
  return Status::OK();
}

void HandleState::set_output(int member, const Tensor& output, std::shared_ptr<void> storage) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t i = static_cast<size_t>(member);
  if (member < 0 || member >= members_) return;  // entries are made with their handle's members only
  if (outputs_.empty()) {
    outputs_.resize(static_cast<size_t>(members_));
    output_storage_.resize(static_cast<size_t>(members_));
  }
  outputs_[i] = output;
  output_storage_[i] = std::move(storage);
}

void HandleState::set_received_splits(std::vector<int64_t> splits) {
  std::lock_guard<std::mutex> lock(mutex_);
  received_splits_ = std::move(splits);
}

void HandleState::set_last_joined_rank(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  last_joined_rank_ = rank;
}

bool HandleState::block_until_done(std::unique_lock<std::mutex>& lock,
                                   std::optional<std::chrono::steady_clock::time_point> deadline) const {
  if (remaining_ == 0) return true;
  if (blocked_) blocked_->fetch_add(1, std::memory_order_relaxed);
  const auto done = [this] { return remaining_ == 0; };
  bool finished = true;
  if (deadline) {
    finished = done_cv_.wait_until(lock, *deadline, done);
  } else {
    done_cv_.wait(lock, done);
  }
  if (blocked_) blocked_->fetch_sub(1, std::memory_order_relaxed);
  return finished;
}

void HandleState::run_cycles() const {
  if (cycles_ == nullptr || progress_ || finished()) return;
  if (blocked_) blocked_->fetch_add(1, std::memory_order_relaxed);
  cycles_->run_cycles_until([this] { return finished(); });
  if (blocked_) blocked_->fetch_sub(1, std::memory_order_relaxed);
}

Status HandleState::wait() const {
  drive(std::nullopt);
  run_cycles();
  std::unique_lock<std::mutex> lock(mutex_);
  block_until_done(lock, std::nullopt);
  return status_;
}

Status HandleState::wait_until(std::chrono::steady_clock::time_point deadline) const {
  drive(deadline);
  std::unique_lock<std::mutex> lock(mutex_);
  if (!block_until_done(lock, deadline)) {
    return Status::InProgress("'" + name_ + "' is still in progress");
  }
  return status_;
}

bool HandleState::done() const {
  if (progress_ && !finished()) progress_->poll();
  return finished();
}

Status HandleState::status() const {
  if (progress_ && !finished()) progress_->poll();
  std::lock_guard<std::mutex> lock(mutex_);
  if (remaining_ > 0) return Status::InProgress("'" + name_ + "' is still in progress");
  return status_;
}

Tensor HandleState::output() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return outputs_.empty() ? Tensor() : outputs_.front();
}

std::vector<Tensor> HandleState::outputs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (outputs_.empty()) return std::vector<Tensor>(static_cast<size_t>(members_));
  return outputs_;
}

std::vector<int64_t> HandleState::received_splits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return received_splits_;
}

void HandleState::set_process_set_id(int32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  process_set_id_ = id;
}

int32_t HandleState::process_set_id() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return process_set_id_;
}

int HandleState::last_joined_rank() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_joined_rank_;
}

}  // namespace detail

namespace {

// Why `accessor` has nothing to give for the handle of `state`: it holds a
// result of the ops `applies_to` only. OK when it does apply.
Status not_applicable(const detail::HandleState& state, const char* accessor, const char* applies_to,
                      bool applies) {
  if (applies) return Status::OK();
  return Status::InvalidArgument(std::string(accessor) + " applies to " + applies_to + " handles, not to '" +
                                 state.name() + "' (" + op_type_name(state.op()) + ")");
}

}  // namespace

// One rule for every accessor: an empty handle is an error; a result the
// handle's collective does not produce is an error, whatever its state; a
// result is handed out only once the collective has succeeded.
const detail::HandleState& Handle::state() const {
  if (!state_) throw Error(Status::InvalidArgument("This chorus::Handle is empty (default-constructed)"));
  return *state_;
}

const std::string& Handle::name() const { return state().name(); }

void Handle::wait() const { throw_if_error(state().wait()); }

bool Handle::wait_for(std::chrono::milliseconds timeout) const {
  // Saturate: now() + a huge timeout would overflow the clock.
  const auto now = std::chrono::steady_clock::now();
  const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::time_point::max() - now);
  const auto deadline = timeout >= room ? std::chrono::steady_clock::time_point::max() : now + timeout;
  const Status status = state().wait_until(deadline);
  if (status.code() == StatusCode::kInProgress) return false;
  throw_if_error(status);
  return true;
}

bool Handle::test() const { return state().done(); }

Status Handle::status() const { return state().status(); }

std::shared_ptr<const Event> Handle::completion_event() const {
  std::shared_ptr<const Event> event;
  throw_if_error(state().completion_event(&event));
  return event;
}

namespace {

bool allocates_output(OpType op) {
  return op == OpType::kAllgather || op == OpType::kAlltoall || op == OpType::kReducescatter;
}

}  // namespace

Tensor Handle::output() const {
  throw_if_error(
      not_applicable(state(), "output()", "allgather, alltoall and reducescatter", allocates_output(state().op())));
  if (state().members() > 1) {
    throw Error(Status::InvalidArgument("output() applies to a single collective's handle, not to group '" +
                                        state().name() + "' of " + std::to_string(state().members()) +
                                        " tensors: use outputs()"));
  }
  throw_if_error(status());
  return state().output();
}

std::vector<Tensor> Handle::outputs() const {
  throw_if_error(not_applicable(state(), "outputs()", "allgather, alltoall and reducescatter",
                                allocates_output(state().op())));
  throw_if_error(status());
  return state().outputs();
}

std::vector<int64_t> Handle::received_splits() const {
  throw_if_error(not_applicable(state(), "received_splits()", "alltoall", state().op() == OpType::kAlltoall));
  throw_if_error(status());
  return state().received_splits();
}

int Handle::last_joined_rank() const {
  throw_if_error(not_applicable(state(), "last_joined_rank()", "join", state().op() == OpType::kJoin));
  throw_if_error(status());
  return state().last_joined_rank();
}

}  // namespace chorus
