// SPDX-License-Identifier: MIT
// A map from file id (uint32) to a small value, open addressing with
// linear probing, keys and values in two arrays: a simulated node holds up
// to millions of files, and std::unordered_map's node per entry made every
// lookup a cache miss, half of the simulator's time, and most of its
// memory. Ids UINT32_MAX and UINT32_MAX - 1 mark empty and erased slots
// (no file has them: ids are below 2^32 - 2).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace clairfs::sim {

template <class V>
class FlatMap {
public:
    V* find(uint32_t k) {
        if (keys_.empty()) return nullptr;
        for (size_t i = home(k);; i = (i + 1) & mask_) {
            if (keys_[i] == k) return &values_[i];
            if (keys_[i] == empty) return nullptr;
        }
    }
    const V* find(uint32_t k) const { return const_cast<FlatMap*>(this)->find(k); }
    bool contains(uint32_t k) const { return find(k) != nullptr; }
    size_t size() const { return size_; }

    // Inserts k (not present) and returns its value.
    V& insert(uint32_t k, V v) {
        if ((size_ + erased_ + 1) * 4 > keys_.size() * 3) grow(); // at most 3/4 full
        for (size_t i = home(k);; i = (i + 1) & mask_) {
            if (keys_[i] == empty || keys_[i] == erased) {
                if (keys_[i] == erased) --erased_;
                keys_[i] = k;
                values_[i] = std::move(v);
                ++size_;
                return values_[i];
            }
        }
    }
    bool erase(uint32_t k) {
        if (keys_.empty()) return false;
        for (size_t i = home(k);; i = (i + 1) & mask_) {
            if (keys_[i] == k) {
                keys_[i] = erased;
                values_[i] = V{};
                --size_;
                ++erased_;
                return true;
            }
            if (keys_[i] == empty) return false;
        }
    }
    template <class F>
    void for_each(F&& f) const {
        for (size_t i = 0; i < keys_.size(); ++i)
            if (keys_[i] < erased) f(keys_[i], values_[i]);
    }

private:
    static constexpr uint32_t empty = UINT32_MAX;
    static constexpr uint32_t erased = UINT32_MAX - 1;
    size_t home(uint32_t k) const {
        // Fibonacci hashing: ids of one class folder are consecutive.
        return static_cast<size_t>((uint64_t{k} * 0x9E3779B97F4A7C15ULL) >> shift_);
    }
    void grow() {
        size_t cap = 16;
        while (cap < (size_ + 1) * 2) cap *= 2; // back to at most half full
        std::vector<uint32_t> keys(cap, empty);
        std::vector<V> values(cap);
        keys.swap(keys_);
        values.swap(values_);
        mask_ = cap - 1;
        shift_ = 64;
        for (size_t c = cap; c > 1; c >>= 1) --shift_;
        size_ = erased_ = 0;
        for (size_t i = 0; i < keys.size(); ++i)
            if (keys[i] < erased) insert(keys[i], std::move(values[i]));
    }

    std::vector<uint32_t> keys_;
    std::vector<V> values_;
    size_t mask_ = 0;
    unsigned shift_ = 64;
    size_t size_ = 0, erased_ = 0;
};

} // namespace clairfs::sim
