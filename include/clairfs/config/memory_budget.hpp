// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

namespace clairfs::config {

// The memory this process may use: physical memory, or its memory cgroup's
// limit (v1 or v2) if lower. A cache sized from physical memory alone would
// get the daemon OOM-killed inside a job's cgroup.
uint64_t usable_memory();

// How far the page cache may grow before the kernel must reclaim it: the
// memory this process may use (as above) less what no reclaim can free
// without swap (anonymous and shared memory), the least of the system's
// and its memory cgroup's. UINT64_MAX if nothing could be read.
uint64_t page_cache_room();

} // namespace clairfs::config
