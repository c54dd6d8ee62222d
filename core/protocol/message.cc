#include "protocol/message.h"

#include <cstring>

namespace chorus {

const char* op_type_name(OpType op) {
  switch (op) {
    case OpType::kAllreduce: return "allreduce";
    case OpType::kAllgather: return "allgather";
    case OpType::kBroadcast: return "broadcast";
    case OpType::kAlltoall: return "alltoall";
    case OpType::kReducescatter: return "reducescatter";
    case OpType::kBarrier: return "barrier";
    case OpType::kJoin: return "join";
    case OpType::kShutdown: return "shutdown";
    case OpType::kAddProcessSet: return "add_process_set";
    case OpType::kRemoveProcessSet: return "remove_process_set";
    case OpType::kFailProcessSet: return "fail_process_set";
    case OpType::kSend: return "send";
    case OpType::kRecv: return "recv";
    case OpType::kStartTimeline: return "start_timeline";
    case OpType::kStopTimeline: return "stop_timeline";
  }
  return "invalid-op";
}

const char* response_type_name(Response::Type type) {
  switch (type) {
    case Response::Type::kAllreduce: return "allreduce";
    case Response::Type::kAllgather: return "allgather";
    case Response::Type::kBroadcast: return "broadcast";
    case Response::Type::kAlltoall: return "alltoall";
    case Response::Type::kReducescatter: return "reducescatter";
    case Response::Type::kBarrier: return "barrier";
    case Response::Type::kJoin: return "join";
    case Response::Type::kError: return "error";
    case Response::Type::kShutdown: return "shutdown";
    case Response::Type::kAddProcessSet: return "add_process_set";
    case Response::Type::kRemoveProcessSet: return "remove_process_set";
    case Response::Type::kFailProcessSet: return "fail_process_set";
    case Response::Type::kStartTimeline: return "start_timeline";
    case Response::Type::kStopTimeline: return "stop_timeline";
  }
  return "invalid-response";
}

Response::Type response_type_for(OpType op) {
  switch (op) {
    case OpType::kAllreduce: return Response::Type::kAllreduce;
    case OpType::kAllgather: return Response::Type::kAllgather;
    case OpType::kBroadcast: return Response::Type::kBroadcast;
    case OpType::kAlltoall: return Response::Type::kAlltoall;
    case OpType::kReducescatter: return Response::Type::kReducescatter;
    case OpType::kBarrier: return Response::Type::kBarrier;
    case OpType::kJoin: return Response::Type::kJoin;
    case OpType::kShutdown: return Response::Type::kShutdown;
    case OpType::kAddProcessSet: return Response::Type::kAddProcessSet;
    case OpType::kRemoveProcessSet: return Response::Type::kRemoveProcessSet;
    case OpType::kFailProcessSet: return Response::Type::kFailProcessSet;
    case OpType::kStartTimeline: return Response::Type::kStartTimeline;
    case OpType::kStopTimeline: return Response::Type::kStopTimeline;
    case OpType::kSend:
    case OpType::kRecv: break;  // never negotiated
  }
  return Response::Type::kError;
}

std::string tensor_key(int32_t process_set, const std::string& name) {
  if (process_set == 0) return name;
  return "chorus.set" + std::to_string(process_set) + "/" + name;
}

std::string tensor_label(int32_t process_set, const std::string& name) {
  if (process_set == 0) return "'" + name + "'";
  return "'" + name + "' of process set " + std::to_string(process_set);
}

std::string set_failure_text(int32_t process_set, const std::vector<int>& ranks, int32_t failing_rank,
                             const std::string& reason) {
  std::string members = "[";
  for (size_t i = 0; i < ranks.size(); ++i) members += (i ? ", " : "") + std::to_string(ranks[i]);
  return "process set " + std::to_string(process_set) + " " + members + "] failed on rank " +
         std::to_string(failing_rank) + ": " + reason;
}

namespace {
// What the accessors of an absent Control return.
const std::string kNoText;
}  // namespace

const std::string& Request::error() const { return control != nullptr ? control->error : kNoText; }
const std::string& Request::timeline_path() const {
  return control != nullptr ? control->timeline_path : kNoText;
}
Request::Control& Request::edit_control() {
  auto own = control != nullptr ? std::make_shared<Control>(*control) : std::make_shared<Control>();
  Control& out = *own;
  control = std::move(own);
  return out;
}

const std::string& Response::timeline_path() const {
  return control != nullptr ? control->timeline_path : kNoText;
}
Response::Control& Response::edit_control() {
  auto own = control != nullptr ? std::make_shared<Control>(*control) : std::make_shared<Control>();
  Control& out = *own;
  control = std::move(own);
  return out;
}

bool Request::same_collective(const Request& other) const {
  if (name != other.name || op != other.op || dtype != other.dtype) return false;
  // Ranks usually sit on different GPUs of one host, so only the kind of
  // device has to agree, not its index.
  if (device.kind != other.device.kind) return false;
  if (reduce_op != other.reduce_op || prescale != other.prescale || postscale != other.postscale) {
    return false;
  }
  if (root != other.root || group != other.group || group_size != other.group_size) return false;
  if (process_set != other.process_set || set_ranks != other.set_ranks || set_id != other.set_id) return false;
  // Tensors' requests have no control arguments: a null pointer each.
  if (control != other.control &&
      (error() != other.error() || timeline_path() != other.timeline_path() || mark_cycles() != other.mark_cycles())) {
    return false;
  }
  if (shape.size() != other.shape.size()) return false;
  // Allgather and alltoall concatenate or split along the first dimension,
  // so each rank may bring a different number of rows.
  const bool ragged = op == OpType::kAllgather || op == OpType::kAlltoall;
  for (size_t i = ragged ? 1 : 0; i < shape.size(); ++i) {
    if (shape[i] != other.shape[i]) return false;
  }
  return true;
}

namespace {

// Version 4 of the wire format (2: process sets; 3: a request's own
// rejection, an error response's code, failing a set alone; 4: timeline
// control). Bump it when the layout changes: a peer built
// from other sources then fails loudly instead of misreading fields.
constexpr uint8_t kWireVersion = 4;
// The second byte says what the blob holds, so a response list handed to the
// request parser (or the reverse) is reported instead of half-parsed.
constexpr uint8_t kRequestsTag = 'Q';
constexpr uint8_t kResponsesTag = 'R';

class Writer {
 public:
  explicit Writer(uint8_t tag) {
    out_.push_back(static_cast<char>(kWireVersion));
    out_.push_back(static_cast<char>(tag));
  }
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { le(v, 4); }
  void i32(int32_t v) { le(static_cast<uint32_t>(v), 4); }
  void i64(int64_t v) { le(static_cast<uint64_t>(v), 8); }
  void f64(double v) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    le(bits, 8);
  }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  void dims(const std::vector<int64_t>& d) {
    u32(static_cast<uint32_t>(d.size()));
    for (int64_t x : d) i64(x);
  }
  std::string take() { return std::move(out_); }

