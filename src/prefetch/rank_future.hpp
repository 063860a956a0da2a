// SPDX-License-Identifier: MIT
// Walks the files a local rank will open, in order, from where it stands.
#pragma once

#include "clairfs/track/tracker.hpp"

#include <vector>

namespace clairfs::prefetch {

// One rank's future from its frontier: the unopened rest of its current
// epoch, then its next epoch.
class RankFuture {
public:
    explicit RankFuture(const track::RankProgress& r) : r_(r), p_(r.frontier) {}

    // The next position's node; false once both epochs are walked.
    bool next(index::NodeId& out) {
        while (true) {
            const plan::EpochPlan* e = in_next_ ? r_.next.get() : r_.current.get();
            if (!e) return false;
            if (p_ >= e->size()) {
                if (in_next_) return false;
                in_next_ = true;
                p_ = 0;
                continue;
            }
            uint64_t p = p_++;
            if (!in_next_ && r_.opened_at(p)) continue; // its open came already
            out = e->nodes[p];
            if (out == layout::no_node) continue;
            return true;
        }
    }

private:
    const track::RankProgress& r_;
    uint64_t p_;
    bool in_next_ = false;
};

// Every local rank's future, ranks taking turns (they move at about the
// same speed): the order in which the node as a whole needs its files.
class RankFutures {
public:
    explicit RankFutures(const track::Snapshot& snap) {
        futures_.reserve(snap.ranks.size());
        for (const auto& r : snap.ranks) futures_.emplace_back(r);
        live_.assign(futures_.size(), true);
        live_count_ = futures_.size();
    }

    // The next rank's next file (a file several ranks need comes once per
    // rank); false once every rank's future is walked.
    bool next(index::NodeId& out) {
        while (live_count_ > 0) {
            size_t t = turn_;
            turn_ = (turn_ + 1) % futures_.size();
            if (!live_[t]) continue;
            if (futures_[t].next(out)) return true;
            live_[t] = false;
            --live_count_;
        }
        return false;
    }

private:
    std::vector<RankFuture> futures_;
    std::vector<bool> live_;
    size_t live_count_ = 0;
    size_t turn_ = 0;
};

} // namespace clairfs::prefetch
