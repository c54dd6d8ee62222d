// The C API's handle functions: test, wait, release, the failure's text and
// the results a handle holds (output, received splits, last joined rank).
#include <chrono>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "c_conversions.h"
#include "c_errors.h"
#include "chorus/c_api.h"
#include "handle_table.h"

namespace chorus::c_api {
namespace {

std::shared_ptr<HandleRecord> find(chorus_handle_t id, const char* function) {
  return HandleTable::instance().find(id, function);
}

// The record of `id`, whose collective must be one of `applies_to`
// (a list in words, "allgather, alltoall and reducescatter").
std::shared_ptr<HandleRecord> find_for(chorus_handle_t id, const char* function,
                                       std::initializer_list<const char*> collectives, const char* applies_to) {
  auto record = find(id, function);
  for (const char* collective : collectives) {
    if (std::strcmp(record->collective(), collective) == 0) return record;
  }
  throw CApiError(CHORUS_ERROR_INVALID_ARGUMENT, std::string(function) + " applies to " + applies_to +
                                                     " handles, not to '" + record->handle().name() + "' (" +
                                                     record->collective() + ")");
}

// The output of a handle that has one, once it has succeeded (until then
// the C++ API throws the collective's state: in progress, or its failure).
Tensor output_of(chorus_handle_t id, const char* function) {
  return find_for(id, function, {"allgather", "alltoall", "reducescatter"}, "allgather, alltoall and reducescatter")
      ->handle()
      .output();
}

}  // namespace
}  // namespace chorus::c_api

using namespace chorus::c_api;  // NOLINT: the C entry points below are this file's only code

