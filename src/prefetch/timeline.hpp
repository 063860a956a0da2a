// SPDX-License-Identifier: MIT
// The node's future as one sequence: every registered job's files in the
// order they will be opened. Jobs run side by side, and so do the local
// ranks of one loader; a job's loaders (a training loader, then a
// validation loader) take turns, each pass after the other, in the order
// the registration lists them. The prefetch window, Belady's eviction and
// stage-in all read the future through this one model.
#pragma once

#include "clairfs/track/tracker.hpp"

#include <cstdint>
#include <queue>
#include <vector>

namespace clairfs::prefetch {

// One job as the scheduler sees it: a snapshot per loader, in registration
// order. Loaders not clairvoyant are left out by the caller.
using JobView = std::vector<const track::Snapshot*>;

class Timeline {
public:
    // The snapshots must outlive the timeline.
    explicit Timeline(const std::vector<JobView>& jobs);
    // One job, one loader: the common case.
    explicit Timeline(const track::Snapshot& snap);

    // The next file due, in time order (a file several ranks or jobs need
    // comes once for each); false once every plan held is walked.
    bool next(index::NodeId& out);

    // How far ahead `id` is next due, in positions of one rank's loader;
    // UINT64_MAX if in no plan held.
    uint64_t next_use(index::NodeId id) const;

private:
    // A stretch of one rank's plan, from position `from` on, whose first
    // position is due at time `base`.
    struct Segment {
        const track::RankProgress* rank;
        const plan::EpochPlan* plan;
        uint64_t from;
        bool skip_opened; // the rank's current epoch: skip positions opened out of order
        uint64_t base;
    };
    void add_job(const JobView& job);
    void add_segment(const track::RankProgress& r, const plan::EpochPlan* plan, uint64_t from,
                     bool skip_opened, uint64_t base);
    bool usable(const Segment& s, uint64_t p) const;

    std::vector<Segment> segments_;
    // (time, segment): the next position of each segment not yet walked.
    using Entry = std::pair<uint64_t, size_t>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
    std::vector<uint64_t> at_; // per segment: its next position to walk
};

} // namespace clairfs::prefetch
