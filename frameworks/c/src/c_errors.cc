#include "c_errors.h"

#include <new>

namespace chorus::c_api {
namespace {

// Per thread, so that one thread's failure never overwrites the text
// another thread is about to read (as errno).
thread_local std::string last_error;

}  // namespace

chorus_result_t result_of(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return CHORUS_SUCCESS;
    case StatusCode::kInvalidArgument: return CHORUS_ERROR_INVALID_ARGUMENT;
    case StatusCode::kMismatch: return CHORUS_ERROR_MISMATCH;
    case StatusCode::kPreconditionFailed: return CHORUS_ERROR_PRECONDITION;
    case StatusCode::kShutdown: return CHORUS_ERROR_SHUTDOWN;
    case StatusCode::kTimeout: return CHORUS_ERROR_TIMEOUT;
    case StatusCode::kAborted: return CHORUS_ERROR_ABORTED;
    case StatusCode::kInternal: return CHORUS_ERROR_INTERNAL;
    case StatusCode::kInProgress: return CHORUS_IN_PROGRESS;
  }
  // A StatusCode newer than this file: still a failure, never success.
  return CHORUS_ERROR_INTERNAL;
}

chorus_result_t fail(chorus_result_t code, const std::string& text) noexcept {
  try {
    last_error = text;
  } catch (...) {
    // No memory for the text: the code still says what kind of failure.
    last_error.clear();
  }
  return code;
}

chorus_result_t result_of(const Status& status) noexcept {
  if (status.ok()) return CHORUS_SUCCESS;
  return fail(result_of(status.code()), status.message());
}

chorus_result_t fail_from_current_exception(const char* function) noexcept {
  try {
    throw;
  } catch (const Error& e) {
    return fail(result_of(e.code()), e.what());
  } catch (const CApiError& e) {
    return fail(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return fail(CHORUS_ERROR_OUT_OF_MEMORY, std::string(function) + ": out of memory");
  } catch (const std::exception& e) {
    return fail(CHORUS_ERROR_INTERNAL, std::string(function) + ": " + e.what());
  } catch (...) {
    return fail(CHORUS_ERROR_INTERNAL, std::string(function) + ": an unknown exception");
  }
}

void require_pointer(const void* pointer, const char* function, const char* what) {
  if (pointer == nullptr) {
    throw CApiError(CHORUS_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + what + " is NULL");
  }
}

}  // namespace chorus::c_api

extern "C" {

const char* chorus_last_error(void) { return chorus::c_api::last_error.c_str(); }

const char* chorus_result_string(chorus_result_t result) {
  switch (result) {
    case CHORUS_SUCCESS: return "CHORUS_SUCCESS: no error";
    case CHORUS_ERROR_INVALID_ARGUMENT:
      return "CHORUS_ERROR_INVALID_ARGUMENT: bad input (buffer, dtype, shape, name or option)";
    case CHORUS_ERROR_MISMATCH: return "CHORUS_ERROR_MISMATCH: ranks disagree about a collective";
    case CHORUS_ERROR_PRECONDITION:
      return "CHORUS_ERROR_PRECONDITION: called before chorus_init() or after chorus_shutdown()";
    case CHORUS_ERROR_SHUTDOWN: return "CHORUS_ERROR_SHUTDOWN: the runtime was shut down (here or by a peer)";
    case CHORUS_ERROR_TIMEOUT: return "CHORUS_ERROR_TIMEOUT: a deadline passed";
    case CHORUS_ERROR_ABORTED: return "CHORUS_ERROR_ABORTED: the runtime stopped because of an earlier error";
    case CHORUS_ERROR_INTERNAL: return "CHORUS_ERROR_INTERNAL: MPI or another library failed";
    case CHORUS_IN_PROGRESS: return "CHORUS_IN_PROGRESS: the collective has not finished yet";
    case CHORUS_ERROR_INVALID_HANDLE:
      return "CHORUS_ERROR_INVALID_HANDLE: the handle was released or never returned by Chorus";
    case CHORUS_ERROR_UNSUPPORTED: return "CHORUS_ERROR_UNSUPPORTED: not supported by this build of Chorus";
    case CHORUS_ERROR_OUT_OF_MEMORY: return "CHORUS_ERROR_OUT_OF_MEMORY: out of memory";
  }
  return "unknown chorus_result_t value";
}

}  // extern "C"