extern "C" {

chorus_result_t chorus_handle_test(chorus_handle_t handle, int* done) {
  static const char* const function = "chorus_handle_test";
  return guarded(function, [&] {
    require_pointer(done, function, "done");
    *done = find(handle, function)->handle().test() ? 1 : 0;
    return CHORUS_SUCCESS;
  });
}

chorus_result_t chorus_handle_status(chorus_handle_t handle) {
  static const char* const function = "chorus_handle_status";
  return guarded(function, [&] { return result_of(find(handle, function)->handle().status()); });
}

chorus_result_t chorus_handle_wait(chorus_handle_t handle) {
  static const char* const function = "chorus_handle_wait";
  return guarded(function, [&] {
    const auto record = find(handle, function);
    // The record keeps the handle alive while this thread waits, even if
    // another thread releases its id meanwhile.
    try {
      record->handle().wait();
    } catch (const chorus::Error&) {
      // status() below carries the same failure.
    }
    return result_of(record->handle().status());
  });
}

chorus_result_t chorus_handle_wait_timeout(chorus_handle_t handle, int64_t timeout_ms) {
  static const char* const function = "chorus_handle_wait_timeout";
  return guarded(function, [&] {
    const auto record = find(handle, function);
    if (timeout_ms < 0) {
      throw CApiError(CHORUS_ERROR_INVALID_ARGUMENT, std::string(function) + ": timeout_ms is " +
                                                         std::to_string(timeout_ms) + "; expected 0 or more");
    }
    try {
      record->handle().wait_for(std::chrono::milliseconds(timeout_ms));
    } catch (const chorus::Error&) {
      // status() below carries the same failure.
    }
    return result_of(record->handle().status());
  });
}

chorus_result_t chorus_handle_release(chorus_handle_t handle) {
  return guarded("chorus_handle_release", [&] {
    HandleTable::instance().release(handle);
    return CHORUS_SUCCESS;
  });
}

const char* chorus_handle_error(chorus_handle_t handle) {
  static const char* const function = "chorus_handle_error";
  try {
    return find(handle, function)->error();
  } catch (...) {
    // An unknown or released handle: the text saying so, which lives in
    // this thread's last error.
    fail_from_current_exception(function);
    return chorus_last_error();
  }
}

chorus_result_t chorus_handle_output_dtype(chorus_handle_t handle, int* dtype) {
  static const char* const function = "chorus_handle_output_dtype";
  return guarded(function, [&] {
    require_pointer(dtype, function, "dtype");
    *dtype = dtype_code(output_of(handle, function).dtype);
    return CHORUS_SUCCESS;
  });
}

chorus_result_t chorus_handle_output_shape(chorus_handle_t handle, int64_t* shape, int capacity, int* ndim) {
  static const char* const function = "chorus_handle_output_shape";
  return guarded(function, [&] {
    require_pointer(ndim, function, "ndim");
    const chorus::Tensor output = output_of(handle, function);
    const int dims = static_cast<int>(output.shape.size());
    *ndim = dims;
    if (shape == nullptr && capacity == 0) return CHORUS_SUCCESS;
    if (capacity < dims) {
      throw CApiError(CHORUS_ERROR_INVALID_ARGUMENT, std::string(function) + ": capacity " +
                                                         std::to_string(capacity) + " is less than the output's " +
                                                         std::to_string(dims) + " dimensions");
    }
    if (dims > 0) require_pointer(shape, function, "shape");
    for (int i = 0; i < dims; ++i) shape[i] = output.shape[static_cast<size_t>(i)];
    return CHORUS_SUCCESS;
  });
}

chorus_result_t chorus_handle_output_bytes(chorus_handle_t handle, size_t* bytes) {
  static const char* const function = "chorus_handle_output_bytes";
  return guarded(function, [&] {
    require_pointer(bytes, function, "bytes");
    *bytes = output_of(handle, function).bytes();
    return CHORUS_SUCCESS;
  });
}

chorus_result_t chorus_handle_output_data(chorus_handle_t handle, void** data) {
  static const char* const function = "chorus_handle_output_data";
  return guarded(function, [&] {
    require_pointer(data, function, "data");
    *data = output_of(handle, function).data;
    return CHORUS_SUCCESS;
  });
}

chorus_result_t chorus_handle_output_copy(chorus_handle_t handle, void* dest, size_t capacity) {
  static const char* const function = "chorus_handle_output_copy";
  return guarded(function, [&] {
    const chorus::Tensor output = output_of(handle, function);
    if (output.device.kind != chorus::Device::Kind::kCPU) {
      throw CApiError(CHORUS_ERROR_INVALID_ARGUMENT,
                      std::string(function) + ": the output is on " + output.device.to_string() +
                          "; copy it with the device's own copy from chorus_handle_output_data");
    }
    const size_t bytes = output.bytes();
    if (capacity < bytes) {
      throw CApiError(CHORUS_ERROR_INVALID_ARGUMENT, std::string(function) + ": capacity " +
                                                         std::to_string(capacity) + " bytes is less than the output's " +
                                                         std::to_string(bytes) + " bytes");
    }
    if (bytes > 0) {
      require_pointer(dest, function, "dest");
      std::memcpy(dest, output.data, bytes);
    }
    return CHORUS_SUCCESS;
  });
}

chorus_result_t chorus_handle_received_splits(chorus_handle_t handle, int64_t* splits, int capacity, int* count) {
  static const char* const function = "chorus_handle_received_splits";
  return guarded(function, [&] {
    require_pointer(count, function, "count");
    const std::vector<int64_t> received =
        find_for(handle, function, {"alltoall"}, "alltoall")->handle().received_splits();
    *count = static_cast<int>(received.size());
    if (splits == nullptr && capacity == 0) return CHORUS_SUCCESS;
    if (capacity < 0 || static_cast<size_t>(capacity) < received.size()) {
      throw CApiError(CHORUS_ERROR_INVALID_ARGUMENT, std::string(function) + ": capacity " +
                                                         std::to_string(capacity) + " is less than the " +
                                                         std::to_string(received.size()) + " splits there are");
    }
    require_pointer(splits, function, "splits");
    for (size_t i = 0; i < received.size(); ++i) splits[i] = received[i];
    return CHORUS_SUCCESS;
  });
}

chorus_result_t chorus_handle_last_joined_rank(chorus_handle_t handle, int* rank) {
  static const char* const function = "chorus_handle_last_joined_rank";
  return guarded(function, [&] {
    require_pointer(rank, function, "rank");
    *rank = find_for(handle, function, {"join"}, "join")->handle().last_joined_rank();
    return CHORUS_SUCCESS;
  });
}

}  // extern "C"

