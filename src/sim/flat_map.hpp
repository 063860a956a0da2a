// SPDX-License-Identifier: MIT
// A map from file id (uint32) to a small value, open addressing with
// linear probing: a simulated node holds up to millions of files, and
// std::unordered_map's node per entry made every lookup a cache miss and
// half of the simulator's time. Ids UINT32_MAX and UINT32_MAX - 1 mark
// empty and erased slots (no file has them: ids are below 2^32 - 2).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace clairfs::sim {

template <class V>
class FlatMap {
public:
    V* find(uint32_t k) {
        if (slots_.empty()) return nullptr;
        for (size_t i = home(k);; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.key == k) return &s.value;
            if (s.key == empty) return nullptr;
        }
    }
    const V* find(uint32_t k) const { return const_cast<FlatMap*>(this)->find(k); }
    bool contains(uint32_t k) const { return find(k) != nullptr; }
    size_t size() const { return size_; }

    // Inserts k (not present) and returns its value.
    V& insert(uint32_t k, V v) {
        if ((size_ + erased_ + 1) * 2 > slots_.size()) grow();
        for (size_t i = home(k);; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.key == empty || s.key == erased) {
                if (s.key == erased) --erased_;
                s.key = k;
                s.value = std::move(v);
                ++size_;
                return s.value;
            }
        }
    }
    bool erase(uint32_t k) {
        if (slots_.empty()) return false;
        for (size_t i = home(k);; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.key == k) {
                s.key = erased;
                s.value = V{};
                --size_;
                ++erased_;
                return true;
            }
            if (s.key == empty) return false;
        }
    }
    template <class F>
    void for_each(F&& f) {
        for (Slot& s : slots_)
            if (s.key < erased) f(s.key, s.value);
    }

private:
    static constexpr uint32_t empty = UINT32_MAX;
    static constexpr uint32_t erased = UINT32_MAX - 1;
    struct Slot {
        uint32_t key = empty;
        V value{};
    };
    size_t home(uint32_t k) const {
        // Fibonacci hashing: ids of one class folder are consecutive.
        return static_cast<size_t>((uint64_t{k} * 0x9E3779B97F4A7C15ULL) >> shift_);
    }
    void grow() {
        size_t cap = 16;
        while (cap < (size_ + 1) * 4) cap *= 2; // back to at most a quarter full
        std::vector<Slot> old(cap);
        old.swap(slots_);
        mask_ = cap - 1;
        shift_ = 64;
        for (size_t c = cap; c > 1; c >>= 1) --shift_;
        size_ = erased_ = 0;
        for (Slot& s : old)
            if (s.key < erased) insert(s.key, std::move(s.value));
    }

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    unsigned shift_ = 64;
    size_t size_ = 0, erased_ = 0;
};

} // namespace clairfs::sim
