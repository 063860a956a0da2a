// SPDX-License-Identifier: MIT
// How a local rank moves through its epochs: worker cursors, the epoch
// change, and which epoch the slowest rank is in.
#include "clairfs/track/tracker.hpp"

#include <algorithm>

namespace clairfs::track {

void Tracker::begin_epoch(Rank& r) {
    r.cursors.assign(opt_.layout.streams(), 0);
    r.taken.clear();
    if (opt_.behind > 0 && r.current) r.taken.assign(r.current->size(), false);
    r.open_streams = 0;
    r.opened = 0;
    r.started_set = false;
    if (!r.current) return;
    note_epoch(r);
    for (uint32_t w = 0; w < opt_.layout.streams(); ++w) {
        skip_dangling(r, w);
        if (opt_.layout.position(w, r.cursors[w]) < r.current->size()) ++r.open_streams;
    }
}

// The epoch after the new one is left to the planner thread: a whole epoch
// of opens (minutes) lies between now and the open that needs it.
void Tracker::advance_epoch(Rank& r) {
    r.current = std::move(r.next);
    r.next.reset();
    r.next_confirmed = false;
    // One build per pending epoch: pending_ counts builds asked for, and an
    // open that waits for it to reach 0 would wait for ever on a second
    // count for one build.
    if (!r.source_ended && !r.next_pending) {
        r.next_wanted = true;
        r.next_pending = true;
        ++pending_;
        start_planner();
        plan_cv_.notify_one();
    }
    begin_epoch(r);
}

void Tracker::take(Rank& r, uint64_t position, Clock::time_point now) {
    const plan::WorkerLayout& l = opt_.layout;
    uint32_t w = l.worker_of(position);
    if (position < r.taken.size()) r.taken[position] = true;
    ++r.opened;
    if (!r.started_set) {
        r.started = now;
        r.started_set = true;
    }
    // An open behind the cursor (opt_.behind) fills a gap; the cursor stays.
    if (l.stream_index(position) < r.cursors[w]) return;
    r.cursors[w] = l.stream_index(position) + 1;
    skip_dangling(r, w);
    if (l.position(w, r.cursors[w]) >= r.current->size()) --r.open_streams;
}

// The job's open of a dangling sample fails before it reaches the mount,
// so the cursor steps over such samples instead of waiting for them.
void Tracker::skip_dangling(Rank& r, uint32_t w) const {
    const plan::EpochPlan& e = *r.current;
    while (true) {
        uint64_t p = opt_.layout.position(w, r.cursors[w]);
        if (p >= e.size() || e.nodes[p] != layout::no_node) return;
        ++r.cursors[w];
    }
}

// A rank whose next epoch is still being built is not finished: that
// epoch may yet exist.
bool Tracker::finished(const Rank& r) const {
    return r.current && !r.next && !r.next_pending && r.open_streams == 0;
}

uint64_t Tracker::slot_epoch(const Rank& r) const {
    return r.current->epoch + (finished(r) ? 1 : 0);
}

// A rank whose source gave nothing has no epoch and does not hold the
// others back.
uint64_t Tracker::slowest_epoch() const {
    uint64_t slowest = UINT64_MAX;
    for (const Rank& r : ranks_)
        if (r.current) slowest = std::min(slowest, slot_epoch(r));
    return slowest == UINT64_MAX ? counted_epoch_ : slowest;
}

void Tracker::recount_if_slowest_moved() {
    uint64_t e = slowest_epoch();
    if (e <= counted_epoch_) return;
    counted_epoch_ = e;
    opens_ = 0;
    matched_ = 0;
}

} // namespace clairfs::track

namespace clairfs::track {

// What status shows per epoch; an epoch begun again (corrected before its
// first open was matched) replaces its note.
void Tracker::note_epoch(Rank& r) {
    const plan::EpochPlan& e = *r.current;
    if (!r.history.empty() && r.history.back().epoch == e.epoch) r.history.pop_back();
    r.history.push_back({e.epoch, e.skipped_words, e.seed_epoch, e.tf_iterator});
    if (r.history.size() > 64) r.history.pop_front();
}

} // namespace clairfs::track
