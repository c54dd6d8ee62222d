#include "chorus/event.h"

namespace chorus {
namespace {

class DoneEvent : public Event {
 public:
  bool done() const override { return true; }
  void synchronize() const override {}
};

}  // namespace

std::shared_ptr<const Event> done_event() {
  static const std::shared_ptr<const Event> event = std::make_shared<DoneEvent>();
  return event;
}

}  // namespace chorus
