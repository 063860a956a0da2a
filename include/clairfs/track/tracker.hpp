// SPDX-License-Identifier: MIT
// Matches the opens the mount sees to the positions the registered job's
// loaders will open, per local rank: a cursor per DataLoader worker (each
// worker opens its batches in order; only the interleaving across workers
// is left to timing), and epoch changes. When an epoch's first opens fit
// no rank's prediction and the rank's order can be searched (a RandomSampler
// on the global generator, which the script may draw from between epochs; a
// DistributedSampler whose set_epoch is forgotten or whose job resumed), they
// are held back as evidence and the planner thread searches for the seed that
// explains them; the rank then follows that seed. A prediction fails when no
// seed fits, when a sampler that cannot be searched repeats an epoch, or when
// the match rate collapses (a wrong sampler, batch size or num_workers): the
// tracker falls back for good, and clairfs never acts on the prediction again
// until the job registers anew.
#pragma once

#include "clairfs/plan/epoch_plan.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
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
    // An open may also land up to `behind` positions short of its worker's
    // cursor, if that position has not been opened yet: a loader that opens
    // several files at once from threads (tf.data's parallel map) finishes
    // them in any order within its parallelism. 0: none (a DataLoader
    // worker opens its samples one after the other).
    uint32_t behind = 0;
    // For a job followed by its READs (prefetch/chunks/range_follow.hpp): an open
    // may begin a rank's next epoch once every worker's cursor is within
    // `slack` of its stream's end, or else only as the second open in a row
    // of its loader process (family) to fit there. A READ the kernel makes
    // of metadata may stand for a sample due early next epoch, and must not
    // end the epoch under way; but samples whose pages the kernel kept make
    // no READ, so an epoch's last ones may never be seen.
    bool next_at_end = false;
    // The keys a fallback's reason asks the user to check, as a question.
    std::string keys_hint = "is the seed, sampler, batch size or num_workers different from the "
                            "job's";
    // The match rate is only judged once an epoch has this many opens ...
    uint32_t min_opens = 64;
    // ... and below this fraction the tracker falls back.
    double fallback_below = 0.5;
    // Per node, nonzero if some sample of the job's dataset opens it (any
    // rank, any epoch); empty if unknown. An open that matches nothing
    // waits for an epoch still being planned only if it may be a sample's:
    // other files' opens never wait.
    std::vector<uint8_t> sample_nodes;
    // How far a search for the seed goes (ResyncFn's max_offset); 0: never.
    uint64_t resync_max = 4096;
    // Past it, the deep chain search (plan::ResyncRequest::deep_slice) goes
    // on up to this word, for the first epoch whose search found nothing;
    // 0: none. Only for ranks whose search says it is possible.
    uint64_t deep_last = 0;
    // Candidates per slice of it: the planner thread builds the epochs asked
    // for between slices.
    uint64_t deep_slice = uint64_t{1} << 22;
    // Its CPU: the first deep_burst_s seconds at once (a model of a few
    // hundred million parameters, a ViT-L, within them) while the epoch it
    // would save lasts, then at most
    // deep_share of one core, as job detection's searches (--detect-cpu's
    // default): a wrong registration must not take a core from the job for
    // the whole search. Nice 10 alone does not hold it back: the daemon is
    // a session of its own, and autogroup scheduling shares the CPU among
    // sessions, not threads.
    double deep_burst_s = 20;
    double deep_share = 0.02;
};

// A rank's epochs in order: the next one, or nullptr after the last. Called
// by the tracker's constructor for the first two epochs, then only by its
// planner thread, one call at a time.
using EpochSource = std::function<std::shared_ptr<const plan::EpochPlan>()>;
// A rank's seed search (plan::RankPlanner::resync), called by the planner
// thread only; on success the rank's source gives req.epoch again next.
// Empty for a rank whose order cannot be searched.
using ResyncFn = std::function<plan::ResyncResult(const plan::ResyncRequest&)>;

// How one epoch of a rank was predicted, for status.
struct EpochNote {
    uint64_t epoch = 0;
    uint64_t skipped_words = 0;         // see plan::EpochPlan
    std::optional<uint64_t> seed_epoch; // DistributedSampler only
    std::optional<uint64_t> tf_iterator; // tensorflow: the tf.data iterator the epoch runs
};

