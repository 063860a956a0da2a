// SPDX-License-Identifier: MIT
// The RAM tier's room as one scheduler round sees it, and the files it may
// give up to make more. Room: the tier's free bytes, less the fetches on
// their way in; with peers, while the group's RAM holds the dataset, a
// file from elsewhere needs room beyond what the files homed here are
// reserved (Engine::admit would not keep it otherwise). Victims: the held
// files in eviction order (eviction.hpp), built at the first need only,
// since building walks the window to its end.
#pragma once

#include "clairfs/index/index.hpp"
#include "peer_homes.hpp"

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace clairfs::prefetch {

class Room {
public:
    // `homes` null: no peer group, nothing reserved.
    Room(uint64_t capacity, uint64_t used, const Homes* homes, uint64_t reserved)
        : free_(static_cast<int64_t>(capacity) - static_cast<int64_t>(used)), homes_(homes),
          reserved_(homes ? static_cast<int64_t>(reserved) : 0) {}

    // The room a file of `size` bytes needs to be fetched.
    int64_t need(index::NodeId id, uint32_t size) const {
        return int64_t{size} + (!homes_ || homes_->here[id] ? 0 : reserved_);
    }
    bool has(int64_t need) const { return free_ >= need; }
    void take(uint32_t size) { free_ -= int64_t{size}; }
    void give(uint64_t freed) { free_ += static_cast<int64_t>(freed); }

private:
    int64_t free_;
    const Homes* homes_;
    int64_t reserved_;
};

class Victims {
public:
    // (due, id) pairs, the first to go last.
    using Order = std::vector<std::pair<uint64_t, index::NodeId>>;
    // `build` ranks the held files; `evict` drops one and returns the
    // bytes freed.
    Victims(std::function<Order()> build, std::function<uint64_t(index::NodeId)> evict)
        : build_(std::move(build)), evict_(std::move(evict)) {}

    // Evicts, best victim first, files due later than `keep_upto` until
    // `room` has `need`: whether it has.
    bool make_room(Room& room, int64_t need, uint64_t keep_upto) {
        if (!built_) {
            order_ = build_();
            built_ = true;
        }
        while (!room.has(need) && !order_.empty() && order_.back().first > keep_upto) {
            room.give(evict_(order_.back().second));
            order_.pop_back();
        }
        return room.has(need);
    }

private:
    std::function<Order()> build_;
    std::function<uint64_t(index::NodeId)> evict_;
    Order order_;
    bool built_ = false;
};

} // namespace clairfs::prefetch
