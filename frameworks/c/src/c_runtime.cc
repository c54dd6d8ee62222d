// The C API's library and job functions: version and build flags, init and
// shutdown, the job's ranks, and process sets.
#include <algorithm>
#include <string>
#include <vector>

#include "c_conversions.h"
#include "c_errors.h"
#include "chorus/c_api.h"
#include "chorus/chorus.h"

namespace chorus::c_api {
namespace {

// Writes `value()` to `*out`: the body of the getters.
template <typename Get>
chorus_result_t get_int(const char* function, int* out, Get&& value) {
  return guarded(function, [&] {
    require_pointer(out, function, "the result pointer");
    *out = value();
    return CHORUS_SUCCESS;
  });
}

// Copies `values` out under the array rule of c_api.h: *count always, the
// values only where capacity allows; (NULL, 0) asks for the count.
template <typename T, typename U>
chorus_result_t copy_array(const char* function, const char* what, const std::vector<T>& values, U* out,
                           int capacity, int* count) {
  require_pointer(count, function, "count");
  if (capacity < 0) {
    throw CApiError(CHORUS_ERROR_INVALID_ARGUMENT,
                    std::string(function) + ": capacity is " + std::to_string(capacity) + "; expected 0 or more");
  }
  *count = static_cast<int>(values.size());
  if (out == nullptr && capacity == 0) return CHORUS_SUCCESS;
  require_pointer(out, function, what);
  if (static_cast<size_t>(capacity) < values.size()) {
    throw CApiError(CHORUS_ERROR_INVALID_ARGUMENT, std::string(function) + ": capacity " + std::to_string(capacity) +
                                                       " is less than the " + std::to_string(values.size()) + " " +
                                                       what + " there are");
  }
  std::copy(values.begin(), values.end(), out);
  return CHORUS_SUCCESS;
}

}  // namespace
}  // namespace chorus::c_api

using namespace chorus::c_api;  // NOLINT: the C entry points below are this file's only code

extern "C" {

int chorus_c_api_version(void) { return CHORUS_C_API_VERSION; }

const char* chorus_version(void) { return CHORUS_C_VERSION; }

uint32_t chorus_build_flags(void) {
  uint32_t flags = CHORUS_BUILD_MPI | CHORUS_BUILD_SHARED_MEMORY;
#ifdef CHORUS_C_WITH_CUDA
  flags |= CHORUS_BUILD_CUDA;
#endif
#ifdef CHORUS_C_WITH_NCCL
  flags |= CHORUS_BUILD_NCCL;
#endif
#ifdef CHORUS_C_WITH_TORCH
  flags |= CHORUS_BUILD_TORCH;
#endif
  return flags;
}

chorus_result_t chorus_init(const chorus_init_options_t* options) {
  return guarded("chorus_init", [&] {
    chorus::init(init_options_of(options));
    return CHORUS_SUCCESS;
  });
}

chorus_result_t chorus_shutdown(void) {
  return guarded("chorus_shutdown", [] {
    chorus::shutdown();
    return CHORUS_SUCCESS;
  });
}

int chorus_is_initialized(void) {
  try {
    return chorus::is_initialized() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

chorus_result_t chorus_rank(int* rank) { return get_int("chorus_rank", rank, [] { return chorus::rank(); }); }
chorus_result_t chorus_size(int* size) { return get_int("chorus_size", size, [] { return chorus::size(); }); }
chorus_result_t chorus_local_rank(int* local_rank) {
  return get_int("chorus_local_rank", local_rank, [] { return chorus::local_rank(); });
}
chorus_result_t chorus_local_size(int* local_size) {
  return get_int("chorus_local_size", local_size, [] { return chorus::local_size(); });
}
chorus_result_t chorus_cross_rank(int* cross_rank) {
  return get_int("chorus_cross_rank", cross_rank, [] { return chorus::cross_rank(); });
}
chorus_result_t chorus_cross_size(int* cross_size) {
  return get_int("chorus_cross_size", cross_size, [] { return chorus::cross_size(); });
}

chorus_result_t chorus_add_process_set(const int* ranks, int count, int32_t* id) {
  static const char* const function = "chorus_add_process_set";
  return guarded(function, [&] {
    require_pointer(id, function, "id");
    if (count < 0) {
      throw CApiError(CHORUS_ERROR_INVALID_ARGUMENT,
                      std::string(function) + ": count is " + std::to_string(count) + "; expected 0 or more");
    }
    if (count > 0) require_pointer(ranks, function, "ranks");
    *id = chorus::add_process_set(std::vector<int>(ranks, ranks + count)).id;
    return CHORUS_SUCCESS;
  });
}

chorus_result_t chorus_remove_process_set(int32_t id) {
  return guarded("chorus_remove_process_set", [&] {
    chorus::remove_process_set(chorus::ProcessSet{id});
    return CHORUS_SUCCESS;
  });
}

chorus_result_t chorus_process_set_ranks(int32_t id, int* ranks, int capacity, int* count) {
  static const char* const function = "chorus_process_set_ranks";
  return guarded(function, [&] {
    return copy_array(function, "ranks", chorus::process_set_ranks(chorus::ProcessSet{id}), ranks, capacity, count);
  });
}

chorus_result_t chorus_process_set_rank(int32_t id, int* rank) {
  return get_int("chorus_process_set_rank", rank, [&] { return chorus::process_set_rank(chorus::ProcessSet{id}); });
}

chorus_result_t chorus_process_set_size(int32_t id, int* size) {
  return get_int("chorus_process_set_size", size, [&] { return chorus::process_set_size(chorus::ProcessSet{id}); });
}

chorus_result_t chorus_process_sets(int32_t* ids, int capacity, int* count) {
  static const char* const function = "chorus_process_sets";
  return guarded(function, [&] {
    std::vector<int32_t> values;
    for (const chorus::ProcessSet& set : chorus::process_sets()) values.push_back(set.id);
    return copy_array(function, "ids", values, ids, capacity, count);
  });
}

}  // extern "C"