 private:
  void le(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

// Reads little-endian fields; the first failure is remembered in error_ and
// makes every later read fail, so callers check once per record.
class Reader {
 public:
  explicit Reader(const std::string& bytes) : data_(bytes) {}

  bool header(uint8_t tag) {
    uint8_t version = 0, got = 0;
    if (!u8(&version) || !u8(&got)) return false;
    if (version != kWireVersion) return fail("unsupported version " + std::to_string(version));
    if (got != tag) return fail("unexpected message kind " + std::to_string(got));
    return true;
  }
  bool u8(uint8_t* v) {
    uint64_t x = 0;
    if (!le(&x, 1)) return false;
    *v = static_cast<uint8_t>(x);
    return true;
  }
  bool u32(uint32_t* v) {
    uint64_t x = 0;
    if (!le(&x, 4)) return false;
    *v = static_cast<uint32_t>(x);
    return true;
  }
  bool i32(int32_t* v) {
    uint32_t x = 0;
    if (!u32(&x)) return false;
    *v = static_cast<int32_t>(x);
    return true;
  }
  bool i64(int64_t* v) {
    uint64_t x = 0;
    if (!le(&x, 8)) return false;
    *v = static_cast<int64_t>(x);
    return true;
  }
  bool f64(double* v) {
    uint64_t x = 0;
    if (!le(&x, 8)) return false;
    std::memcpy(v, &x, sizeof x);
    return true;
  }
  bool str(std::string* s) {
    uint32_t n = 0;
    if (!u32(&n)) return false;
    if (n > remaining()) return fail("string of " + std::to_string(n) + " bytes " + where());
    s->assign(data_, pos_, n);
    pos_ += n;
    return true;
  }
  bool dims(std::vector<int64_t>* d) {
    uint32_t n = 0;
    if (!count(&n, 8)) return false;
    d->resize(n);
    for (auto& x : *d) {
      if (!i64(&x)) return false;
    }
    return true;
  }
  // A count of records at least `min_bytes` long each; rejects counts the
  // remaining bytes cannot hold before anything is allocated for them.
  bool count(uint32_t* n, size_t min_bytes) {
    if (!u32(n)) return false;
    if (static_cast<uint64_t>(*n) * min_bytes > remaining()) {
      return fail("count " + std::to_string(*n) + " " + where());
    }
    return true;
  }
  // Reads an enum stored as one byte, accepting values up to `max`.
  template <typename E>
  bool enumeration(E* v, uint8_t max, const char* what) {
    uint8_t x = 0;
    if (!u8(&x)) return false;
    if (x > max) return fail(std::string("invalid ") + what + " " + std::to_string(x));
    *v = static_cast<E>(x);
    return true;
  }
  // A bool stored as one byte, 0 or 1.
  bool flag(bool* v) {
    uint8_t x = 0;
    if (!u8(&x)) return false;
    if (x > 1) return fail("invalid flag " + std::to_string(x));
    *v = x == 1;
    return true;
  }
  // A field that read fine but is not allowed where it is.
  void invalid(const std::string& why) { (void)fail(why); }
  bool done() {
    if (!error_.empty()) return false;
    if (remaining() != 0) return fail(std::to_string(remaining()) + " trailing bytes");
    return true;
  }
  Status status() const { return Status::Internal("corrupt negotiation message: " + error_); }

 private:
  size_t remaining() const { return data_.size() - pos_; }
  std::string where() const {
    return "exceeds the message (" + std::to_string(remaining()) + " bytes left at offset " +
           std::to_string(pos_) + ")";
  }
  bool fail(const std::string& why) {
    if (error_.empty()) error_ = why;
    return false;
  }
  bool le(uint64_t* v, size_t bytes) {
    if (!error_.empty()) return false;
    if (remaining() < bytes) {
      return fail("truncated at offset " + std::to_string(pos_) + " of " +
                  std::to_string(data_.size()));
    }
    uint64_t x = 0;
    for (size_t i = 0; i < bytes; ++i) {
      x |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
    }
    pos_ += bytes;
    *v = x;
    return true;
  }

  const std::string& data_;
  size_t pos_ = 0;
  std::string error_;
};

// Smallest encodings, used to bound counts: every length prefix and fixed
// field present, every string and vector empty.
constexpr size_t kMinRequestBytes = 4 + 1 + 4 + 1 + 4 + 1 + 4 + 1 + 8 + 8 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + 1;
constexpr size_t kMinResponseBytes =
    1 + 4 + 1 + 1 + 4 + 1 + 8 + 8 + 4 + 8 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + 1 + 4 + 4 + 1;

constexpr uint8_t kMaxOp = static_cast<uint8_t>(OpType::kStopTimeline);
constexpr uint8_t kMaxResponseType = static_cast<uint8_t>(Response::Type::kStopTimeline);
constexpr uint8_t kMaxStatusCode = static_cast<uint8_t>(StatusCode::kInProgress);
constexpr uint8_t kMaxDtype = kNumDataTypes - 1;
constexpr uint8_t kMaxReduceOp = static_cast<uint8_t>(ReduceOp::kAdasum);
constexpr uint8_t kMaxDeviceKind = static_cast<uint8_t>(Device::Kind::kCustom);

void write_device(Writer* w, const Device& d) {
  w->u8(static_cast<uint8_t>(d.kind));
  w->i32(d.index);
}

bool read_device(Reader* r, Device* d) {
  return r->enumeration(&d->kind, kMaxDeviceKind, "device kind") && r->i32(&d->index);
}

}  // namespace

std::string serialize_requests(const std::vector<Request>& requests) {
  Writer w(kRequestsTag);
  w.u32(static_cast<uint32_t>(requests.size()));
  for (const Request& q : requests) {
    w.str(q.name);
    w.u8(static_cast<uint8_t>(q.op));
    w.i32(q.rank);
    w.u8(static_cast<uint8_t>(q.dtype));
    w.dims(q.shape);
    write_device(&w, q.device);
    w.u8(static_cast<uint8_t>(q.reduce_op));
    w.f64(q.prescale);
    w.f64(q.postscale);
    w.i32(q.root);
    w.str(q.group);
    w.i32(q.group_size);
    w.i32(q.process_set);
    w.dims(q.set_ranks);
    w.i32(q.set_id);
    w.str(q.error());
    w.str(q.timeline_path());
    w.u8(q.mark_cycles() ? 1 : 0);
  }
  return w.take();
}

Status parse_requests(const std::string& bytes, std::vector<Request>* out) {
  out->clear();
  Reader r(bytes);
  uint32_t n = 0;
  if (!r.header(kRequestsTag) || !r.count(&n, kMinRequestBytes)) return r.status();
  out->resize(n);
  for (Request& q : *out) {
    Request::Control control;
    const bool ok = r.str(&q.name) && r.enumeration(&q.op, kMaxOp, "op") && r.i32(&q.rank) &&
                    r.enumeration(&q.dtype, kMaxDtype, "dtype") && r.dims(&q.shape) &&
                    read_device(&r, &q.device) &&
                    r.enumeration(&q.reduce_op, kMaxReduceOp, "reduce op") && r.f64(&q.prescale) &&
                    r.f64(&q.postscale) && r.i32(&q.root) && r.str(&q.group) &&
                    r.i32(&q.group_size) && r.i32(&q.process_set) && r.dims(&q.set_ranks) &&
                    r.i32(&q.set_id) && r.str(&control.error) && r.str(&control.timeline_path) &&
                    r.flag(&control.mark_cycles);
    if (!ok) break;
    // A tensor's request leaves it null, as it was on the sending rank.
    if (!control.error.empty() || !control.timeline_path.empty() || control.mark_cycles) {
      q.control = std::make_shared<const Request::Control>(std::move(control));
    }
    if (q.op == OpType::kSend || q.op == OpType::kRecv) {
      r.invalid("op " + std::string(op_type_name(q.op)) + ", which is never negotiated");
      break;
    }
  }
  if (!r.done()) {
    out->clear();
    return r.status();
  }
  return Status::OK();
}

std::string serialize_responses(const std::vector<Response>& responses) {
  Writer w(kResponsesTag);
  w.u32(static_cast<uint32_t>(responses.size()));
  for (const Response& p : responses) {
    w.u8(static_cast<uint8_t>(p.type));
    w.str(p.name);
    w.u8(static_cast<uint8_t>(p.dtype));
    write_device(&w, p.device);
    w.u8(static_cast<uint8_t>(p.reduce_op));
    w.f64(p.prescale);
    w.f64(p.postscale);
    w.i32(p.root);
    w.i64(p.elements);
    w.dims(p.first_dims);
    w.str(p.error_message);
    w.i32(p.last_joined_rank);
    w.i32(p.shutdown_rank);
    w.str(p.group);
    w.i32(p.process_set);
    w.dims(p.set_ranks);
    w.i32(p.set_id);
    w.u8(static_cast<uint8_t>(p.error_code));
    w.i32(p.failing_rank());
    w.str(p.timeline_path());
    w.u8(p.mark_cycles() ? 1 : 0);
  }
  return w.take();
}

Status parse_responses(const std::string& bytes, std::vector<Response>* out) {
  out->clear();
  Reader r(bytes);
  uint32_t n = 0;
  if (!r.header(kResponsesTag) || !r.count(&n, kMinResponseBytes)) return r.status();
  out->resize(n);
  for (Response& p : *out) {
    Response::Control control;
    const bool ok =
        r.enumeration(&p.type, kMaxResponseType, "response type") && r.str(&p.name) &&
        r.enumeration(&p.dtype, kMaxDtype, "dtype") && read_device(&r, &p.device) &&
        r.enumeration(&p.reduce_op, kMaxReduceOp, "reduce op") && r.f64(&p.prescale) &&
        r.f64(&p.postscale) && r.i32(&p.root) && r.i64(&p.elements) && r.dims(&p.first_dims) &&
        r.str(&p.error_message) && r.i32(&p.last_joined_rank) && r.i32(&p.shutdown_rank) &&
        r.str(&p.group) && r.i32(&p.process_set) && r.dims(&p.set_ranks) && r.i32(&p.set_id) &&
        r.enumeration(&p.error_code, kMaxStatusCode, "status code") && r.i32(&control.failing_rank) &&
        r.str(&control.timeline_path) && r.flag(&control.mark_cycles);
    if (!ok) break;
    if (control.failing_rank != -1 || !control.timeline_path.empty() || control.mark_cycles) {
      p.control = std::make_shared<const Response::Control>(std::move(control));
    }
  }
  if (!r.done()) {
    out->clear();
    return r.status();
  }
  return Status::OK();
}

}  // namespace chorus
