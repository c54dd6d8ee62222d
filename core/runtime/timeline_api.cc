// The public timeline control (chorus.h start_timeline(), stop_timeline()):
// requests of the global set, negotiated like a collective, so that every
// rank starts and stops at the same point of the response order; rank 0
// opens or closes its trace there (Runtime::control_timeline()).
#include <string>

#include "chorus/chorus.h"
#include "runtime/api.h"

namespace chorus {
namespace {

void control(Runtime& runtime, OpType op, const std::string& path, bool mark_cycles) {
  Runtime* rt = &runtime;
  const std::string name = Runtime::timeline_request_name();
  Request request =
      detail::base_request(name, op, Tensor(nullptr, DataType::kUInt8, {0}), rt->topology().rank);
  Request::Control& args = request.edit_control();
  args.timeline_path = path;
  args.mark_cycles = mark_cycles;
  detail::submit_one(*rt, detail::make_entry(std::move(request), Tensor(), Tensor(), rt->new_handle(name, op)))
      .wait();
}

}  // namespace

void start_timeline(const std::string& path, bool mark_cycles) {
  auto rt = detail::running_runtime();
  if (path.empty()) {
    throw Error(Status::InvalidArgument(
        "start_timeline(): the path is empty; expected the file that rank 0 writes the trace to"));
  }
  control(*rt, OpType::kStartTimeline, path, mark_cycles);
}

void stop_timeline() { control(*detail::running_runtime(), OpType::kStopTimeline, "", false); }

}  // namespace chorus