// How an open is to be judged.
enum class ObserveMode {
    normal,     // the tracker's own job: unmatched opens count, may be evidence
    match_only, // one of several jobs asking: take the open only if it matches
    // Several jobs, none matched the current epoch: evidence whose failed
    // search is no failure; like this_epoch, it begins no next epoch.
    tentative,
    // An open or READ of a process no job has claimed, that fits this job
    // alone (JobTable::route_open, RangeJobs::follow_read): taken only if it
    // matches the current epoch. A job's next epoch is begun by its own
    // processes; another job's reader whose open happens to fit its first
    // batches would begin it early.
    this_epoch,
};

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
    std::vector<EpochNote> history; // the epochs begun, the latest last (at most 64)

    // Whether position p of `current` has been opened.
    bool opened_at(uint64_t p) const {
        return layout.stream_index(p) < cursors[layout.worker_of(p)];
    }
};

struct Snapshot {
    Mode mode = Mode::clairvoyant;
    std::string reason;      // fallback only: one line a user can act on
    std::string warning;     // a job bug clairfs works around (a forgotten set_epoch)
    uint64_t resyncs = 0;    // epochs whose seed was found by searching
    uint64_t searching = 0;  // opens held back as evidence, not yet judged
    // The deep chain search: under way (the prediction is not acted on
    // meanwhile), how far it got, and the words it found past the
    // prediction (a model's initialisation, typically).
    bool deep_searching = false;
    uint64_t deep_scanned = 0;
    uint64_t deep_range = 0;
    double deep_cpu_s = 0;
    std::optional<uint64_t> draw_offset;
    // When an open was last matched (Clock epoch if never): of a job's
    // loaders, the one opened last is the one running.
    Clock::time_point last_match{};
    uint64_t epoch = 0;      // the slowest local rank's epoch
    uint64_t opens = 0;      // opens of dataset files since that epoch began
    uint64_t matched = 0;    // how many of them matched a rank's stream
    double match_rate = 1.0; // matched / opens (1.0 before any open)
    uint64_t run_opens = 0;   // opens and matches since registration, every epoch
    uint64_t run_matched = 0;
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
    bool deferred = false;  // held back as evidence for a seed search
};

class Tracker {
public:
    // One source per local rank, in the order of `ranks`. Each source's
    // first epoch is fetched at construction, its second too, on the
    // caller's thread: construct the tracker before taking any lock an
    // open needs. Starts no thread (it may run before the daemon forks):
    // the planner thread ("clairfs-plan") starts with the first epoch to build.
    Tracker(std::vector<uint32_t> ranks, std::vector<EpochSource> sources, TrackerOptions opt);
    // The same, with each rank's seed search (empty: that rank's order is
    // never searched).
    Tracker(std::vector<uint32_t> ranks, std::vector<EpochSource> sources,
            std::vector<ResyncFn> resyncs, TrackerOptions opt);
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
    // `ppid` is the opener's parent: a DataLoader worker's is its loader
    // process, whose workers (respawned every epoch) then count as one.
    Observation observe(index::NodeId node, Clock::time_point now, uint32_t pid = 0,
                        uint32_t ppid = 0, ObserveMode mode = ObserveMode::normal);
    // Whether observe() would match this open now (`next_too` false: in
    // the current epoch); changes nothing.
    bool would_match(index::NodeId node, uint32_t pid, uint32_t ppid, bool next_too = true) const;
    // How far from its worker's cursor that match would be, in opens of
    // the worker's stream (from the start of the next epoch for a match
    // there); UINT64_MAX if it would not match.
    // `next_too` false: only a match in the current epoch counts
    // (ObserveMode::this_epoch). `at`, if given and it would match: where.
    struct Place {
        uint64_t epoch = 0;
        uint64_t position = 0;
        bool operator==(const Place&) const = default;
    };
    uint64_t match_distance(index::NodeId node, uint32_t pid, uint32_t ppid,
                            bool next_too = true, Place* at = nullptr) const;

