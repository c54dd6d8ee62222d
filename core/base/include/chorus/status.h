// Status: the error convention inside the runtime (errors are values), and the
// exception that the public C++ API throws when a Status is not ok.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace chorus {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // bad input from the caller (dtype, shape, name, option)
  kMismatch,           // ranks disagree about a collective
  kPreconditionFailed, // called before init(), after shutdown(), ...
  kShutdown,           // the runtime was shut down (locally or by a peer)
  kTimeout,            // a deadline passed
  kAborted,            // the runtime stopped because of an earlier error
  kInternal,           // MPI or another library failed
  kInProgress,         // the operation has not finished yet
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status Mismatch(std::string m) { return {StatusCode::kMismatch, std::move(m)}; }
  static Status PreconditionFailed(std::string m) { return {StatusCode::kPreconditionFailed, std::move(m)}; }
  static Status Shutdown(std::string m) { return {StatusCode::kShutdown, std::move(m)}; }
  static Status Timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status InProgress(std::string m) { return {StatusCode::kInProgress, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "Mismatch: <message>", or "OK".
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Thrown by the public C++ API; what() is the runtime's message.
class Error : public std::runtime_error {
 public:
  explicit Error(const Status& status) : std::runtime_error(status.message()), code_(status.code()) {}
  StatusCode code() const { return code_; }

 private:
  StatusCode code_;
};

// Throws chorus::Error when status is not ok.
inline void throw_if_error(const Status& status) {
  if (!status.ok()) throw Error(status);
}

}  // namespace chorus

#define CHORUS_RETURN_IF_ERROR(expr)          \
  do {                                        \
    ::chorus::Status chorus_status_ = (expr); \
    if (!chorus_status_.ok()) return chorus_status_; \
  } while (0)
