// Whether another process on this host is still running, for waits on peers
// in shared memory: a peer that died must become an error, never a hang.
#pragma once

#include <sys/types.h>

namespace chorus {

// False when `pid` does not exist or is a zombie (exited, not yet reaped by
// its parent); true otherwise, including a process this one may not signal.
bool process_alive(pid_t pid);

}  // namespace chorus
