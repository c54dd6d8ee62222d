// Lowers this process's file-size limit for its lifetime (when active), so
// that a write past `bytes` fails with EFBIG as on a full disk, and ignores
// SIGXFSZ meanwhile; both are restored on destruction.
#pragma once

#include <signal.h>
#include <sys/resource.h>

namespace chorus_test {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes, bool active = true) : active_(active) {
    if (!active_) return;
    getrlimit(RLIMIT_FSIZE, &saved_);
    previous_ = signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    if (!active_) return;
    setrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, previous_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  bool active_;
  rlimit saved_{};
  sighandler_t previous_ = SIG_DFL;
};

}  // namespace chorus_test
