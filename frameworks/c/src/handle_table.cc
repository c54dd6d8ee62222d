#include "handle_table.h"

#include "c_errors.h"

namespace chorus::c_api {

const char* HandleRecord::error() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_known_) {
    const Status status = handle_.status();
    // Still running: a text of static storage, since error_ may change.
    if (status.code() == StatusCode::kInProgress) return "";
    error_ = status.message();
    error_known_ = true;
  }
  return error_.c_str();
}

HandleTable& HandleTable::instance() {
  // Never destroyed: a thread may still release a handle while the process
  // exits (static destructors run then).
  static HandleTable* table = new HandleTable();
  return *table;
}

chorus_handle_t HandleTable::add(Handle handle, const char* collective) {
  auto record = std::make_shared<HandleRecord>(std::move(handle), collective);
  std::lock_guard<std::mutex> lock(mutex_);
  const chorus_handle_t id = next_id_++;
  records_.emplace(id, std::move(record));
  return id;
}

std::string HandleTable::why_invalid(chorus_handle_t id, const char* function) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (records_.count(id) != 0) return "";
  const std::string prefix = std::string(function) + ": handle " + std::to_string(id);
  if (id == CHORUS_HANDLE_NULL) return prefix + " is CHORUS_HANDLE_NULL, which no collective returns";
  if (id < next_id_) return prefix + " was released (chorus_handle_release); it cannot be used after that";
  return prefix + " was never returned by Chorus";
}

std::shared_ptr<HandleRecord> HandleTable::find(chorus_handle_t id, const char* function) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = records_.find(id);
    if (it != records_.end()) return it->second;
  }
  throw CApiError(CHORUS_ERROR_INVALID_HANDLE, why_invalid(id, function));
}

void HandleTable::release(chorus_handle_t id) {
  static const char* const function = "chorus_handle_release";
  std::shared_ptr<HandleRecord> record = find(id, function);
  // Outside the table's lock: test() may drive a point-to-point transfer.
  if (!record->handle().test()) {
    throw CApiError(CHORUS_IN_PROGRESS, std::string(function) + ": '" + record->handle().name() +
                                            "' (handle " + std::to_string(id) +
                                            ") is still in progress; wait for it first, since Chorus still "
                                            "uses its buffers");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (records_.erase(id) == 0) {
    // Another thread released it between find() and here.
    throw CApiError(CHORUS_ERROR_INVALID_HANDLE, std::string(function) + ": handle " + std::to_string(id) +
                                                     " was released (chorus_handle_release); it cannot be "
                                                     "used after that");
  }
}

}  // namespace chorus::c_api
