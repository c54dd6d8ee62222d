#include "runtime/api_requests.h"

#include <chrono>
#include <utility>

namespace chorus {
namespace detail {

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
}  // namespace chorus
