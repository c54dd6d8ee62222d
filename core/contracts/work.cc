#include "contracts/work.h"

namespace chorus {
namespace {

class FinishedWork : public Work {
 public:
  explicit FinishedWork(Status status) : status_(std::move(status)) {}
  bool test() override { return true; }
  Status wait() override { return status_; }

 private:
  Status status_;
};

}  // namespace

WorkPtr finished_work(Status status) { return std::make_unique<FinishedWork>(std::move(status)); }

}  // namespace chorus
