// StallInspector (coordinator only): remembers since when each tensor has been
// submitted by some ranks but not all, warns once per check period naming
// the tensors and the missing ranks, and reports when a stall has lasted long
// enough that the job must stop.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace chorus {

class StallInspector {
 public:
  using Clock = std::chrono::steady_clock;
  StallInspector(double check_seconds, double shutdown_seconds, int world_size);

  // The tensor is pending on `ready_ranks` (the other `members` are
  // missing; empty `members`: every rank of the job). Call every cycle for
  // every partially submitted tensor; the first call starts its clock. `op`
  // ("allreduce", ...) and `label` (how messages name the tensor, e.g.
  // "'x' of process set 2"; empty: 'name') only appear in the messages.
  // `name` is the tensor's key (tensor_key()).
  void record_pending(const std::string& name, const std::set<int>& ready_ranks, Clock::time_point now,
                      const std::string& op = "collective", const std::string& label = "",
                      const std::vector<int>& members = {});
  // A cached tensor is ready on some ranks only; which ones is not known yet.
  void record_partial_cached(const std::string& name, Clock::time_point now,
                             const std::string& op = "collective", const std::string& label = "");
  // The tensor is no longer pending (done, failed or evicted).
  void forget(const std::string& name);

  // Cached tensors partially ready for longer than the check period: the
  // controller sends them through the coordinator to learn who is missing.
  std::vector<std::string> cached_to_invalidate(Clock::time_point now) const;
  // A warning naming the stalled tensors and missing ranks, at most once per
  // check period; nullopt when nothing is due.
  std::optional<std::string> check(Clock::time_point now);
  // Set when a stall has lasted stall_shutdown_seconds: the error message.
  std::optional<std::string> shutdown_reason(Clock::time_point now) const;
  // When the next check or shutdown could fire (for the coordinator's timer).
  std::optional<Clock::time_point> next_deadline() const;

 private:
  struct Pending {
    Clock::time_point since;
    std::optional<std::set<int>> ready_ranks;  // unknown for cached tensors
    std::string op;
    std::string label;         // "'name'" unless the tensor is in a process set
    std::vector<int> members;  // empty: every rank of the job
  };
  std::string describe(const std::string& name, const Pending& p, Clock::time_point now) const;
  std::string missing_ranks(const Pending& p) const;
  // How long a cached tensor may stay partially ready before the coordinator
  // asks the ranks to re-send it (the shorter enabled period); 0 = never.
  std::chrono::duration<double> invalidate_after() const;

  std::chrono::duration<double> check_period_;
  std::chrono::duration<double> shutdown_after_;
  int world_size_;
  std::map<std::string, Pending> pending_;
  std::optional<Clock::time_point> last_warning_;
};

}  // namespace chorus
