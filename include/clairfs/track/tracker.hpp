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
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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
    // Per node, nonzero if some sample of the job's dataset opens it (any
    // rank, any epoch); empty if unknown. An open that matches nothing
    // waits for an epoch still being planned only if it may be a sample's:
    // other files' opens never wait.
    std::vector<uint8_t> sample_nodes;
};

// A rank's epochs in order: the next one, or nullptr after the last. Called
// by the tracker's constructor for the first two epochs, then only by its
// planner thread, one call at a time.
using EpochSource = std::function<std::shared_ptr<const plan::EpochPlan>()>;

// Where one local rank stands. Copied out by snapshot(), so the prefetch
// scheduler can walk the plans without holding the tracker's lock.
struct RankProgress {
    uint32_t rank = 0;                              // the job's rank number
    std::shared_ptr<const plan::EpochPlan> current; // the last one once past it
    // nullptr if current is the last, or for the moment it takes the
    // planner thread to build it once `current` began.
    std::shared_ptr<const plan::EpochPlan> next;
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
    // first epoch is fetched at construction, its second too, on the
    // caller's thread: construct the tracker before taking any lock an
    // open needs. Starts no thread (it may run before the daemon forks):
    // the planner thread ("clairfs-plan") starts with the first epoch to build.
    Tracker(std::vector<uint32_t> ranks, std::vector<EpochSource> sources, TrackerOptions opt);
    // Joins the planner thread, after the epoch it may be building.
    ~Tracker();
    Tracker(const Tracker&) = delete;
    Tracker& operator=(const Tracker&) = delete;

    // Called by every FUSE open of a regular file; O(local ranks). When a
    // rank begins an epoch, the planner thread builds the one after it,
    // off the lock (milliseconds per million samples, once per epoch), so
    // the epoch is ready long before the loaders reach it. An open that
    // matches nothing while a plan is still being built waits for it
    // (without the lock) and is matched again: it may be that epoch's.
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
    // Waits until no epoch is being built: the snapshot then shows every
    // rank's next epoch. For tests; opens never need it.
    void wait_for_plans() const;

private:
    struct Rank {
        uint32_t rank = 0;
        EpochSource source; // planner thread only, after construction
        std::shared_ptr<const plan::EpochPlan> current, next;
        bool next_wanted = false;  // the planner thread is to build `next`
        bool next_pending = false; // ... or is building it: not known to be the last yet
        bool source_ended = false; // the source gave nullptr
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
    bool observe_locked(index::NodeId node, Clock::time_point now, uint32_t pid,
                        Observation& o);
    void plan_loop();
    void start_planner(); // under mu_
    void install_next(Rank& r, std::shared_ptr<const plan::EpochPlan> plan);
    void take(Rank& r, uint64_t position, Clock::time_point now);
    void skip_dangling(Rank& r, uint32_t w) const;
    bool dataset_file(index::NodeId node) const;
    bool may_be_sample(index::NodeId node) const;
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
    // Lock order: mu_, then what a dropped plan's deleter takes
    // (plan::PlanPool's leaf lock); nothing else is called with it held, the
    // sources least of all: the planner thread calls them without it.
    mutable std::mutex mu_;
    mutable std::condition_variable plan_cv_;  // wakes the planner thread
    mutable std::condition_variable built_cv_; // a pending epoch was installed
    uint32_t pending_ = 0;                     // ranks with next_pending set
    bool stopping_ = false;
    std::vector<Rank> ranks_; // never resized after construction

    // Written under mu_, read without it: the FUSE threads and the scheduler
    // only need to know whether to act on the prediction.
    std::atomic<Mode> mode_ = Mode::clairvoyant;
    std::string reason_;
    uint64_t counted_epoch_ = 0; // the epoch opens_/matched_ belong to
    uint64_t opens_ = 0;
    uint64_t matched_ = 0;
    std::thread planner_; // last; started by start_planner(), under mu_
};

} // namespace clairfs::track
