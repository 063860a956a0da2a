// SPDX-License-Identifier: MIT
// Walks the files a local rank will open, in order, from where it stands.
#pragma once

#include "clairfs/track/tracker.hpp"

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

} // namespace clairfs::prefetch
