// The progress of point-to-point handles: their waiters drive the transport
// (core/contracts/point_to_point.h) instead of sleeping until the background thread
// completes them.
#pragma once

#include <memory>
#include <utility>

#include "contracts/point_to_point.h"
#include "runtime/handle_state.h"

namespace chorus {

class PointToPointProgress : public detail::HandleProgress {
 public:
  explicit PointToPointProgress(std::shared_ptr<PointToPoint> transport) : transport_(std::move(transport)) {}
  void poll() override { transport_->poll(); }
  void drive(const std::function<bool()>& finished,
             std::optional<std::chrono::steady_clock::time_point> deadline) override {
    transport_->drive(finished, deadline);
  }

 private:
  // Shared: a handle may be waited for after the runtime is gone (the
  // transport has failed it by then, so it is never driven again).
  std::shared_ptr<PointToPoint> transport_;
};

}  // namespace chorus
