// SPDX-License-Identifier: MIT
// The tracker's entry points: construction and matching one open.
#include "clairfs/track/tracker.hpp"
#include "clairfs/sys/normal_thread.hpp"

#include <stdexcept>

namespace clairfs::track {

Tracker::Tracker(std::vector<uint32_t> ranks, std::vector<EpochSource> sources, TrackerOptions opt)
    : Tracker(std::move(ranks), std::move(sources), {}, std::move(opt)) {}

Tracker::Tracker(std::vector<uint32_t> ranks, std::vector<EpochSource> sources,
                 std::vector<ResyncFn> resyncs, TrackerOptions opt)
    : opt_(std::move(opt)) {
    if (ranks.size() != sources.size())
        throw std::invalid_argument("tracker: one epoch source per local rank is needed");
    resyncs.resize(ranks.size());
    if (opt_.layout.batch_size == 0) throw std::invalid_argument("tracker: batch_size is 0");
    slack_ = opt_.slack ? opt_.slack : opt_.layout.batch_size;
    zeros_.assign(opt_.layout.streams(), 0);
    ranks_.resize(ranks.size());
    for (size_t i = 0; i < ranks.size(); ++i) {
        Rank& r = ranks_[i];
        r.rank = ranks[i];
        r.source = std::move(sources[i]);
        if (opt_.resync_max > 0) r.resync = std::move(resyncs[i]);
        if (r.source) r.current = r.source();
        if (r.current) {
            ++r.produced;
            r.next = r.source();
            if (r.next) ++r.produced;
        }
        r.source_ended = !r.next;
        begin_epoch(r);
    }
    counted_epoch_ = slowest_epoch();
}

// Under mu_. Started by the first epoch that needs building, never by the
// constructor: `clairfs mount --register` builds the tracker before the
// daemon forks, and a thread started then would not exist in the daemon
// (while its handle would name some later thread of the child, whose join
// at the next registration would wait for ever).
void Tracker::start_planner() {
    if (!planner_.joinable()) planner_ = sys::normal_thread([this] { plan_loop(); });
}

Tracker::~Tracker() {
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
    }
    plan_cv_.notify_all();
    if (planner_.joinable()) planner_.join();
}

Mode Tracker::mode() const {
    return mode_.load(std::memory_order_acquire);
}

Observation Tracker::observe(index::NodeId node, Clock::time_point now, uint32_t pid,
                             uint32_t ppid, ObserveMode mode) {
    std::unique_lock lk(mu_);
    Observation o;
    uint32_t family = family_of(pid, ppid);
    // The wait releases mu_, so other opens and snapshots go on meanwhile;
    // only an open that matched nothing waits, once per epoch at most.
    while (!observe_locked(node, now, pid, family, mode, o))
        built_cv_.wait(lk, [this] { return pending_ == 0; });
    return o;
}

// A worker's parent is its loader process: the workers respawned every
// epoch belong to it. Without workers the opener is the loader itself (its
// parent may be a launcher that started other jobs too).
uint32_t Tracker::family_of(uint32_t pid, uint32_t ppid) const {
    return opt_.layout.workers > 0 && ppid > 1 ? ppid : pid;
}

bool Tracker::would_match(index::NodeId node, uint32_t pid, uint32_t ppid, bool next_too) const {
    return match_distance(node, pid, ppid, next_too) != UINT64_MAX;
}

uint64_t Tracker::match_distance(index::NodeId node, uint32_t pid, uint32_t ppid,
                                 bool next_too, Place* at) const {
    std::lock_guard lk(mu_);
    if (mode_.load(std::memory_order_relaxed) != Mode::clairvoyant || !dataset_file(node))
        return UINT64_MAX;
    Match m{};
    if (!find_match(node, pid, family_of(pid, ppid), m, next_too) || early_start(m))
        return UINT64_MAX;
    const plan::WorkerLayout& l = opt_.layout;
    const Rank& r = ranks_[m.slot];
    if (at) *at = {(m.in_next ? r.next : r.current)->epoch, m.position};
    uint64_t s = l.stream_index(m.position);
    return m.in_next ? s : distance(s, r.cursors[l.worker_of(m.position)]);
}

