// SPDX-License-Identifier: MIT
// The scheduler's window: the files the jobs open next (the Timeline's
// order), each once, until the RAM tier's budget is spoken for. Built only
// as far as a round looks: most rounds stop at the first files not yet
// fetched, and only a round that must evict walks it to the end. It stamps
// each file it takes with the round (in_window, window_index), which is
// what eviction then ranks by (eviction.hpp, WindowMarks).
#pragma once

#include "clairfs/index/index.hpp"
#include "clairfs/prefetch/engine_options.hpp"
#include "timeline.hpp"

#include <cstdint>
#include <vector>

namespace clairfs::prefetch {

class Window {
public:
    // tier_size: per node, its size if the tiers take it, else not_tiered.
    Window(Timeline& future, std::vector<uint32_t>& in_window, std::vector<uint32_t>& window_index,
           const std::vector<uint32_t>& tier_size, uint64_t budget, uint32_t round)
        : future_(future), in_window_(in_window), window_index_(window_index),
          tier_size_(tier_size), budget_(budget), round_(round) {}

    // Whether the window has an i-th file, extending it as needed.
    bool reach(size_t i) {
        while (ids_.size() <= i && !ended_) step();
        return i < ids_.size();
    }
    void complete() {
        while (!ended_) step();
    }
    index::NodeId operator[](size_t i) const { return ids_[i]; }
    size_t size() const { return ids_.size(); }
    uint32_t round() const { return round_; }

private:
    void step() {
        index::NodeId id;
        if (!future_.next(id)) {
            ended_ = true;
            return;
        }
        if (in_window_[id] == round_) return; // another rank or job needs it sooner
        uint32_t size = tier_size_[id];
        if (size == not_tiered) return;
        if (used_ + size > budget_) {
            ended_ = true;
            return;
        }
        used_ += size;
        in_window_[id] = round_;
        window_index_[id] = static_cast<uint32_t>(ids_.size());
        ids_.push_back(id);
    }

    Timeline& future_;
    std::vector<uint32_t>& in_window_;
    std::vector<uint32_t>& window_index_;
    const std::vector<uint32_t>& tier_size_;
    uint64_t budget_;
    uint32_t round_;
    uint64_t used_ = 0;
    bool ended_ = false;
    std::vector<index::NodeId> ids_;
};

} // namespace clairfs::prefetch
