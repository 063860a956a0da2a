// SPDX-License-Identifier: MIT
#include "clairfs/cache/blob_arena.hpp"

#include "extent_allocator.hpp"

#include <cerrno>
#include <sys/mman.h>
#include <system_error>

namespace clairfs::cache {
namespace {

std::atomic<BlobArena*> the_arena{nullptr};

} // namespace

std::string BlobArena::install(uint64_t capacity) {
    if (the_arena.load(std::memory_order_acquire)) return "a blob arena is installed already";
    try {
        // Never deleted: buffers may be released by any thread until exit.
        the_arena.store(new BlobArena(capacity), std::memory_order_release);
        return "";
    } catch (const std::system_error& e) {
        return e.what();
    }
}

BlobArena* BlobArena::installed() {
    return the_arena.load(std::memory_order_acquire);
}

BlobArena::BlobArena(uint64_t capacity)
    : capacity_(ExtentAllocator::aligned(capacity)),
      free_(std::make_unique<ExtentAllocator>(capacity_)) {
    // NORESERVE: pages are committed as buffers first touch them, so an
    // arena sized for the budget costs nothing until the tier fills.
    void* p = mmap(nullptr, capacity_ == 0 ? ExtentAllocator::alignment : capacity_,
                   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        throw std::system_error(errno, std::generic_category(), "blob arena: mmap");
    base_ = static_cast<char*>(p);
}

BlobArena::~BlobArena() {
    munmap(base_, capacity_ == 0 ? ExtentAllocator::alignment : capacity_);
}

char* BlobArena::allocate(uint64_t length) {
    std::lock_guard lk(mu_);
    std::optional<uint64_t> off = free_->allocate(length);
    return off ? base_ + *off : nullptr;
}

void BlobArena::release(char* p, uint64_t length) {
    // Before the extent is free again, so no new buffer is zapped; outside
    // the lock, since zapping many pages takes a while. Best effort: the
    // pages merely stay if it fails.
    if (give_back_.load(std::memory_order_relaxed)) madvise(p, length, MADV_DONTNEED);
    std::lock_guard lk(mu_);
    free_->release(static_cast<uint64_t>(p - base_), length);
}

BlobArenaStats BlobArena::stats() const {
    BlobArenaStats s;
    s.capacity = capacity_;
    s.overflows = overflows_.load(std::memory_order_relaxed);
    std::lock_guard lk(mu_);
    s.used = free_->used_bytes();
    return s;
}

} // namespace clairfs::cache
