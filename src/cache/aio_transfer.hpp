// SPDX-License-Identifier: MIT
// One synchronous transfer as a set of libaio requests in flight at once,
// and the pread/pwrite loop used where libaio is not available.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <cstdint>
#include <libaio.h>

namespace clairfs::cache {

// Moves exactly `len` bytes through `ctx` with at most `depth` requests of
// at most `chunk` bytes in flight; resubmits the rest of a short transfer
// and retries EINTR and EAGAIN. 0 or -errno; either way no request is in
// flight when it returns, so `buf` may be freed. If the context itself
// fails, it is destroyed (which waits for its requests) and `ctx` is set to
// nullptr, so the thread stops using it.
//
// `stall`, if given: when no request completes within its bound, it is
// told once (the tier turns itself off, so no new request queues behind a
// hung device), and the wait goes on: the kernel owns `buf` until its
// requests end, so returning early could hand their memory to someone else.
struct StallWatch {
    std::chrono::milliseconds after{0};
    std::function<void()> stalled;
};
// `to_eof`: a read that reaches the end of the file stops there (the rest
// of `buf` untouched) instead of failing with -EIO.
int aio_transfer(io_context_t& ctx, unsigned depth, size_t chunk, int fd, bool write, char* buf,
                 size_t len, uint64_t off, const StallWatch* stall = nullptr, bool to_eof = false);

// The same with pread/pwrite, for threads whose io_setup failed.
int sync_transfer(int fd, bool write, char* buf, size_t len, uint64_t off, bool to_eof = false);

} // namespace clairfs::cache
