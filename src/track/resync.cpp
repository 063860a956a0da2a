// SPDX-License-Identifier: MIT
// Opens that fit no prediction, held back as evidence, and the planner
// thread's search for the seed that explains them. A real script draws from
// the global generator between epochs (a validation loader's base_seed, a
// random op per step, a model's initialisation), and forgets set_epoch: the
// order then shifts along a chain clairfs can walk instead of giving up.
#include "clairfs/sys/contained.hpp"
#include "clairfs/track/tracker.hpp"

#include <algorithm>

#include <cmath>

namespace clairfs::track {
namespace {

// Families holding evidence at once, far above the loaders of one node:
// stray opens of processes that stopped opening must not pile up.
constexpr size_t max_families = 1024;
// A false accept anywhere in a search must be this unlikely.
constexpr double false_accept = 1e-9;

} // namespace

// How far into an epoch the first `opens` opens can lie: the loaders
// dispatch prefetch_factor batches per worker at once and one more per
// batch received, and each received batch took batch_size opens.
uint32_t Tracker::evidence_window(size_t opens) const {
    const plan::WorkerLayout& l = opt_.layout;
    uint64_t in_flight = uint64_t{opt_.prefetch_factor} * l.streams() + 1;
    uint64_t w = opens + in_flight * l.batch_size;
    return static_cast<uint32_t>(std::min<uint64_t>(w, UINT32_MAX));
}

// Enough opens that no wrong candidate among those searched is likely to
// have all of them in its first `window` positions by chance: each does
// with probability about window / n, independently. The deep chain search
// tries a million times more candidates, but also wants each opener's
// samples in the order it opened them.
size_t Tracker::evidence_needed() const {
    size_t m = evidence_for(opt_.resync_max + 1, false);
    if (opt_.deep_last > opt_.resync_max && !deep_done_.tried)
        m = std::max(m, evidence_for(opt_.deep_last - opt_.resync_max, true));
    return m;
}

size_t Tracker::evidence_for(uint64_t candidates, bool ordered) const {
    uint64_t n = 0;
    for (const Rank& r : ranks_)
        if (r.current) n = std::max<uint64_t>(n, r.current->size());
    n = std::max<uint64_t>(n, 1);
    auto tries = static_cast<double>(candidates);
    for (size_t m = 4; m < 64; ++m) {
        double p = static_cast<double>(evidence_window(m)) / static_cast<double>(n);
        double chance = ordered ? order::chain_false_accept(static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX)),
                                                           evidence_window(m), m,
                                                           opt_.layout.streams())
                                : std::pow(p, static_cast<double>(m));
        if (p < 1 && tries * chance < false_accept) return m;
    }
    return 64;
}

// Under mu_. True when the open was taken as evidence (not judged now).
bool Tracker::hold_as_evidence(index::NodeId node, uint32_t pid, uint32_t family,
                               ObserveMode mode) {
    bool searchable = false;
    // A rank past its last epoch has none left to correct: what it opens
    // now is judged at once (judge_unmatched), not held.
    for (const Rank& r : ranks_) searchable |= r.resync && !finished(r);
    if (!searchable) return false;
    if (!evidence_.contains(family) && evidence_.size() >= max_families) evidence_.clear();
    Evidence& ev = evidence_[family];
    if (ev.queued) return false; // a search of this family runs: the open waited for it
    for (const auto& [n, p] : ev.opens)
        if (n == node) return true; // opened again (a retry): still one piece of evidence
    ev.opens.emplace_back(node, pid);
    if (mode == ObserveMode::normal) ev.tentative = false;
    if (ev.opens.size() < evidence_needed()) return true;
    ev.queued = true;
    resync_queue_.push_back(family);
    ++pending_;
    start_planner();
    plan_cv_.notify_one();
    return true;
}

// Planner thread, lk held. The family's own rank first, then every rank
// whose order can be searched.
void Tracker::run_resync(std::unique_lock<std::mutex>& lk, uint32_t family) {
    Evidence ev = std::move(evidence_[family]);
    evidence_.erase(family);
    if (mode_.load(std::memory_order_relaxed) != Mode::clairvoyant) {
        --pending_;
        built_cv_.notify_all();
        return;
    }
    std::vector<size_t> slots;
    if (auto it = slot_of_pid_.find(family); it != slot_of_pid_.end()) slots.push_back(it->second);
    for (size_t i = 0; i < ranks_.size(); ++i)
        if (ranks_[i].resync && (slots.empty() || slots.front() != i)) slots.push_back(i);
    plan::ResyncResult result;
    bool found = false;
    std::optional<size_t> deep_slot;
    for (size_t slot : slots) {
        if ((found = resync_slot(lk, slot, ev, result))) break;
        if (result.deep_possible && !deep_slot) deep_slot = slot;
    }
    --pending_;
    if (found) {
        ++resyncs_;
        replay(ev, family, Clock::now());
    } else if (!ev.tentative && mode_.load(std::memory_order_relaxed) == Mode::clairvoyant &&
               deep_slot && begin_deep(family, *deep_slot, std::move(ev))) {
        // Held until the deep search ends: deep_search.cpp.
    } else if (!ev.tentative && mode_.load(std::memory_order_relaxed) == Mode::clairvoyant) {
        fall_back("the first " + std::to_string(ev.opens.size()) +
                  " opens of an epoch fit no seed clairfs searched (" + result.tried +
                  "): " + opt_.keys_hint +
                  (ranks_.empty() || !ranks_.front().current ||
                           !ranks_.front().current->tf_iterator
                       ? ", or does the job draw more than resync_draws random numbers between "
                         "epochs?"
                       : "?"));
    }
    built_cv_.notify_all();
}

