// ShmSegment: one POSIX shared-memory object (shm_open + mmap) that the ranks
// of a host map to exchange data.
//
// Lifetime: the creator makes it with a fresh, job-unique name; the others
// open it by that name; once every rank has mapped it, the creator unlinks
// the name. From then on the memory lives only in the mappings and vanishes
// with the last process, however the processes end: a killed job leaves
// nothing in /dev/shm. Only a crash in the short window between creation and
// unlink can leave a name behind; such names carry the creator's pid, and
// remove_stale_segments() (run by every new creator) deletes those whose
// creator is gone.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "chorus/status.h"

namespace chorus {

class ShmSegment {
 public:
  // Creates `name` (exclusive: an existing object is an error) of `bytes`
  // bytes, backed by reserved memory (so a full /dev/shm is an error here,
  // not a SIGBUS later), zero-filled and mapped with its pages populated.
  static Status create(const std::string& name, size_t bytes, std::unique_ptr<ShmSegment>* out);
  // Maps an existing object, which must be exactly `bytes` bytes long.
  static Status open(const std::string& name, size_t bytes, std::unique_ptr<ShmSegment>* out);
  // Removes the name; mappings stay valid.
  static Status unlink(const std::string& name);

  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  ShmSegment(void* data, size_t size) : data_(data), size_(size) {}
  void* data_;
  size_t size_;
};

// The prefix of every segment name Chorus creates (in /dev/shm without the
// leading slash).
constexpr const char* kShmSegmentPrefix = "chorus-shm.";
// "/chorus-shm.<pid>.<16 random hex digits>[.<tag>]": the pid tells
// remove_stale_segments() whether the creator still runs; the tag (e.g.
// "set3" for a process set's group) says in /dev/shm whose it is.
std::string make_segment_name(const std::string& tag = "");
// Unlinks every Chorus segment name in `directory` whose creator process no
// longer exists; returns how many it removed.
int remove_stale_segments(const std::string& directory = "/dev/shm");

}  // namespace chorus
