// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

namespace clairfs::config {

// The memory this process may use: physical memory, or its memory cgroup's
// limit (v1 or v2) if lower. A cache sized from physical memory alone would
// get the daemon OOM-killed inside a job's cgroup.
uint64_t usable_memory();

} // namespace clairfs::config