// Planner thread, lk held on entry and exit. The epoch to correct is the
// current one if fewer of its opens fit than did not (a wrong pre_draws
// shows in epoch 0; an epoch begun by an open that fit by chance), else
// the next one.
// Whether the search corrects the current epoch rather than the next: one
// whose opens fit less than the evidence did (a wrong pre_draws shows in
// epoch 0; an epoch begun by an open that fit by chance), or a tf.data
// iterator abandoned early. A Keras script previews a batch or two
// (`for x in train_ds.take(1)`) before fit: each preview is an iterator of
// its own, read a batch deep; counted as an epoch it would use up one of
// the registered (fit) epochs.
bool Tracker::redo_current(const Rank& r, const Evidence& ev) const {
    return r.opened < ev.opens.size() ||
           (r.current->tf_iterator && 2 * r.opened < r.current->size());
}

plan::ResyncRequest Tracker::resync_request(const Rank& r, const Evidence& ev) const {
    plan::ResyncRequest req;
    req.epoch = redo_current(r, ev) ? r.current->epoch : r.next->epoch;
    for (const auto& [node, pid] : ev.opens) {
        req.opened.push_back(node);
        req.openers.push_back(pid);
    }
    req.window = evidence_window(ev.opens.size());
    return req;
}

bool Tracker::resync_slot(std::unique_lock<std::mutex>& lk, size_t slot, const Evidence& ev,
                          plan::ResyncResult& result) {
    Rank& r = ranks_[slot];
    if (!r.resync || !r.current) return false;
    bool redo = redo_current(r, ev);
    if (!redo && !r.next) {
        result.tried = "nothing: rank " + std::to_string(r.rank) + " has no epoch left to correct";
        return false;
    }
    plan::ResyncRequest req = resync_request(r, ev);
    std::shared_ptr<const plan::EpochPlan> first, second;
    plan::ResyncResult res;
    lk.unlock();
    // Only this thread calls the rank's source and search, so neither needs
    // the lock; the old plans are dropped after it is taken again. Nothing
    // may escape while the lock is not held.
    std::string failed = sys::contained("searching for the job's seed", [&] {
        res = r.resync(req);
        if (res.found) {
            first = r.source();
            if (redo && first) second = r.source();
        }
    });
    lk.lock();
    if (!failed.empty()) {
        res.found = false;
        res.tried = failed;
    }
    result = res;
    if (!res.found) return false;
    if (!first) { // cannot happen: the epoch was planned before
        fall_back("could not plan epoch " + std::to_string(req.epoch) + " again");
        return true;
    }
    install_found(r, redo, std::move(first), std::move(second), res);
    return true;
}

// Under mu_: the epoch a search found, in place of the predicted one.
void Tracker::install_found(Rank& r, bool redo, std::shared_ptr<const plan::EpochPlan> first,
                            std::shared_ptr<const plan::EpochPlan> second,
                            const plan::ResyncResult& res) {
    if (res.repeat && warning_.empty())
        warning_ = "epoch " + std::to_string(first->epoch) + " of rank " + std::to_string(r.rank) +
                   " repeats epoch " + std::to_string(first->epoch - 1) +
                   "'s order: the job does not call sampler.set_epoch(epoch), so every epoch "
                   "sees the same order (clairfs follows it)";
    if (redo) {
        r.current = std::move(first);
        r.next = std::move(second);
        r.source_ended = !r.next;
        // A build asked for while this search ran (the rank began its next
        // epoch meanwhile) would now plan the epoch after `second`: it is
        // called off, and the opens waiting for it are told.
        if (r.next_pending) {
            r.next_wanted = false;
            r.next_pending = false;
            --pending_;
            built_cv_.notify_all();
        }
        begin_epoch(r);
    } else {
        r.next = std::move(first);
        r.next_confirmed = true;
    }
}

// The held opens, matched now against the corrected plans, in the order
// they came. One that still fits nothing counts as a miss.
void Tracker::replay(const Evidence& ev, uint32_t family, Clock::time_point now) {
    for (const auto& [node, pid] : ev.opens) {
        Match m{};
        Observation o;
        if (find_match(node, pid, family, m))
            accept(m, now, pid, family, o);
        else
            count_open(false);
    }
}

} // namespace clairfs::track
