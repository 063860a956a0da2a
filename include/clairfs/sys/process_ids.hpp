// SPDX-License-Identifier: MIT
// Which process a thread belongs to, and that process's parent, from
// /proc/TID/status. FUSE gives the thread that made a request; jobs are
// made of processes (a DataLoader worker, its loader), so both the engine's
// routing and the controller's judgement of who wrote a registration ask.
#pragma once

#include <cstdint>

namespace clairfs::sys {

struct ProcessIds {
    uint32_t pid = 0;  // Tgid; 0 if the thread is gone or unreadable
    uint32_t ppid = 0; // PPid; 0 likewise
};

// Reads /proc (I/O): never under a lock others wait on.
ProcessIds process_ids(uint32_t tid);

} // namespace clairfs::sys
