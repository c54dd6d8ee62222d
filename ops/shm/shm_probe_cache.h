// The start-up probe's cache (shm_probe.h): one small checked file per
// machine and settings, so that a job measures once and later jobs on the
// same machine start in microseconds. It lives in $XDG_CACHE_HOME/chorus, or
// ~/.cache/chorus without XDG_CACHE_HOME, named after a hash of its key; the
// key (host name, CPU model, online CPUs, ranks, chunk size, and the
// probe's version, which changes with the sizes it measures) is also inside
// the file and must match, so a file copied from another machine, a hash
// collision, or the samples of an older probe are foreign. The file is a
// checked file (chorus/checked_file.h) written atomically: a torn or
// corrupt one is named as such, ignored and rewritten, never half read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "ops/shm/shm_probe_choice.h"

namespace chorus {

// What a measurement holds for: this machine and these settings.
std::string shm_probe_cache_key(int ranks, int64_t chunk_bytes);

// The cache file for `key`; empty when neither XDG_CACHE_HOME nor HOME is set.
std::string shm_probe_cache_path(const std::string& key);

// True with the cached choice when `path` holds a valid one for `key`.
// False when there is none; `warning` then says why when the file exists
// but is corrupt, truncated, foreign or malformed (empty when missing).
bool load_shm_probe(const std::string& path, const std::string& key, ShmProbeChoice* out, std::string* warning);

// The folder of the cache files; empty when neither XDG_CACHE_HOME nor HOME
// is set.
std::string shm_probe_cache_folder();

// Every cache file in the folder, as "<key>: <choice.describe()>" lines (or
// "<path>: <why it is not used>"), for chorusrun --check-build.
std::vector<std::string> describe_shm_probe_cache();

// Writes `choice` for `key` to `path` atomically, creating its folder.
Status store_shm_probe(const std::string& path, const std::string& key, const ShmProbeChoice& choice);

}  // namespace chorus
