#include "protocol/message.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

namespace chorus {
namespace {

Request full_request() {
  Request q;
  q.name = "layer1.weight.grad";
  q.op = OpType::kBroadcast;
  q.rank = 3;
  q.dtype = DataType::kBFloat16;
  q.shape = {7, 0, 1LL << 40};
  q.device = Device::cuda(5);
  q.reduce_op = ReduceOp::kMax;
  q.prescale = 0.25;
  q.postscale = -3.5e-7;
  q.root = 2;
  q.group = "bucket-4";
  q.group_size = 9;
  q.edit_control().timeline_path = "/tmp/trace.json";
  q.edit_control().mark_cycles = true;
  q.process_set = 3;
  q.set_ranks = {0, 2};
  q.set_id = 4;
  q.edit_control().error = "rank 2 rejected it";
  return q;
}

Response full_response() {
  Response p;
  p.type = Response::Type::kAllgather;
  p.name = "emb";
  p.dtype = DataType::kInt64;
  p.device = Device::cuda(1);
  p.reduce_op = ReduceOp::kProduct;
  p.prescale = 2.0;
  p.postscale = 0.5;
  p.root = 1;
  p.elements = 123456789012LL;
  p.first_dims = {3, 0, 5};
  p.error_message = "some error";
  p.last_joined_rank = 2;
  p.shutdown_rank = 1;
  p.group = "g";
  p.edit_control().timeline_path = "relative/trace.json";
  p.edit_control().mark_cycles = true;
  p.process_set = 2;
  p.set_ranks = {1, 3};
  p.set_id = 5;
  p.error_code = StatusCode::kAborted;
  p.edit_control().failing_rank = 3;
  return p;
}

void expect_equal(const Request& a, const Request& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.reduce_op, b.reduce_op);
  EXPECT_EQ(a.prescale, b.prescale);
  EXPECT_EQ(a.postscale, b.postscale);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.group, b.group);
  EXPECT_EQ(a.group_size, b.group_size);
  EXPECT_EQ(a.timeline_path(), b.timeline_path());
  EXPECT_EQ(a.mark_cycles(), b.mark_cycles());
  EXPECT_EQ(a.process_set, b.process_set);
  EXPECT_EQ(a.set_ranks, b.set_ranks);
  EXPECT_EQ(a.set_id, b.set_id);
  EXPECT_EQ(a.error(), b.error());
}

TEST(MessageTest, Names) {
  EXPECT_STREQ(op_type_name(OpType::kAllreduce), "allreduce");
  EXPECT_STREQ(op_type_name(OpType::kReducescatter), "reducescatter");
  EXPECT_STREQ(op_type_name(OpType::kBarrier), "barrier");
  EXPECT_STREQ(response_type_name(Response::Type::kError), "error");
  EXPECT_STREQ(response_type_name(Response::Type::kAlltoall), "alltoall");
  EXPECT_EQ(response_type_for(OpType::kAllgather), Response::Type::kAllgather);
  EXPECT_EQ(response_type_for(OpType::kBarrier), Response::Type::kBarrier);
  EXPECT_EQ(response_type_for(OpType::kJoin), Response::Type::kJoin);
  EXPECT_EQ(response_type_for(OpType::kShutdown), Response::Type::kShutdown);
  EXPECT_STREQ(op_type_name(OpType::kStartTimeline), "start_timeline");
  EXPECT_STREQ(op_type_name(OpType::kStopTimeline), "stop_timeline");
  EXPECT_EQ(response_type_for(OpType::kStartTimeline), Response::Type::kStartTimeline);
  EXPECT_EQ(response_type_for(OpType::kStopTimeline), Response::Type::kStopTimeline);
  EXPECT_STREQ(response_type_name(Response::Type::kStopTimeline), "stop_timeline");
}

TEST(MessageTest, SameCollectiveIgnoresRankAndDeviceIndex) {
  Request a = full_request();
  Request b = a;
  b.rank = 0;
  b.device = Device::cuda(0);
  EXPECT_TRUE(a.same_collective(b));
  b.device = Device::cpu();
  EXPECT_FALSE(a.same_collective(b));
}

TEST(MessageTest, SameCollectiveComparesEveryField) {
  const Request a = full_request();
  std::vector<std::function<void(Request*)>> changes = {
      [](Request* q) { q->name = "other"; },
      [](Request* q) { q->op = OpType::kAllreduce; },
      [](Request* q) { q->dtype = DataType::kFloat16; },
      [](Request* q) { q->shape[1] = 1; },
      [](Request* q) { q->shape.push_back(1); },
      [](Request* q) { q->reduce_op = ReduceOp::kMin; },
      [](Request* q) { q->prescale = 1.0; },
      [](Request* q) { q->postscale = 1.0; },
      [](Request* q) { q->root = 0; },
      [](Request* q) { q->group = ""; },
      [](Request* q) { q->group_size = 1; },
      [](Request* q) { q->edit_control().timeline_path = "/tmp/other.json"; },
      [](Request* q) { q->edit_control().mark_cycles = false; },
      [](Request* q) { q->process_set = 0; },
      [](Request* q) { q->set_ranks.clear(); },
      [](Request* q) { q->set_id = 0; },
      [](Request* q) { q->edit_control().error.clear(); },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    Request b = a;
    changes[i](&b);
    EXPECT_FALSE(a.same_collective(b)) << "change " << i;
  }
}

