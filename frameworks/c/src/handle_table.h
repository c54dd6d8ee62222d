// The C API's handles: integer ids for chorus::Handle objects. Ids are never
// reused (a 64-bit counter), so that a released or made-up id is refused
// with a clear error instead of reaching another collective's handle or
// freed memory.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "chorus/c_api.h"
#include "chorus/handle.h"

namespace chorus::c_api {

// One handle the caller holds. The chorus::Handle owns the output of an
// allgather, alltoall or reducescatter, so it lives until release.
class HandleRecord {
 public:
  // `collective`: "allreduce", "alltoall", ... (a string literal).
  HandleRecord(Handle handle, const char* collective) : handle_(std::move(handle)), collective_(collective) {}
  const Handle& handle() const { return handle_; }
  const char* collective() const { return collective_; }
  // Why the collective failed ("" while it runs or after it succeeded). Set
  // once, when the end is first seen, and never changed after: the text
  // stays at one address until the record is destroyed.
  const char* error();

 private:
  Handle handle_;
  const char* collective_;
  std::mutex mutex_;
  std::string error_;
  bool error_known_ = false;
};

// The process's handles. It is the C API's one piece of process-wide state,
// next to chorus::init()'s runtime owner; it outlives the runtime, since
// handles stay valid (done) after chorus_shutdown() until released.
class HandleTable {
 public:
  static HandleTable& instance();

  chorus_handle_t add(Handle handle, const char* collective);
  // The record of `id`; CApiError(CHORUS_ERROR_INVALID_HANDLE) saying
  // whether it was released or never returned, in `function`'s name.
  std::shared_ptr<HandleRecord> find(chorus_handle_t id, const char* function);
  // Drops `id` once its collective is done; CApiError(CHORUS_IN_PROGRESS)
  // while it runs (Chorus still uses the caller's buffers).
  void release(chorus_handle_t id);
  // The text find() would fail with ("" when `id` is held).
  std::string why_invalid(chorus_handle_t id, const char* function);

 private:
  std::mutex mutex_;
  chorus_handle_t next_id_ = 1;
  std::unordered_map<chorus_handle_t, std::shared_ptr<HandleRecord>> records_;
};

}  // namespace chorus::c_api
