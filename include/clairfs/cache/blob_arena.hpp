// SPDX-License-Identifier: MIT
// Where the tiers' file buffers live in the daemon: one region of address
// space the size of the RAM budget plus headroom, carved into 4 KiB-aligned
// extents (best fit, neighbours merged). On malloc, each fetch thread's
// arena kept the buffers freed into it, and a 64 MiB RAM tier cost the
// daemon 150 MB of resident memory, all of it counted by a memory cgroup
// the daemon shares with the job. The region's pages are touched once and
// stay, so a reused buffer also costs no page faults.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace clairfs::cache {

class ExtentAllocator;

struct BlobArenaStats {
    uint64_t capacity = 0;  // bytes of the region
    uint64_t used = 0;      // bytes in live buffers
    uint64_t overflows = 0; // buffers that did not fit and came from the heap
};

class BlobArena {
public:
    // Makes the process-wide arena that Blob::make draws from, once, before
    // any thread makes blobs; it lives until the process exits, since any
    // thread may free a buffer up to then. "" or why not (blobs then come
    // from the heap, as they do in tests).
    static std::string install(uint64_t capacity);
    static BlobArena* installed(); // nullptr before install()

    // Reserves the address space; throws std::system_error if mmap fails.
    explicit BlobArena(uint64_t capacity);
    ~BlobArena();
    BlobArena(const BlobArena&) = delete;
    BlobArena& operator=(const BlobArena&) = delete;

    // A 4 KiB-aligned buffer of `length` (a multiple of 4 KiB) bytes, or
    // nullptr when no free extent is that long.
    char* allocate(uint64_t length);
    void release(char* p, uint64_t length);
    void count_overflow() { overflows_.fetch_add(1, std::memory_order_relaxed); }
    // Whether released buffers' pages go back to the system (madvise
    // MADV_DONTNEED) instead of staying touched for reuse. On with
    // hand-over: a file handed to the kernel's page cache leaves the tier,
    // and its pages must leave the daemon's resident memory too, or the
    // budget is held twice after all (once resident here, once cached).
    void set_give_back(bool on) { give_back_.store(on, std::memory_order_relaxed); }
    BlobArenaStats stats() const;

private:
    char* base_ = nullptr;
    uint64_t capacity_ = 0;
    mutable std::mutex mu_; // guards free_; leaf lock, never held across I/O
    std::unique_ptr<ExtentAllocator> free_;
    std::atomic<uint64_t> overflows_{0};
    std::atomic<bool> give_back_{false};
};

} // namespace clairfs::cache
