// SPDX-License-Identifier: MIT
// One node's RAM tier as the simulator keeps it: which files it holds, and
// a max-heap of when each is due next, for Belady's eviction. Keys are
// absolute (positions of the node's whole future), so they stay right as
// the ranks move. A key moves later only when the file is opened, or when
// the group passes a homed file's first open (both told: rekey,
// update_key); it moves earlier only when a later epoch's order becomes
// known, which the heap finds when the entry comes to the top (victim()
// asks each candidate's true key). So the daemon's full re-ranking every
// round is not needed to pick the same victim.
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <unordered_map>

#include "flat_map.hpp"
#include <utility>
#include <vector>

namespace clairfs::sim {

inline constexpr uint64_t never = UINT64_MAX;

class NodeCache {
public:
    // `sizes` (every file's size) must outlive the cache.
    void set_sizes(const uint32_t* sizes) { sizes_ = sizes; }
    bool holds(uint32_t f) const { return held_.contains(f); }
    uint64_t bytes() const { return bytes_; }
    size_t files() const { return held_.size(); }

    // Adds f (not held) with its due key; `pinned` files are never offered
    // as victims; `opened`: its open is what brought it in.
    void add(uint32_t f, uint64_t key, bool pinned, bool opened) {
        held_.insert(f, Entry::make(key, pinned, opened));
        bytes_ += sizes_[f];
        if (!pinned) push(clamp(key), f);
    }
    // f was opened: its next use moved on.
    void rekey(uint32_t f, uint64_t key) {
        Entry* e = held_.find(f);
        if (!e) return;
        e->set_opened();
        retell(*e, f, key);
    }
    // f's key moved without an open (a file homed here, once the group has
    // passed its first open this epoch). A key that moves later must be
    // told, or the lazy heap would keep offering f as if due sooner.
    void update_key(uint32_t f, uint64_t key) {
        if (Entry* e = held_.find(f)) retell(*e, f, key);
    }
    // The unpinned file due last, asking `due(f)` for its true key: an
    // entry whose key moved is re-keyed and the search goes on. Returns
    // (key, file), or (0, none) when nothing can go.
    template <class Due>
    std::pair<uint64_t, uint32_t> victim(Due&& due) {
        while (!heap_.empty()) {
            auto [key, f] = heap_.front();
            Entry* e = held_.find(f);
            if (!e || e->pinned() || e->key() != key) {
                pop();
                continue;
            }
            uint64_t now = clamp(due(f));
            if (now != key) {
                pop();
                e->set_key(now);
                push(now, f);
                continue;
            }
            return {key == Entry::never_key ? never : key, f};
        }
        return {0, UINT32_MAX};
    }
    // Removes f; returns its size. `unopened`: it was never opened while
    // held (a fetch that saved nothing).
    uint32_t evict(uint32_t f, bool* unopened = nullptr) {
        Entry* e = held_.find(f);
        if (!e) return 0;
        if (unopened) *unopened = !e->opened();
        held_.erase(f);
        bytes_ -= sizes_[f];
        return sizes_[f];
    }

private:
    // A held file in 8 bytes (a node may hold millions): its due key in 62
    // bits, never as all ones, and two flags.
    struct Entry {
        static constexpr uint64_t never_key = (uint64_t{1} << 62) - 1;
        uint64_t bits = 0;
        static Entry make(uint64_t key, bool pinned, bool opened) {
            return Entry{clamp(key) | (uint64_t{pinned} << 62) | (uint64_t{opened} << 63)};
        }
        uint64_t key() const { return bits & never_key; }
        bool pinned() const { return (bits >> 62) & 1; }
        bool opened() const { return bits >> 63; }
        void set_key(uint64_t k) { bits = (bits & ~never_key) | clamp(k); }
        void set_opened() { bits |= uint64_t{1} << 63; }
    };
    // Keys are positions of one node's future: far below 2^62.
    static uint64_t clamp(uint64_t k) { return k >= Entry::never_key ? Entry::never_key : k; }
    void retell(Entry& e, uint32_t f, uint64_t key) {
        key = clamp(key);
        if (e.pinned() || e.key() == key) return;
        e.set_key(key);
        push(key, f);
    }
    void push(uint64_t key, uint32_t f) {
        heap_.emplace_back(key, f);
        std::push_heap(heap_.begin(), heap_.end());
        // Stale entries pile up as files are opened; rebuild from the held
        // files before they outnumber them two to one.
        if (heap_.size() > 2 * held_.size() + 1024) rebuild();
    }
    void pop() {
        std::pop_heap(heap_.begin(), heap_.end());
        heap_.pop_back();
    }
    void rebuild() {
        heap_.clear();
        held_.for_each([&](uint32_t f, const Entry& e) {
            if (!e.pinned()) heap_.emplace_back(e.key(), f);
        });
        std::make_heap(heap_.begin(), heap_.end());
    }

    const uint32_t* sizes_ = nullptr;
    FlatMap<Entry> held_;
    std::vector<std::pair<uint64_t, uint32_t>> heap_;
    uint64_t bytes_ = 0;
};

// A page cache, least recently used first out (direct reads), holding
// whole 4 KiB pages: at 110 KB a file, rounding is 2% of the dataset,
// as much as the deficit that decides how much a later epoch re-reads.
// Strict LRU is the kernel's behaviour for the epoch after a first read,
// when every page is on the inactive list: bench/page_cache_probe.py's
// 4,000 files under a cgroup-v1 limit re-read within 2% of what this class
// predicts (a cache at 90% and 95% of the dataset). From the epoch after
// that, pages the previous epoch hit sit on the active list and the kernel
// re-reads 40-70% less than an LRU (man clairfs, SIMULATE).
class Lru {
public:
    static constexpr uint64_t page = 4096;
    explicit Lru(uint64_t capacity) : capacity_(capacity) {}
    // Whether f is cached; a hit moves it to the front.
    bool hit(uint32_t f) {
        auto it = where_.find(f);
        if (it == where_.end()) return false;
        order_.splice(order_.begin(), order_, it->second);
        return true;
    }
    void insert(uint32_t f, uint64_t size) {
        const uint64_t pages = (size + page - 1) / page * page;
        if (pages > capacity_ || where_.count(f)) return;
        while (bytes_ + pages > capacity_) {
            auto& [g, s] = order_.back();
            bytes_ -= s;
            where_.erase(g);
            order_.pop_back();
        }
        order_.emplace_front(f, pages);
        where_[f] = order_.begin();
        bytes_ += pages;
    }

private:
    uint64_t capacity_;
    uint64_t bytes_ = 0;
    std::list<std::pair<uint32_t, uint64_t>> order_;
    std::unordered_map<uint32_t, std::list<std::pair<uint32_t, uint64_t>>::iterator> where_;
};

} // namespace clairfs::sim
