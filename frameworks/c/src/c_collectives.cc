// The C API's collectives: each converts its arguments (c_conversions.h),
// calls the C++ API's asynchronous form and keeps the handle in the table.
// The C++ API checks everything it can check itself, so a bad tensor gets
// the same text from both APIs.
#include <string>
#include <vector>

#include "c_conversions.h"
#include "c_errors.h"
#include "chorus/c_api.h"
#include "chorus/chorus.h"
#include "handle_table.h"

namespace chorus::c_api {
namespace {

// "chorus_allreduce_async: 'grad': input"
std::string context(const char* function, const std::string& name, const char* role) {
  return std::string(function) + ": '" + name + "': " + role;
}

// Runs a submission of `collective`: *handle is 0 unless `body` returns a
// handle, which then goes into the table.
template <typename Submit>
chorus_result_t submit(const char* function, const char* collective, chorus_handle_t* handle, Submit&& body) {
  return guarded(function, [&] {
    require_pointer(handle, function, "handle");
    *handle = CHORUS_HANDLE_NULL;
    Handle submitted = body();
    *handle = HandleTable::instance().add(std::move(submitted), collective);
    return CHORUS_SUCCESS;
  });
}

AllreduceOptions allreduce_options(const Options& options, const std::string& where) {
  AllreduceOptions out;
  out.op = reduce_op_of(options, ReduceOp::kAverage, where);
  out.prescale_factor = options.prescale_factor;
  out.postscale_factor = options.postscale_factor;
  out.process_set = options.process_set;
  return out;
}

}  // namespace
}  // namespace chorus::c_api

using namespace chorus::c_api;  // NOLINT: the C entry points below are this file's only code

