// Requests (what one rank wants to run) and responses (what every rank will
// run, in the same order), plus their wire format for the negotiation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

enum class OpType : uint8_t {
  kAllreduce = 0,
  kAllgather,
  kBroadcast,
  kAlltoall,
  kReducescatter,
  kBarrier,
  kJoin,
  kShutdown,  // a rank asks the job to stop (sent by shutdown())
  // Collective over every rank of the job (process_set.h): each rank's
  // request carries the new set's ranks (set_ranks) or the set to remove
  // (set_id); they run on the global set.
  kAddProcessSet,
  kRemoveProcessSet,
  // One member fails a process set alone (fail_process_set()): a request of
  // the global set that needs no other rank; set_id is the set, error the
  // member's reason. The coordinator answers it in the cycle it arrives.
  kFailProcessSet,
  // Point-to-point (core/contracts/point_to_point.h): never negotiated; they name the
  // handles of send_async() and recv_async().
  kSend,
  kRecv,
  // Timeline control (chorus.h start_timeline(), stop_timeline()): requests
  // of the global set; every rank applies them at the same point of the
  // response order, and rank 0 opens or closes its trace there.
  kStartTimeline,
  kStopTimeline,
};
const char* op_type_name(OpType op);

// One rank's request to run a named collective.
//
// Every plain tensor's request and response is copied and moved several
// times per negotiation cycle, so the fields that only control messages use
// sit behind one pointer, null on a tensor's (Control below): a tensor's
// request or response costs what it did before control messages had them.
// The fields are ordered to leave no padding.
struct Request {
  // The arguments of control requests. Shared and immutable once set: a
  // copy of the request shares them; edit_control() makes its own.
  struct Control {
    // Non-empty when this rank rejected its own arguments (a control call
    // such as add_process_set with a duplicate rank): the request is sent
    // anyway, so that every rank's call fails together (the coordinator
    // answers with an error naming this rank and the reason) and no rank's
    // call is paired with another rank's later one. kFailProcessSet: the
    // member's reason.
    std::string error;
    std::string timeline_path;  // kStartTimeline: the trace file rank 0 writes
    bool mark_cycles = false;   // kStartTimeline: a marker per negotiation cycle
  };

  std::string name;
  OpType op = OpType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce_op = ReduceOp::kSum;
  int32_t rank = 0;  // the requesting rank
  Shape shape;
  Device device;
  double prescale = 1.0;
  double postscale = 1.0;
  std::string group;            // grouped collectives: the group's name, else empty
  int32_t group_size = 0;
  int32_t root = 0;             // broadcast
  // The process set the collective runs on (0: the global set). A name is
  // unique within its set: (process_set, name) identifies a tensor.
  int32_t process_set = 0;
  int32_t set_id = 0;              // kRemoveProcessSet, kFailProcessSet: the set
  std::vector<int64_t> set_ranks;  // kAddProcessSet: the new set's ranks, ascending
  std::shared_ptr<const Control> control;  // null: every Control field at its default

  const std::string& error() const;
  const std::string& timeline_path() const;
  bool mark_cycles() const { return control != nullptr && control->mark_cycles; }
  // This request's own copy of its control arguments, to change them.
  Control& edit_control();

  // True when `other` asks for the same collective (everything but rank;
  // for allgather and alltoall the first dimension may differ).
  bool same_collective(const Request& other) const;
};

// What every rank executes. Unfused responses carry one name; the fusion
// planner groups several compatible ones for execution.
struct Response {
  enum class Type : uint8_t {
    kAllreduce = 0,
    kAllgather,
    kBroadcast,
    kAlltoall,
    kReducescatter,
    kBarrier,
    kJoin,
    kError,     // the named tensor fails on every rank with error_message
    kShutdown,  // the job stops: every pending tensor fails with error_message
    kAddProcessSet,     // every rank creates set set_id of set_ranks here
    kRemoveProcessSet,  // every rank removes set set_id here
    // Set set_id failed (failing_rank's fail_process_set, with error_message
    // its reason): every member fails the set's pending and later work.
    kFailProcessSet,
    kStartTimeline,     // rank 0 starts writing timeline_path here
    kStopTimeline,      // rank 0 closes its trace here
  };
  // The arguments of control responses (see Request::Control).
  struct Control {
    std::string timeline_path;  // kStartTimeline
    bool mark_cycles = false;   // kStartTimeline
    int32_t failing_rank = -1;  // kFailProcessSet
  };

  Type type = Type::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce_op = ReduceOp::kSum;
  // kError: the code the named tensor fails with (ranks that disagree: a
  // mismatch; a rank that rejected its arguments: kInvalidArgument; a failed
  // or removed set: kAborted).
  StatusCode error_code = StatusCode::kMismatch;
  int32_t root = 0;
  std::string name;
  Device device;
  double prescale = 1.0;
  double postscale = 1.0;
  // Element count of the tensor (allreduce, broadcast, reducescatter), so a
  // joined rank can contribute zeros of the right size; for allgather, of
  // the gathered output (what fusion counts against its threshold).
  int64_t elements = 0;
  // allgather: the first dimension on each rank, indexed by rank.
  std::vector<int64_t> first_dims;
  std::string error_message;  // kError, kShutdown, kFailProcessSet
  int32_t last_joined_rank = -1;  // kJoin
  int32_t shutdown_rank = -1;     // kShutdown caused by a rank's shutdown(), else -1
  std::string group;
  int32_t process_set = 0;         // the set it runs on; ranks outside it skip it
  int32_t set_id = 0;              // kAddProcessSet (the id assigned), kRemoveProcessSet, kFailProcessSet
  std::vector<int64_t> set_ranks;  // kAddProcessSet
  std::shared_ptr<const Control> control;  // null: every Control field at its default

  const std::string& timeline_path() const;
  bool mark_cycles() const { return control != nullptr && control->mark_cycles; }
  int32_t failing_rank() const { return control != nullptr ? control->failing_rank : -1; }
  // This response's own copy of its control arguments, to change them.
  Control& edit_control();
};
const char* response_type_name(Response::Type type);
Response::Type response_type_for(OpType op);

// The key under which the queue, the controller and its cache hold a
// tensor: the name itself on the global set; on another set, a name under
// the reserved "chorus." prefix (which no user name may have) that cannot
// collide with any other set's or the global set's names.
std::string tensor_key(int32_t process_set, const std::string& name);
inline std::string tensor_key(const Request& r) { return tensor_key(r.process_set, r.name); }
inline std::string tensor_key(const Response& r) { return tensor_key(r.process_set, r.name); }
// "'x'" on the global set, "'x' of process set 2" on another: for messages.
std::string tensor_label(int32_t process_set, const std::string& name);
// "process set 2 [0, 3] failed on rank 3: <reason>": what every member's
// work on a failed set fails with (docs/CONVENTIONS.md).
std::string set_failure_text(int32_t process_set, const std::vector<int>& ranks, int32_t failing_rank,
                             const std::string& reason);

// Wire format: little-endian, length-prefixed, versioned. Parsing checks every
// length against the remaining bytes and reports corruption as a Status.
std::string serialize_requests(const std::vector<Request>& requests);
Status parse_requests(const std::string& bytes, std::vector<Request>* out);
std::string serialize_responses(const std::vector<Response>& responses);
Status parse_responses(const std::string& bytes, std::vector<Response>* out);

}  // namespace chorus
