// SPDX-License-Identifier: MIT
// Matches the opens the mount sees to the positions the registered job's
// loaders will open, per local rank: a cursor per DataLoader worker (each
// worker opens its batches in order; only the interleaving across workers
// is left to timing), epoch changes, and the two ways a prediction fails: a
// forgotten set_epoch (an epoch repeats the last one's order) and a wrong
// seed, sampler or batch size (the match rate collapses). Either switches
// the tracker to fallback for good; clairfs then never acts on the
// prediction again until the job registers anew.
#pragma once

#include "clairfs/plan/epoch_plan.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace clairfs::track {

using Clock = std::chrono::steady_clock;

enum class Mode {
    unregistered, // no job registered: first-touch caching only
    clairvoyant,  // the opens follow the registered order
    fallback,     // they stopped doing so; `reason` says how
};
const char* mode_name(Mode m); // "unregistered", "clairvoyant", "fallback"

struct TrackerOptions {
    plan::WorkerLayout layout;    // the job's batch_size and num_workers
    uint32_t prefetch_factor = 2; // DataLoader(prefetch_factor=)
    // An open matches its worker's stream up to `slack` opens past the
    // worker's cursor, so a sample whose open failed (or a loader that skips
    // one) does not derail the worker. 0 means one batch.
    uint32_t slack = 0;
    // The match rate is only judged once an epoch has this many opens ...
    uint32_t min_opens = 64;
    // ... and below this fraction the tracker falls back.
    double fallback_below = 0.5;
};

// A rank's epochs in order: the next one, or nullptr after the last.
using EpochSource = std::function<std::shared_ptr<const plan::EpochPlan>()>;

// Where one local rank stands. Copied out by snapshot(), so the prefetch
// scheduler can walk the plans without holding the tracker's lock.
struct RankProgress {
    uint32_t rank = 0;                              // the job's rank number
    std::shared_ptr<const plan::EpochPlan> current; // the last one once past it
    std::shared_ptr<const plan::EpochPlan> next;    // nullptr if current is the last
    plan::WorkerLayout layout;
    std::vector<uint64_t> cursors; // per worker: stream index of its next expected open
    uint64_t frontier = 0;         // smallest position of `current` not yet opened
    uint64_t opened = 0;           // opens matched in `current`
    double epoch_seconds = 0;      // since the first open matched in `current`
    bool finished = false;         // every epoch registered has been opened

    // Whether position p of `current` has been opened.
    bool opened_at(uint64_t p) const {
        return layout.stream_index(p) < cursors[layout.worker_of(p)];
    }
};

struct Snapshot {
    Mode mode = Mode::clairvoyant;
    std::string reason;      // fallback only: one line a user can act on
    uint64_t epoch = 0;      // the slowest local rank's epoch
    uint64_t opens = 0;      // opens of dataset files since that epoch began
    uint64_t matched = 0;    // how many of them matched a rank's stream
    double match_rate = 1.0; // matched / opens (1.0 before any open)
    std::vector<RankProgress> ranks;
};

// What one open turned out to be.
struct Observation {
    bool dataset_file = false; // in some local rank's current or next epoch
    bool matched = false;
    uint32_t slot = 0;      // which local rank (index into the ranks given)
    uint64_t epoch = 0;     // its epoch
    uint64_t position = 0;  // position of the open in that epoch
    bool new_epoch = false; // this open began the rank's next epoch
};

class Tracker {
public:
    // One source per local rank, in the order of `ranks`. Each source's
    // first epoch is fetched at construction, its second too.
    Tracker(std::vector<uint32_t> ranks, std::vector<EpochSource> sources, TrackerOptions opt);

    // Called by every FUSE open of a regular file. O(local ranks) except
    // when a rank begins an epoch: then the source builds the one after it,
    // under the lock (milliseconds per million samples, once per epoch).
    // `pid` is the opener's (FUSE's request context), 0 if unknown: once a
    // loader process's opens matched one rank, its later opens try that
    // rank first, so ranks in different epochs cannot take each other's
    // opens (a file of one rank's epoch e is in another rank's epoch e+1).
    Observation observe(index::NodeId node, Clock::time_point now, uint32_t pid = 0);

    Snapshot snapshot(Clock::time_point now) const;
    Mode mode() const;
    // Falls back for good with `reason`, as a failed prediction does: the
    // engine's way out when following the job failed inside clairfs.
    void abandon(std::string reason);

private:
    struct Rank {
        uint32_t rank = 0;
        EpochSource source;
        std::shared_ptr<const plan::EpochPlan> current, next;
        std::vector<uint64_t> cursors;
        uint32_t open_streams = 0;   // workers whose cursor is short of their stream's end
        uint64_t produced = 0;       // epochs the source has given
        uint64_t opened = 0;         // opens matched in current
        Clock::time_point started{}; // the first of them
        bool started_set = false;
    };
    struct Match {
        size_t slot;
        uint64_t position;
        bool in_next; // in the rank's next epoch: the open begins it
    };

    bool match_in(const plan::EpochPlan& e, const std::vector<uint64_t>& cursors,
                  index::NodeId node, uint64_t& position) const;
    bool find_match(index::NodeId node, uint32_t pid, Match& out) const;
    bool match_slot(size_t i, index::NodeId node, Match& out) const;
    void begin_epoch(Rank& r);
    void advance_epoch(Rank& r);
    void take(Rank& r, uint64_t position, Clock::time_point now);
    void skip_dangling(Rank& r, uint32_t w) const;
    bool dataset_file(index::NodeId node) const;
    bool finished(const Rank& r) const;
    uint64_t slot_epoch(const Rank& r) const;
    void recount_if_slowest_moved();
    void judge_unmatched(index::NodeId node);
    uint64_t slowest_epoch() const;
    void fall_back(std::string reason);

    TrackerOptions opt_;
    uint64_t slack_ = 1;          // opt_.slack, 0 resolved to one batch
    std::vector<uint64_t> zeros_; // the cursors of an epoch nobody has opened yet
    std::unordered_map<uint32_t, size_t>
        slot_of_pid_; // loader process -> rank slot it last matched
    // Lock order: mu_, then whatever the sources and a dropped plan's deleter
    // take (plan::PlanPool's leaf lock); nothing else is called with it held.
    mutable std::mutex mu_;
    std::vector<Rank> ranks_;
    // Written under mu_, read without it: the FUSE threads and the scheduler
    // only need to know whether to act on the prediction.
    std::atomic<Mode> mode_ = Mode::clairvoyant;
    std::string reason_;
    uint64_t counted_epoch_ = 0; // the epoch opens_/matched_ belong to
    uint64_t opens_ = 0;
    uint64_t matched_ = 0;
};

} // namespace clairfs::track