extern "C" {

chorus_result_t chorus_allreduce_async(const char* name, const chorus_tensor_t* input, const chorus_tensor_t* output,
                                       const chorus_options_t* options, chorus_handle_t* handle) {
  static const char* const function = "chorus_allreduce_async";
  return submit(function, "allreduce", handle, [&] {
    const std::string n = name_of(name, function);
    const chorus::Tensor in = tensor_of(input, context(function, n, "input"));
    const chorus::Tensor out = output == nullptr ? in : tensor_of(output, context(function, n, "output"));
    const Options o = options_of(options, function);
    return chorus::allreduce_async(n, in, out, allreduce_options(o, std::string(function) + ": '" + n + "'"));
  });
}

chorus_result_t chorus_grouped_allreduce_async(const char* name, int count, const chorus_tensor_t* inputs,
                                               const chorus_tensor_t* outputs, const chorus_options_t* options,
                                               chorus_handle_t* handle) {
  static const char* const function = "chorus_grouped_allreduce_async";
  return submit(function, "grouped allreduce", handle, [&] {
    const std::string n = name_of(name, function);
    if (count < 0) {
      throw CApiError(CHORUS_ERROR_INVALID_ARGUMENT, std::string(function) + ": '" + n + "': count is " +
                                                         std::to_string(count) + "; expected 1 or more");
    }
    if (count > 0) require_pointer(inputs, function, "inputs");
    std::vector<chorus::Tensor> ins, outs;
    for (int i = 0; i < count; ++i) {
      const std::string member = "inputs[" + std::to_string(i) + "]";
      ins.push_back(tensor_of(&inputs[i], context(function, n, member.c_str())));
      if (outputs == nullptr) {
        outs.push_back(ins.back());
      } else {
        const std::string out_member = "outputs[" + std::to_string(i) + "]";
        outs.push_back(tensor_of(&outputs[i], context(function, n, out_member.c_str())));
      }
    }
    const Options o = options_of(options, function);
    return chorus::grouped_allreduce_async(n, ins, outs,
                                           allreduce_options(o, std::string(function) + ": '" + n + "'"));
  });
}

chorus_result_t chorus_allgather_async(const char* name, const chorus_tensor_t* input,
                                       const chorus_options_t* options, chorus_handle_t* handle) {
  static const char* const function = "chorus_allgather_async";
  return submit(function, "allgather", handle, [&] {
    const std::string n = name_of(name, function);
    const chorus::Tensor in = tensor_of(input, context(function, n, "input"));
    const Options o = options_of(options, function);
    require_no_reduction(o, std::string(function) + ": '" + n + "'", "allgather");
    return chorus::allgather_async(n, in, nullptr, o.process_set);
  });
}

chorus_result_t chorus_broadcast_async(const char* name, const chorus_tensor_t* inout, int root_rank,
                                       const chorus_options_t* options, chorus_handle_t* handle) {
  static const char* const function = "chorus_broadcast_async";
  return submit(function, "broadcast", handle, [&] {
    const std::string n = name_of(name, function);
    const chorus::Tensor tensor = tensor_of(inout, context(function, n, "tensor"));
    const Options o = options_of(options, function);
    require_no_reduction(o, std::string(function) + ": '" + n + "'", "broadcast");
    return chorus::broadcast_async(n, tensor, root_rank, o.process_set);
  });
}

chorus_result_t chorus_alltoall_async(const char* name, const chorus_tensor_t* input, const int64_t* splits,
                                      int num_splits, const chorus_options_t* options, chorus_handle_t* handle) {
  static const char* const function = "chorus_alltoall_async";
  return submit(function, "alltoall", handle, [&] {
    const std::string n = name_of(name, function);
    const chorus::Tensor in = tensor_of(input, context(function, n, "input"));
    if (num_splits < 0) {
      throw CApiError(CHORUS_ERROR_INVALID_ARGUMENT, std::string(function) + ": '" + n + "': num_splits is " +
                                                         std::to_string(num_splits) + "; expected 0 or more");
    }
    if (num_splits > 0) require_pointer(splits, function, "splits");
    const Options o = options_of(options, function);
    require_no_reduction(o, std::string(function) + ": '" + n + "'", "alltoall");
    return chorus::alltoall_async(n, in, std::vector<int64_t>(splits, splits + num_splits), nullptr,
                                  o.process_set);
  });
}

chorus_result_t chorus_reducescatter_async(const char* name, const chorus_tensor_t* input,
                                           const chorus_options_t* options, chorus_handle_t* handle) {
  static const char* const function = "chorus_reducescatter_async";
  return submit(function, "reducescatter", handle, [&] {
    const std::string n = name_of(name, function);
    const chorus::Tensor in = tensor_of(input, context(function, n, "input"));
    const Options o = options_of(options, function);
    const std::string where = std::string(function) + ": '" + n + "'";
    const chorus::ReduceOp op = reduce_op_of(o, chorus::ReduceOp::kSum, where);
    // Once the C++ reducescatter takes prescale/postscale factors (issue 37,
    // item 2), pass o.prescale_factor and o.postscale_factor on instead.
    if (o.prescale_factor != 1.0 || o.postscale_factor != 1.0) {
      throw CApiError(CHORUS_ERROR_UNSUPPORTED,
                      where + ": prescale and postscale factors on reducescatter are not supported by this "
                              "build of Chorus (expected 1.0)");
    }
    return chorus::reducescatter_async(n, in, op, nullptr, o.process_set);
  });
}

chorus_result_t chorus_barrier_async(const chorus_options_t* options, chorus_handle_t* handle) {
  static const char* const function = "chorus_barrier_async";
  return submit(function, "barrier", handle, [&] {
    const Options o = options_of(options, function);
    require_no_reduction(o, function, "barrier");
    return chorus::barrier_async(o.process_set);
  });
}

chorus_result_t chorus_join_async(chorus_handle_t* handle) {
  return submit("chorus_join_async", "join", handle, [] { return chorus::join_async(); });
}

chorus_result_t chorus_send_async(const char* name, const chorus_tensor_t* tensor, int dest_rank,
                                  chorus_handle_t* handle) {
  static const char* const function = "chorus_send_async";
  return submit(function, "send", handle, [&] {
    const std::string n = name_of(name, function);
    return chorus::send_async(n, tensor_of(tensor, context(function, n, "tensor")), dest_rank);
  });
}

chorus_result_t chorus_recv_async(const char* name, const chorus_tensor_t* tensor, int source_rank,
                                  chorus_handle_t* handle) {
  static const char* const function = "chorus_recv_async";
  return submit(function, "recv", handle, [&] {
    const std::string n = name_of(name, function);
    return chorus::recv_async(n, tensor_of(tensor, context(function, n, "tensor")), source_rank);
  });
}

}  // extern "C"