    Snapshot snapshot(Clock::time_point now) const;
    Mode mode() const;
    // Another job reading the same order (one seed's sweep over one file:
    // RangeJobs::lend_reach) has its rank `slot`'s workers at `cursors` in
    // epoch `epoch`. What it read and pushed stays in the page cache a
    // while, so this job's reader, behind it, passes over those samples
    // with no READ: its next READ may land up to the slack past the other
    // job's cursors, not only past its own. For the current epoch only;
    // the furthest lent so far counts.
    void lend_reach(size_t slot, uint64_t epoch, const std::vector<uint64_t>& cursors);
    // Falls back for good with `reason`, as a failed prediction does: the
    // engine's way out when following the job failed inside clairfs.
    void abandon(std::string reason);
    // Waits until no epoch is being built and no search runs: the snapshot
    // then shows every rank's next epoch. For tests; opens never need it.
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
        // Positions of `current` opened behind a cursor or passed over by
        // it: only kept with opt_.behind > 0, to match each position once.
        std::vector<bool> taken;
        uint32_t open_streams = 0;   // workers whose cursor is short of their stream's end
        uint64_t produced = 0;       // epochs the source has given
        uint64_t opened = 0;         // opens matched in current
        Clock::time_point started{}; // the first of them
        bool started_set = false;
        ResyncFn resync;                // empty: never searched
        bool next_confirmed = false;    // `next` came from a search: its opens may begin it early
        std::deque<EpochNote> history; // begin_epoch's notes, at most 64
        // lend_reach: per worker, how far another job of the same order
        // has read epoch `reach_epoch` (stale once `current` moves on).
        std::vector<uint64_t> reach;
        uint64_t reach_epoch = UINT64_MAX;
    };
    // Opens of one loader process (a family: a worker's parent, or the
    // process itself without workers) that fit nothing, held for a search.
    struct Evidence {
        std::vector<std::pair<index::NodeId, uint32_t>> opens; // node, pid; distinct nodes
        bool tentative = true; // only ObserveMode::tentative opens so far
        bool queued = false;   // handed to the planner thread
    };
    struct Match {
        size_t slot;
        uint64_t position;
        bool in_next; // in the rank's next epoch: the open begins it
    };

    // `reach` (lend_reach), if given: positions up to it plus the slack match too.
    bool match_in(const plan::EpochPlan& e, const std::vector<uint64_t>& cursors,
                  const std::vector<bool>* taken, index::NodeId node, uint64_t& position,
                  const std::vector<uint64_t>* reach = nullptr) const;
    static const std::vector<uint64_t>* reach_of(const Rank& r);
    uint64_t distance(uint64_t stream_index, uint64_t cursor) const;
    bool find_match(index::NodeId node, uint32_t pid, uint32_t family, Match& out,
                    bool next_too = true) const;
    bool early_start(const Match& m) const;
    bool match_slot(size_t i, index::NodeId node, uint32_t family, Match& out,
                    bool next_too) const;
    // TrackerOptions::next_at_end: whether an open of `family` may begin r's next epoch.
    bool next_may_begin(const Rank& r, uint32_t family) const;
    // Whether the open would begin some rank's next epoch but for next_may_begin.
    bool fits_next(index::NodeId node) const;
    void begin_epoch(Rank& r);
    void advance_epoch(Rank& r);
    bool observe_locked(index::NodeId node, Clock::time_point now, uint32_t pid, uint32_t family,
                        ObserveMode mode, Observation& o);
    void accept(const Match& m, Clock::time_point now, uint32_t pid, uint32_t family,
                Observation& o);
    uint32_t family_of(uint32_t pid, uint32_t ppid) const;
    bool hold_as_evidence(index::NodeId node, uint32_t pid, uint32_t family, ObserveMode mode);
    size_t evidence_needed() const;
    uint32_t evidence_window(size_t opens) const;
    void run_resync(std::unique_lock<std::mutex>& lk, uint32_t family);
    plan::ResyncRequest resync_request(const Rank& r, const Evidence& ev) const;
    bool redo_current(const Rank& r, const Evidence& ev) const;
    bool begin_deep(uint32_t family, size_t slot, Evidence ev);
    bool hold_for_deep(index::NodeId node, uint32_t pid, uint32_t family);
    void deep_slice(std::unique_lock<std::mutex>& lk);
    void resync_next(std::unique_lock<std::mutex>& lk);
    void build_next(std::unique_lock<std::mutex>& lk, Rank& wanted);
    void run_deep_slice(std::unique_lock<std::mutex>& lk);
    struct DeepSearch;
    void pace_deep(DeepSearch& d, const Rank& r, double spent);
    void finish_deep(const plan::ResyncResult& res);
    size_t evidence_for(uint64_t candidates, bool ordered) const;
    bool resync_slot(std::unique_lock<std::mutex>& lk, size_t slot, const Evidence& ev,
                     plan::ResyncResult& result);
    void install_found(Rank& r, bool redo, std::shared_ptr<const plan::EpochPlan> first,
                       std::shared_ptr<const plan::EpochPlan> second,
                       const plan::ResyncResult& res);
    void replay(const Evidence& ev, uint32_t family, Clock::time_point now);
    void note_epoch(Rank& r);
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
    // Under mu_: one open of a dataset file judged, in the epoch's and
    // the run's counts.
    void count_open(bool matched) {
        ++opens_;
        ++run_opens_;
        matched_ += matched;
        run_matched_ += matched;
    }
    uint64_t slowest_epoch() const;
    void fall_back(std::string reason);

    TrackerOptions opt_;
    uint64_t slack_ = 1;          // opt_.slack, 0 resolved to one batch
    std::vector<uint64_t> zeros_; // the cursors of an epoch nobody has opened yet
    std::unordered_map<uint32_t, size_t>
        slot_of_pid_; // opener or loader family -> rank slot it last matched
    std::unordered_map<uint32_t, Evidence> evidence_; // by family
    // next_at_end: families whose last open fitted only a next epoch.
    std::unordered_map<uint32_t, bool> next_vote_;
    std::deque<uint32_t> resync_queue_;               // families whose evidence is complete
    // The deep chain search under way (at most one per tracker, and only
    // the first: a job whose chain moves by millions of words again later
    // is not one this search can follow). Its family's opens are held, not
    // judged, until it ends; then they are matched again in order.
    struct DeepSearch {
        uint32_t family = 0;
        size_t slot = 0;
        plan::ResyncRequest req;
        Evidence held;
        std::unordered_set<index::NodeId> seen; // held nodes, for retries
        bool redo_current = true;
        Clock::time_point resume_at{}; // past the burst, the next slice waits until then
    };
    std::unique_ptr<DeepSearch> deep_;
    // Whether the deep search was tried, and how far it got (under way or
    // ended), for status.
    struct DeepProgress {
        bool tried = false;
        uint64_t scanned = 0, range = 0;
        double cpu_s = 0;
    } deep_done_;
    std::optional<uint64_t> draw_offset_;
    std::string warning_;
    uint64_t resyncs_ = 0;
    uint32_t past_end_opens_ = 0; // unmatched opens once a rank finished its epochs
    // Lock order: mu_, then what a dropped plan's deleter takes
    // (plan::PlanPool's leaf lock); nothing else is called with it held, the
    // sources least of all: the planner thread calls them without it.
    mutable std::mutex mu_;
    mutable std::condition_variable plan_cv_;  // wakes the planner thread
    mutable std::condition_variable built_cv_; // a pending epoch was installed
    // Ranks with next_pending set, plus evidence queued for or in a search:
    // while nonzero, an open that fits nothing may fit what is being built.
    uint32_t pending_ = 0;
    bool stopping_ = false;
    std::vector<Rank> ranks_; // never resized after construction

    // Written under mu_, read without it: the FUSE threads and the scheduler
    // only need to know whether to act on the prediction.
    std::atomic<Mode> mode_ = Mode::clairvoyant;
    std::string reason_;
    uint64_t counted_epoch_ = 0; // the epoch opens_/matched_ belong to
    Clock::time_point last_match_{};
    uint64_t opens_ = 0;
    uint64_t matched_ = 0;
    uint64_t run_opens_ = 0;
    uint64_t run_matched_ = 0;
    std::thread planner_; // last; started by start_planner(), under mu_
};

} // namespace clairfs::track
