// The C API's error convention: C++ exceptions (chorus::Error from the C++
// API, CApiError from the C layer's own checks, anything else) stop at the
// boundary and become a chorus_result_t plus the calling thread's last-error
// text.
#pragma once

#include <stdexcept>
#include <string>

#include "chorus/c_api.h"
#include "chorus/status.h"

namespace chorus::c_api {

// A failure the C layer finds itself (a null pointer, an unknown code, a
// released handle), with the code the caller gets.
class CApiError : public std::runtime_error {
 public:
  CApiError(chorus_result_t code, const std::string& text) : std::runtime_error(text), code_(code) {}
  chorus_result_t code() const { return code_; }

 private:
  chorus_result_t code_;
};

// The code a StatusCode becomes at the C boundary.
chorus_result_t result_of(StatusCode code);
// Records `text` as this thread's last error and returns `code`.
chorus_result_t fail(chorus_result_t code, const std::string& text) noexcept;
// OK: CHORUS_SUCCESS; otherwise fail(result_of(code), message).
chorus_result_t result_of(const Status& status) noexcept;
// The exception being handled, as a code plus last-error text; `function`
// names the C entry point for exceptions that carry no Chorus text.
chorus_result_t fail_from_current_exception(const char* function) noexcept;

// Runs `body` (which returns chorus_result_t) so that nothing escapes it.
template <typename Body>
chorus_result_t guarded(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return fail_from_current_exception(function);
  }
}

// Throws CApiError(CHORUS_ERROR_INVALID_ARGUMENT) naming `function` and
// `what` when `pointer` is null.
void require_pointer(const void* pointer, const char* function, const char* what);

}  // namespace chorus::c_api
