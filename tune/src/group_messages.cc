#include "chorus/tune/group_messages.h"

#include <cstdint>
#include <vector>

#include "chorus/chorus.h"

namespace chorus {
namespace tune {
namespace {

Tensor length_tensor(int64_t* length) { return Tensor(length, DataType::kInt64, {1}); }

// An empty text still needs an address: a tensor's data may not be null.
char empty_text_byte = 0;

Tensor bytes_tensor(std::string& text) {
  return Tensor(text.empty() ? &empty_text_byte : &text[0], DataType::kUInt8,
                {static_cast<int64_t>(text.size())});
}

}  // namespace

void send_text(const std::string& name, const std::string& text, int dest_rank) {
  int64_t length = static_cast<int64_t>(text.size());
  std::string bytes = text;
  // Both sends are posted before either is waited for: the receiver takes
  // them in order.
  Handle len = send_async(name + ".length", length_tensor(&length), dest_rank);
  Handle data = send_async(name + ".bytes", bytes_tensor(bytes), dest_rank);
  len.wait();
  data.wait();
}

std::string recv_text(const std::string& name, int source_rank) {
  int64_t length = 0;
  recv(name + ".length", length_tensor(&length), source_rank);
  if (length < 0 || length > (int64_t{1} << 30))
    throw Error(Status::Internal("message '" + name + "' from rank " + std::to_string(source_rank) +
                                 " announces " + std::to_string(length) + " bytes"));
  std::string text(static_cast<size_t>(length), '\0');
  recv(name + ".bytes", bytes_tensor(text), source_rank);
  return text;
}

std::string broadcast_text(const std::string& name, const std::string& text, int root_rank,
                           const ProcessSet& set) {
  int64_t length = static_cast<int64_t>(text.size());
  broadcast(name + ".length", length_tensor(&length), root_rank, set);
  std::string out = rank() == root_rank ? text : std::string(static_cast<size_t>(length), '\0');
  broadcast(name + ".bytes", bytes_tensor(out), root_rank, set);
  return out;
}

}  // namespace tune
}  // namespace chorus