// Control arguments are shared by copies until one of them edits its own:
// a copy's edit never shows in the original.
TEST(MessageTest, ControlArgumentsAreCopiedOnEdit) {
  const Request a = full_request();
  Request b = a;
  b.edit_control().error = "another reason";
  b.edit_control().mark_cycles = false;
  EXPECT_EQ(a.error(), "rank 2 rejected it");
  EXPECT_TRUE(a.mark_cycles());
  EXPECT_EQ(b.error(), "another reason");
  EXPECT_EQ(b.timeline_path(), "/tmp/trace.json");
  EXPECT_FALSE(a.same_collective(b));
  // A control with every field at its default is no control at all.
  Request plain;
  Request defaulted;
  defaulted.edit_control();
  EXPECT_TRUE(plain.same_collective(defaulted));
  EXPECT_EQ(plain.error(), "");
  EXPECT_EQ(plain.timeline_path(), "");
  EXPECT_FALSE(plain.mark_cycles());
  const Response p = full_response();
  Response q = p;
  q.edit_control().failing_rank = 0;
  EXPECT_EQ(p.failing_rank(), 3);
  EXPECT_EQ(q.failing_rank(), 0);
  EXPECT_EQ(q.timeline_path(), "relative/trace.json");
  EXPECT_EQ(Response().failing_rank(), -1);
}

// A tensor's request and response parse without control arguments, as they
// were sent: they stay as cheap to copy on the receiving rank.
TEST(MessageTest, PlainMessagesParseWithoutControl) {
  Request q;
  q.name = "grad";
  q.shape = {4};
  Response p;
  p.name = "grad";
  p.elements = 4;
  std::vector<Request> requests;
  ASSERT_TRUE(parse_requests(serialize_requests({q, full_request()}), &requests).ok());
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].control, nullptr);
  ASSERT_NE(requests[1].control, nullptr);
  std::vector<Response> responses;
  ASSERT_TRUE(parse_responses(serialize_responses({p, full_response()}), &responses).ok());
  ASSERT_EQ(responses.size(), 2u);
  EXPECT_EQ(responses[0].control, nullptr);
  ASSERT_NE(responses[1].control, nullptr);
}

TEST(MessageTest, FirstDimensionMayDifferOnlyForAllgatherAndAlltoall) {
  Request a;
  a.name = "t";
  a.shape = {2, 3};
  Request b = a;
  b.shape = {5, 3};
  for (OpType op : {OpType::kAllgather, OpType::kAlltoall}) {
    a.op = b.op = op;
    EXPECT_TRUE(a.same_collective(b)) << op_type_name(op);
  }
  for (OpType op : {OpType::kAllreduce, OpType::kBroadcast, OpType::kReducescatter}) {
    a.op = b.op = op;
    EXPECT_FALSE(a.same_collective(b)) << op_type_name(op);
  }
  a.op = b.op = OpType::kAllgather;
  b.shape = {2, 4};
  EXPECT_FALSE(a.same_collective(b));
}

TEST(MessageTest, RequestsRoundTrip) {
  Request plain;
  plain.name = "";
  std::vector<Request> in = {full_request(), plain, full_request(), full_request()};
  in[2].op = OpType::kShutdown;
  in[3].op = OpType::kStartTimeline;
  in[2].name = std::string("nul\0inside", 10);
  std::vector<Request> out;
  ASSERT_TRUE(parse_requests(serialize_requests(in), &out).ok());
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) expect_equal(in[i], out[i]);
}

TEST(MessageTest, EmptyListsRoundTrip) {
  std::vector<Request> requests{Request{}};
  ASSERT_TRUE(parse_requests(serialize_requests({}), &requests).ok());
  EXPECT_TRUE(requests.empty());
  std::vector<Response> responses{Response{}};
  ASSERT_TRUE(parse_responses(serialize_responses({}), &responses).ok());
  EXPECT_TRUE(responses.empty());
}

