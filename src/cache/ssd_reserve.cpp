// SPDX-License-Identifier: MIT
// The SSD tier's reserve: one file preallocated to --ssd less what the
// entries take, so that the tier's room is on the disk from the mount on
// and another process filling the disk fails its own writes, not the
// tier's. Each entry's extent is a hole punched in it while the entry
// lives; the blocks go back when the entry does. Where the file system
// cannot punch holes the reserve is given up whole (logged once): the
// tier then holds only its entries' blocks, as any cache directory would.
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "ssd_core.hpp"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

namespace clairfs::cache {
namespace {

int allocate(int fd, uint64_t off, uint64_t len) {
    int rv = sys::neg_errno(
        ::fallocate(fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(off), static_cast<off_t>(len)));
    // Some file systems lack fallocate; glibc then writes a byte per block.
    if (rv == -EOPNOTSUPP)
        rv = -::posix_fallocate(fd, static_cast<off_t>(off), static_cast<off_t>(len));
    return rv;
}

int punch(int fd, uint64_t off, uint64_t len) {
    return sys::neg_errno(::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                      static_cast<off_t>(off), static_cast<off_t>(len)));
}

} // namespace

void SsdTier::Core::take_reserve(uint64_t offset, uint64_t size) {
    if (size == 0 || !reserve_holes.load(std::memory_order_relaxed)) return;
    int rv = punch(lock_fd, offset, ExtentAllocator::aligned(size));
    if (rv == 0) return;
    if (rv == -EOPNOTSUPP && reserve_holes.exchange(false)) {
        // Give it all back: a reserve that cannot shrink would hold the
        // entries' room twice.
        (void)punch(lock_fd, 0, extents.capacity());
        LOG_WARN("ssd tier: %s cannot punch holes in %s; no room is reserved beyond the "
                 "entries' own blocks",
                 dir.c_str(), cache_name.c_str());
    }
}

void SsdTier::Core::give_reserve(uint64_t offset, uint64_t size) {
    if (size == 0 || !reserve_holes.load(std::memory_order_relaxed)) return;
    // ENOSPC: another process took the blocks meanwhile; the next entry
    // written there may then find the disk full, which write() counts.
    (void)allocate(lock_fd, offset, ExtentAllocator::aligned(size));
}

std::string SsdTier::Core::reserve_room() {
    if (!enabled.load()) return "";
    // The entries' extents first: a crash may have left reserve blocks
    // where an entry now lives, and filling the free extents needs them.
    for (const auto& [id, e] : files) take_reserve(e.offset, e.size);
    int rv = 0;
    extents.for_each_free([&](uint64_t off, uint64_t len) {
        if (rv == 0) rv = allocate(lock_fd, off, len);
    });
    if (rv == 0) return "";
    // Give the space back: a disabled tier must not sit on a full disk,
    // nor hold the lock a mount that fits would take.
    if (reserve_existed)
        (void)::ftruncate(lock_fd, 0);
    else
        ::unlinkat(dir_fd, cache_name.c_str(), 0);
    sys::close(lock_fd);
    lock_fd = -1;
    return "ssd tier disabled: cannot preallocate " + human_bytes(extents.free_bytes()) + " in " +
           dir + ": " + sys::error_text(rv);
}

} // namespace clairfs::cache