// False, changing nothing, when the open matched nothing while some rank's
// next epoch is still being built: judged now, an open of that epoch would
// count against the match rate, or read as a job past its last epoch.
bool Tracker::observe_locked(index::NodeId node, Clock::time_point now, uint32_t pid,
                             uint32_t family, ObserveMode mode, Observation& o) {
    o = {};
    o.dataset_file = dataset_file(node);
    // In fallback the prediction is no longer acted on: opens are only counted.
    if (mode_.load(std::memory_order_relaxed) != Mode::clairvoyant) {
        if (o.dataset_file && mode == ObserveMode::normal) count_open(false);
        return true;
    }
    // Its family's opens wait for the deep search, matched by neither plan.
    if (o.dataset_file && mode == ObserveMode::normal && hold_for_deep(node, pid, family)) {
        o.deferred = true;
        return true;
    }
    Match m{};
    const bool next_too = mode != ObserveMode::this_epoch && mode != ObserveMode::tentative;
    if (!o.dataset_file || !find_match(node, pid, family, m, next_too) || early_start(m)) {
        if (pending_ > 0 && may_be_sample(node)) return false;
        if (opt_.next_at_end && o.dataset_file && mode == ObserveMode::normal) {
            if (next_vote_.size() > 4096) next_vote_.clear();
            bool fits = fits_next(node);
            next_vote_[family] = fits;
            // Judged by the family's next open: the next epoch's first
            // sample, or a READ that stood for nothing.
            if (fits) return true;
        }
        if (!o.dataset_file || mode == ObserveMode::match_only || mode == ObserveMode::this_epoch)
            return true;
        if (hold_as_evidence(node, pid, family, mode)) {
            o.deferred = true;
            return true;
        }
        if (mode == ObserveMode::tentative) return true;
        count_open(false);
        judge_unmatched(node);
        return true;
    }
    accept(m, now, pid, family, o);
    return true;
}

// Under mu_: a matched open moves its rank on.
void Tracker::accept(const Match& m, Clock::time_point now, uint32_t pid, uint32_t family,
                     Observation& o) {
    Rank& r = ranks_[m.slot];
    // Pids are reused, but only after the loader that had it exited; a
    // few thousand entries at most (workers are respawned every epoch).
    if (pid) {
        if (slot_of_pid_.size() > 65536) slot_of_pid_.clear();
        slot_of_pid_[pid] = m.slot;
        if (family != pid) slot_of_pid_[family] = m.slot;
    }
    if (m.in_next) advance_epoch(r);
    if (opt_.next_at_end) next_vote_.erase(family);
    take(r, m.position, now);
    last_match_ = std::max(last_match_, now);
    // Only a new epoch or a rank's last open can move the slowest epoch; the
    // open that moves it is the first one counted for the new epoch.
    if (m.in_next || finished(r)) recount_if_slowest_moved();
    count_open(true);
    o.matched = true;
    o.slot = static_cast<uint32_t>(m.slot);
    o.epoch = r.current->epoch;
    o.position = m.position;
    o.new_epoch = m.in_next;
}

// A loader that runs its epochs through begins the next one only after
// the current one, yet an open of an epoch whose seed was not predicted
// lands in the predicted next epoch's first batches now and then (one in
// n / (batch_size * workers)). For a rank whose order can be searched, such
// an early start is evidence to search with, not a new epoch, unless a
// search put that epoch there.
bool Tracker::early_start(const Match& m) const {
    const Rank& r = ranks_[m.slot];
    return m.in_next && r.resync && !r.next_confirmed && r.current &&
           2 * r.opened < r.current->size();
}

bool Tracker::dataset_file(index::NodeId node) const {
    auto in = [node](const std::shared_ptr<const plan::EpochPlan>& e) {
        return e && node < e->first_position.size() && e->first_position[node] != plan::no_position;
    };
    for (const Rank& r : ranks_)
        if (in(r.current) || in(r.next)) return true;
    return false;
}

bool Tracker::may_be_sample(index::NodeId node) const {
    const std::vector<uint8_t>& s = opt_.sample_nodes;
    return s.empty() || (node < s.size() && s[node]);
}