TEST(MessageTest, ResponsesRoundTrip) {
  Response join;
  join.type = Response::Type::kJoin;
  join.last_joined_rank = 0;
  std::vector<Response> in = {full_response(), join};
  std::vector<Response> out;
  ASSERT_TRUE(parse_responses(serialize_responses(in), &out).ok());
  ASSERT_EQ(out.size(), 2u);
  const Response& a = in[0];
  const Response& b = out[0];
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.reduce_op, b.reduce_op);
  EXPECT_EQ(a.prescale, b.prescale);
  EXPECT_EQ(a.postscale, b.postscale);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.elements, b.elements);
  EXPECT_EQ(a.first_dims, b.first_dims);
  EXPECT_EQ(a.error_message, b.error_message);
  EXPECT_EQ(a.last_joined_rank, b.last_joined_rank);
  EXPECT_EQ(a.shutdown_rank, b.shutdown_rank);
  EXPECT_EQ(a.group, b.group);
  EXPECT_EQ(a.timeline_path(), b.timeline_path());
  EXPECT_EQ(a.mark_cycles(), b.mark_cycles());
  EXPECT_FALSE(out[1].mark_cycles());
  EXPECT_EQ(a.process_set, b.process_set);
  EXPECT_EQ(a.set_ranks, b.set_ranks);
  EXPECT_EQ(a.set_id, b.set_id);
  EXPECT_EQ(a.error_code, b.error_code);
  EXPECT_EQ(a.failing_rank(), b.failing_rank());
  EXPECT_EQ(out[1].type, Response::Type::kJoin);
  EXPECT_EQ(out[1].last_joined_rank, 0);
}

void expect_corrupt(const Status& s, const std::string& detail) {
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message().rfind("corrupt negotiation message: ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find(detail), std::string::npos) << s.message();
}

TEST(MessageTest, EveryTruncationIsRejected) {
  const std::string requests = serialize_requests({full_request(), full_request()});
  for (size_t n = 0; n < requests.size(); ++n) {
    std::vector<Request> out;
    Status s = parse_requests(requests.substr(0, n), &out);
    EXPECT_FALSE(s.ok()) << "prefix " << n;
    expect_corrupt(s, "");
    EXPECT_TRUE(out.empty());
  }
  const std::string responses = serialize_responses({full_response(), full_response()});
  for (size_t n = 0; n < responses.size(); ++n) {
    std::vector<Response> out;
    EXPECT_FALSE(parse_responses(responses.substr(0, n), &out).ok()) << "prefix " << n;
    EXPECT_TRUE(out.empty());
  }
}

TEST(MessageTest, RejectsVersionKindTrailingBytesAndBadEnums) {
  std::vector<Request> requests;
  std::vector<Response> responses;
  std::string blob = serialize_requests({full_request()});

  std::string bad_version = blob;
  bad_version[0] = 9;
  expect_corrupt(parse_requests(bad_version, &requests), "unsupported version 9");

  // A response list is not a request list, even though both parse far.
  expect_corrupt(parse_requests(serialize_responses({full_response()}), &requests),
                 "unexpected message kind");
  expect_corrupt(parse_responses(blob, &responses), "unexpected message kind");

  expect_corrupt(parse_requests(blob + "x", &requests), "1 trailing bytes");

  // The op byte follows the count (4 bytes) and the name (4 + length).
  std::string bad_op = blob;
  bad_op[2 + 4 + 4 + full_request().name.size()] = 42;
  expect_corrupt(parse_requests(bad_op, &requests), "invalid op 42");
  // Point-to-point ops name handles; they are never negotiated.
  bad_op[2 + 4 + 4 + full_request().name.size()] = static_cast<char>(OpType::kSend);
  expect_corrupt(parse_requests(bad_op, &requests), "op send, which is never negotiated");

  // mark_cycles is the last byte: 0 or 1.
  std::string bad_flag = blob;
  bad_flag.back() = 2;
  expect_corrupt(parse_requests(bad_flag, &requests), "invalid flag 2");
}

TEST(MessageTest, HugeCountsAndLengthsAreRejectedBeforeAllocating) {
  std::string blob = serialize_requests({});
  blob[2] = blob[3] = blob[4] = blob[5] = '\xff';
  std::vector<Request> out;
  expect_corrupt(parse_requests(blob, &out), "count 4294967295");

  std::string named = serialize_requests({full_request()});
  named[6] = named[7] = named[8] = named[9] = '\x7f';  // the name's length
  expect_corrupt(parse_requests(named, &out), "string of");
}

TEST(MessageTest, RandomGarbageNeverParsesOrCrashes) {
  std::mt19937 rng(1234);
  const std::string valid = serialize_responses({full_response()});
  int accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string blob = valid;
    // Flip a few bytes of a valid message; most must be caught, and none may
    // read out of bounds (run under CHORUS_SANITIZE to be sure).
    for (int k = 0; k < 3; ++k) blob[rng() % blob.size()] = static_cast<char>(rng());
    std::vector<Response> out;
    if (parse_responses(blob, &out).ok()) ++accepted;
  }
  // Flips inside names or floating-point fields are indistinguishable from
  // valid data; the rest must be rejected.
  EXPECT_LT(accepted, 2000);
  for (int i = 0; i < 500; ++i) {
    std::string blob(rng() % 64, '\0');
    for (char& c : blob) c = static_cast<char>(rng());
    std::vector<Request> out;
    (void)parse_requests(blob, &out);
  }
}

}  // namespace
}  // namespace chorus
