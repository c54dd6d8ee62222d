// The StageLink over Chorus's point-to-point send and recv.
#include <vector>

#include <torch/torch.h>

#include "chorus/chorus.h"
#include "chorus/status.h"
#include "chorus/torch/ops.h"
#include "chorus/torch/point_to_point.h"
#include "chorus/torch/pipeline/stage_link.h"

namespace chorus {
namespace torch {
namespace {

// "<name>.meta": [dtype, number of dimensions, size of each dimension...],
// padded to a fixed length so the receiver can post it before it knows the
// shape. Activations of more dimensions than this are refused by name.
constexpr int64_t kMaxDims = 8;
constexpr int64_t kMetaLength = 2 + kMaxDims;

class ChorusStageLink : public StageLink {
 public:
  void send(const ::torch::Tensor& tensor, int dest_rank, const std::string& name) override {
    if (tensor.dim() > kMaxDims) {
      throw Error(Status::InvalidArgument(
          "pipeline message '" + name + "' has " + std::to_string(tensor.dim()) +
          " dimensions: expected at most " + std::to_string(kMaxDims)));
    }
    auto meta = ::torch::zeros({kMetaLength}, ::torch::kInt64);
    auto m = meta.accessor<int64_t, 1>();
    m[0] = static_cast<int64_t>(to_chorus_dtype(tensor.scalar_type(), name));
    m[1] = tensor.dim();
    for (int64_t d = 0; d < tensor.dim(); ++d) m[2 + d] = tensor.size(d);
    reap();
    start(name + ".meta", meta, dest_rank);
    start(name, tensor, dest_rank);
  }

  ::torch::Tensor recv(int source_rank, const std::string& name) override {
    auto meta = ::torch::zeros({kMetaLength}, ::torch::kInt64);
    torch::recv(meta, source_rank, name + ".meta");
    auto m = meta.accessor<int64_t, 1>();
    if (m[1] < 0 || m[1] > kMaxDims) {
      throw Error(Status::Internal("pipeline message '" + name + "' from rank " +
                                   std::to_string(source_rank) + " announced " +
                                   std::to_string(m[1]) + " dimensions (at most " +
                                   std::to_string(kMaxDims) + " are sent)"));
    }
    std::vector<int64_t> sizes(m.data() + 2, m.data() + 2 + m[1]);
    auto dtype = to_torch_dtype(static_cast<DataType>(m[0]));
    auto tensor = ::torch::empty(sizes, ::torch::TensorOptions().dtype(dtype));
    torch::recv(tensor, source_rank, name);
    reap();
    return tensor;
  }

  void flush() override {
    // Every send is waited for, even after a failure, so that no tensor is
    // freed while the runtime may still read it; the first error is thrown.
    for (auto& pending : pending_) settle(pending);
    pending_.clear();
    std::string failure;
    failure.swap(failure_);
    if (!failure.empty()) throw Error(Status::Aborted(failure));
  }

  ~ChorusStageLink() override {
    try {
      flush();
    } catch (const Error&) {
      // Already reported by the step that failed; nothing may be freed early.
    }
  }

 private:
  struct PendingSend {
    TorchHandle handle;  // keeps the tensor alive until the message is out
    std::string name;
    int dest_rank;
  };

  void start(const std::string& name, const ::torch::Tensor& tensor, int dest_rank) {
    pending_.push_back({torch::send_async(tensor, dest_rank, name), name, dest_rank});
  }

  // Waits for one send; remembers the first failure for flush() to throw.
  void settle(const PendingSend& pending) {
    try {
      pending.handle.wait();
    } catch (const Error& e) {
      if (failure_.empty()) {
        failure_ = "sending '" + pending.name + "' to rank " + std::to_string(pending.dest_rank) +
                   " failed: " + e.what();
      }
    }
  }

  // Lets go of the sends that are out (without waiting for the others), so
  // that a step holds only the tensors still in transit, not every one it
  // sent until flush(): under 1F1B that is a few micro-batches, not M.
  void reap() {
    std::vector<PendingSend> still;
    for (auto& pending : pending_) {
      if (pending.handle.test()) {
        settle(pending);
      } else {
        still.push_back(std::move(pending));
      }
    }
    pending_.swap(still);
  }

  std::vector<PendingSend> pending_;
  std::string failure_;  // of the first send that failed since the last flush()
};

}  // namespace

std::shared_ptr<StageLink> make_chorus_stage_link() {
  return std::make_shared<ChorusStageLink>();
}

}  // namespace torch
}  // namespace chorus