// The opener's own rank first, if known. Then every rank's current epoch
// before any rank's next one (an open that one rank still expects must not
// start another rank's next epoch), the closest to its worker's cursor
// winning.
bool Tracker::find_match(index::NodeId node, uint32_t pid, uint32_t family, Match& out,
                         bool next_too) const {
    for (uint32_t key : {pid, family}) {
        if (!key) continue;
        if (auto it = slot_of_pid_.find(key); it != slot_of_pid_.end())
            if (match_slot(it->second, node, family, out, next_too)) return true;
    }
    const plan::WorkerLayout& l = opt_.layout;
    uint64_t best = UINT64_MAX;
    for (size_t i = 0; i < ranks_.size(); ++i) {
        const Rank& r = ranks_[i];
        uint64_t p;
        if (r.current && match_in(*r.current, r.cursors, &r.taken, node, p, reach_of(r))) {
            uint64_t d = distance(l.stream_index(p), r.cursors[l.worker_of(p)]);
            if (d < best) {
                best = d;
                out = {i, p, false};
            }
        }
    }
    if (best != UINT64_MAX || !next_too) return best != UINT64_MAX;
    for (size_t i = 0; i < ranks_.size(); ++i) {
        const Rank& r = ranks_[i];
        if (r.next && next_may_begin(r, family) &&
            match_in(*r.next, zeros_, nullptr, node, out.position)) {
            out.slot = i;
            out.in_next = true;
            return true;
        }
    }
    return false;
}

bool Tracker::match_slot(size_t i, index::NodeId node, uint32_t family, Match& out,
                         bool next_too) const {
    const Rank& r = ranks_[i];
    out.slot = i;
    out.in_next = false;
    if (r.current && match_in(*r.current, r.cursors, &r.taken, node, out.position, reach_of(r)))
        return true;
    out.in_next = true;
    return next_too && r.next && next_may_begin(r, family) &&
           match_in(*r.next, zeros_, nullptr, node, out.position);
}

bool Tracker::next_may_begin(const Rank& r, uint32_t family) const {
    if (!opt_.next_at_end || !r.current) return true;
    if (auto it = next_vote_.find(family); it != next_vote_.end() && it->second) return true;
    const plan::WorkerLayout& l = opt_.layout;
    for (uint32_t w = 0; w < l.streams(); ++w)
        if (l.position(w, r.cursors[w] + slack_) < r.current->size()) return false;
    return true;
}

bool Tracker::fits_next(index::NodeId node) const {
    uint64_t unused;
    for (const Rank& r : ranks_)
        if (r.next && match_in(*r.next, zeros_, nullptr, node, unused)) return true;
    return false;
}

// A repeated node (replacement, num_samples > n, a symlink) can be due in
// several workers' windows at once. The occurrence closest to its worker's
// cursor is the one most likely opened: crediting a farther one would move
// that worker past positions it has yet to open. The window tolerates opens
// that failed or were skipped without letting one worker's stream steal
// from far ahead; behind the cursor it reaches only positions not yet
// taken (`taken` is null for an epoch nobody has opened).
bool Tracker::match_in(const plan::EpochPlan& e, const std::vector<uint64_t>& cursors,
                       const std::vector<bool>* taken, index::NodeId node, uint64_t& position,
                       const std::vector<uint64_t>* reach) const {
    if (node >= e.first_position.size()) return false;
    const plan::WorkerLayout& l = opt_.layout;
    uint64_t best = UINT64_MAX;
    for (uint32_t p = e.first_position[node]; p != plan::no_position;
         p = e.next_same.empty() ? plan::no_position : e.next_same[p]) {
        uint64_t s = l.stream_index(p), c = cursors[l.worker_of(p)];
        if (s < c && (c - s > opt_.behind || !taken || p >= taken->size() || (*taken)[p]))
            continue;
        if (s >= c && s - c > slack_ && !(reach && s <= (*reach)[l.worker_of(p)] + slack_))
            continue;
        uint64_t d = distance(s, c);
        if (d >= best) continue;
        best = d;
        position = p;
        if (best == 0) break;
    }
    return best != UINT64_MAX;
}

const std::vector<uint64_t>* Tracker::reach_of(const Rank& r) {
    return r.current && r.reach_epoch == r.current->epoch ? &r.reach : nullptr;
}

void Tracker::lend_reach(size_t slot, uint64_t epoch, const std::vector<uint64_t>& cursors) {
    std::lock_guard lk(mu_);
    if (slot >= ranks_.size()) return;
    Rank& r = ranks_[slot];
    if (!r.current || r.current->epoch != epoch || cursors.size() != r.cursors.size()) return;
    if (r.reach_epoch != epoch) {
        r.reach.assign(cursors.size(), 0);
        r.reach_epoch = epoch;
    }
    for (size_t w = 0; w < cursors.size(); ++w) r.reach[w] = std::max(r.reach[w], cursors[w]);
}

// How far an open at stream index s lands from its worker's cursor c.
uint64_t Tracker::distance(uint64_t s, uint64_t c) const {
    return s >= c ? s - c : c - s;
}

} // namespace clairfs::track
