// Whether another process on this host is still running, for waits on peers
// in shared memory: a peer that died must become an error, never a hang.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace chorus {

// False when `pid` does not exist or is a zombie (exited, not yet reaped by
// its parent); true otherwise, including a process this one may not signal.
bool process_alive(pid_t pid);

// When `pid` started (clock ticks since boot): with the pid it names one
// process for good, as pids are reused. nullopt when there is no such process
// or no procfs.
std::optional<uint64_t> process_start_time(pid_t pid);

}  // namespace chorus
