// SPDX-License-Identifier: MIT
// What the tracker knows, copied out for the scheduler and the status file.
#include "clairfs/track/tracker.hpp"

#include <algorithm>

namespace clairfs::track {
namespace {

// Workers run ahead of each other, so the first unopened position is the
// smallest over their cursors.
uint64_t frontier(const plan::WorkerLayout& l, const plan::EpochPlan& e,
                  const std::vector<uint64_t>& cursors) {
    uint64_t f = e.size();
    for (uint32_t w = 0; w < cursors.size(); ++w) f = std::min(f, l.position(w, cursors[w]));
    return f;
}

} // namespace

const char* mode_name(Mode m) {
    switch (m) {
    case Mode::unregistered:
        return "unregistered";
    case Mode::clairvoyant:
        return "clairvoyant";
    case Mode::fallback:
        return "fallback";
    }
    return "unknown";
}

Snapshot Tracker::snapshot(Clock::time_point now) const {
    std::lock_guard lk(mu_);
    Snapshot s;
    s.mode = mode_.load(std::memory_order_relaxed);
    s.reason = reason_;
    s.warning = warning_;
    s.last_match = last_match_;
    s.resyncs = resyncs_;
    for (const auto& [family, ev] : evidence_) s.searching += ev.opens.size();
    s.deep_searching = deep_ != nullptr;
    s.deep_scanned = deep_done_.scanned;
    s.deep_range = deep_done_.range;
    s.deep_cpu_s = deep_done_.cpu_s;
    if (deep_) s.searching += deep_->held.opens.size();
    s.draw_offset = draw_offset_;
    s.epoch = slowest_epoch();
    s.opens = opens_;
    s.matched = matched_;
    s.run_opens = run_opens_;
    s.run_matched = run_matched_;
    s.match_rate = opens_ ? static_cast<double>(matched_) / static_cast<double>(opens_) : 1.0;
    s.ranks.reserve(ranks_.size());
    for (const Rank& r : ranks_) {
        RankProgress p;
        p.rank = r.rank;
        // Past its last epoch a rank keeps its last plan, every position
        // opened, so status can say where it ended.
        p.current = r.current;
        p.finished = finished(r);
        p.next = r.next;
        p.layout = opt_.layout;
        p.cursors = r.cursors;
        p.frontier = r.current ? frontier(opt_.layout, *r.current, r.cursors) : 0;
        p.opened = r.opened;
        p.history.assign(r.history.begin(), r.history.end());
        if (r.started_set && now > r.started)
            p.epoch_seconds = std::chrono::duration<double>(now - r.started).count();
        s.ranks.push_back(std::move(p));
    }
    return s;
}

} // namespace clairfs::track
