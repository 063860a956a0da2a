// SPDX-License-Identifier: MIT
// Zero configuration (issue 16): while no job is registered, the mount
// watches which process opens which file and looks for the job that
// explains them (order/job_detect.hpp). Found, and confirmed by the next
// opens of every loader it claims, the job is registered as if its
// registration had been written to the control file, marked "detected".
//
// FUSE threads only queue each open (O(1), under a lock nothing else holds
// long; only the first open of a batch wakes the thread); one thread of its
// own maps opens to samples, builds the candidate datasets and runs the
// search, bounded and at most once per generation of loader processes (a
// new epoch's workers) or per epoch's worth of opens, and all searches
// together within a share of one core (SearchBudget).
#pragma once

#include "clairfs/control/registration.hpp"
#include "clairfs/control/search_budget.hpp"
#include "clairfs/control/tf_detection.hpp"
#include "clairfs/index/index.hpp"
#include "clairfs/order/job_detect.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace clairfs::control {

struct DetectorOptions {
    order::DetectOptions search;
    // Opens every rank's loader must have made at the predicted positions
    // before a job is accepted.
    uint32_t accept_opens = 64;
    // Searches use at most this share of one core, averaged over
    // cpu_window_s (--detect-cpu; SearchBudget).
    double cpu_share = 0.02;
    double cpu_window_s = 100;
    // How long the thread lets opens gather after the first of a batch
    // wakes it: one wake-up per batch, not per open.
    double gather_s = 0.002;
    // The deep search along the listed seeds' global chains (order::
    // ChainDetect), begun when a search finds nothing: words per seed, and
    // the words per seed of one slice. Its first slices may take at once
    // the share of chain_burst_window_s seconds (20 s of CPU at the default
    // 2%): what finds a resnet-sized initialisation (some 23 M words of
    // each of 8 chains, about 7 s of one core) within the first epoch.
    // After that it is paid from the share above like every search. The
    // burst is granted again only after a job was registered, dropped or
    // unregistered.
    uint64_t chain_words = uint64_t{1} << 30;
    uint64_t chain_slice = uint64_t{1} << 18;
    double chain_burst_window_s = 1000;
    // Monotonic seconds for the CPU budget; null: the steady clock. A unit
    // test sets its own to move the budget's time by hand.
    std::function<double()> clock;
};

class Detector {
public:
    // Registers a detected job, telling its trackers first the opens it was
    // found from (each claimed process's, in its order), then those `late`
    // returns (queued since, every process's) as the job goes live: "" or
    // why it was refused.
    using Opens = std::vector<std::pair<index::NodeId, uint32_t>>;
    using Apply = std::function<std::string(
        JobRegistration job, std::span<const std::pair<index::NodeId, uint32_t>> opens,
        const std::function<Opens()>& late)>;
    // Drops a registered detected job that is over (it fell back, or every
    // process of it exited), so detection can start over: true if it did.
    using DropFinished = std::function<bool()>;

    Detector(const index::Index& idx, DetectorOptions opt, Apply apply, DropFinished drop_finished);
    ~Detector();
    Detector(const Detector&) = delete;
    Detector& operator=(const Detector&) = delete;

    // The thread: started in the process that serves (after any fork).
    void start();
    void stop();

    // A FUSE thread's open of a regular file while no job is registered.
    void opened(index::NodeId id, uint32_t pid);
    // Forgets every process seen: a job was registered or unregistered.
    void reset();
    // Fills status key "detection".
    void status(nlohmann::json& out) const;

private:
    struct Process {
        std::vector<index::NodeId> opens;
        std::vector<uint64_t> seq; // opens_ at each of them: their order among all
        uint64_t last = 0; // opens_ at its latest open: the least recent goes first
        // Past the first max_opens_per_process: (opens_, file), kept to be
        // told to the trackers of a job that claims it, not searched.
        std::vector<std::pair<uint64_t, index::NodeId>> later;
        bool overflowed = false; // more than the detector keeps: told nothing
    };
    // A dataset a job may be reading, built once per root and layout.
    struct Candidate {
        std::string root; // relative to the mount root
        layout::LayoutKind kind;
        std::shared_ptr<const layout::Dataset> dataset; // null if the layout refused the root
        // Per index node, its sample index (not_a_sample if none): four
        // bytes a node, as long as the candidate is kept.
        std::shared_ptr<const std::vector<order::Sample>> sample_of;
    };

    void run();
    bool next_batch(std::deque<std::pair<index::NodeId, uint32_t>>& batch, bool& was_reset);
    void start_over();
    bool detected_job_over();
    void judge();
    void take(std::deque<std::pair<index::NodeId, uint32_t>>& batch);
    void forget(std::map<uint32_t, Process>::iterator it); // erases, freeing its `later`
    void round();
    std::vector<std::pair<std::string, layout::LayoutKind>> roots() const;
    const Candidate& candidate(const std::string& root, layout::LayoutKind kind);
    std::vector<order::ProcessOpens> opens_in(const std::vector<order::Sample>& sample_of) const;
    bool search_due() const;
    bool deferred();
    bool search();
    struct Pending;
    std::unique_ptr<Pending>
    search_torch(std::span<const std::pair<std::string, layout::LayoutKind>> roots,
                 order::DetectStats& stats);
    void note_searched();
    void report_search(const order::DetectedJob* found, const order::DetectStats& stats,
                       const TfAttempt& tf, double cpu);
    bool found_none(const TfAttempt& tf);
    void begin_chain();
    // One slice of the chain search; whether it is due now, else in how
    // many seconds.
    void chain_slice();
    std::vector<order::ChainTarget>
    chain_targets(std::vector<const Candidate*>& used,
                  std::vector<std::vector<order::ProcessOpens>>& opens);
    void pay_for_slice(bool burst, double cpu);
    void chain_found(const order::ChainFound& found, const Candidate& c);
    double chain_wait_s() const;
    void end_chain(const std::string& why);
    void accept(const order::DetectedJob& job);
    JobRegistration registration(const order::DetectedJob& job) const;
    // tf.data pipelines (control/tf_detection.hpp), when no torch job fits.
    // The tf.data search over the roots the torch search tried.
    TfAttempt search_tf(std::span<const std::pair<std::string, layout::LayoutKind>> roots);
    bool accept_tf(const TfDetection& tf);
    // Registers a detected job (accept, accept_tf): true if it went live.
    bool register_detected(JobRegistration job, std::span<const uint32_t> pids,
                           const std::string& what, const std::string& said_ok);
    Opens claimed_opens(const JobRegistration& job, std::span<const uint32_t> pids) const;
    void went_live(const JobRegistration& job, std::span<const uint32_t> pids);

    const index::Index& idx_;
    DetectorOptions opt_;
    Apply apply_;
    DropFinished drop_finished_;

    // Guards queue_, reset_, stop_ and the status fields below.
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::pair<index::NodeId, uint32_t>> queue_;
    uint64_t dropped_ = 0; // opens lost to a full queue
    bool reset_ = false;
    bool stop_ = false;
    // Ends a search in progress (stop() and reset()): DetectOptions::cancel.
    std::atomic<bool> cancel_{false};
    // Status, copied out under mu_.
    struct Status {
        std::string state = "watching"; // watching, searching, confirming, detected, off
        std::string last_result;        // one line: what the last search found
        uint64_t searches = 0;
        double search_cpu_s = 0;        // the last search's CPU time
        double search_cpu_total_s = 0;  // all searches' CPU time
        uint64_t deferred = 0;          // times a search was due and the budget said wait
        double deferred_until = 0;      // steady-clock seconds the deferral lasts; 0: none
        uint64_t opens_at_detection = 0; // opens taken when the job was accepted
        // The chain search: "searching", "found", "not found" or "" (never
        // run since the last reset).
        std::string chain_state;
        uint64_t chain_scanned = 0, chain_words = 0, chain_seeds = 0;
        double chain_cpu_s = 0;
    } st_;

    // The detector thread's own state.
    std::map<uint32_t, Process> procs_;
    size_t replay_opens_ = 0; // in every process's `later`
    uint64_t opens_ = 0;           // opens taken since the last reset
    uint64_t opens_at_search_ = 0; // opens_ when the last search failed
    size_t tf_evidence_ = 256;     // the first opens a tf.data search judges (detector.cpp)
    uint64_t tf_due_at_ = 0;       // a tf.data pipeline fits: searched again at these opens_
    std::vector<uint32_t> searched_pids_; // the processes the last failed search saw
    // The datasets of the search in progress (a few roots): four bytes an
    // index node each, so they are let go after it.
    std::deque<Candidate> candidates_; // a deque: a reference to one outlives the next push_back
    uint64_t epoch_worth_ = 0; // the largest candidate's samples: an epoch's opens
    // A job found but not yet confirmed by accept_opens opens per rank.
    struct Pending {
        order::DetectedJob job;
        std::string root;
        layout::LayoutKind kind;
        std::shared_ptr<const layout::Dataset> dataset;
        std::shared_ptr<const std::vector<order::Sample>> sample_of;
        bool from_chain = false; // found by the chain search
    };
    std::unique_ptr<Pending> pending_;
    // Jobs detected since the last reset, and their roots: a candidate
    // root that is one of them, or above or below one, is not searched (its
    // files are that job's).
    uint32_t detected_jobs_ = 0;
    std::vector<std::string> taken_roots_;
    bool overlaps_taken(const std::string& root) const;
    bool only_under(const Process& p, const std::vector<std::string>& roots) const;
    // The chain search, run in slices on the detector thread.
    struct Chain {
        std::unique_ptr<order::ChainDetect> search; // running, between slices
        bool over = false;          // ran to its end (or found a job) since the last reset
        double burst_left_s = 0;    // of cpu_share x chain_burst_window_s
        double burst_spent_s = 0;   // CPU the bursts took, since the mount
    } chain_;
    SearchBudget budget_;
    double now_s() const; // opt_.clock's, else the steady clock's
    // Seconds until the search the budget deferred may run (0: now); a day
    // if none waits. The thread wakes for it: the job may open nothing more
    // until then (a tf.data job between epochs, a loader at a barrier).
    double deferred_wait_s() const;
    // The sooner of that and chain_wait_s(): when the thread has work
    // without new opens.
    double work_due_in_s() const;
    // The deferral is over: the search ran, or nothing is due any more.
    void end_deferral();
    bool deferring_ = false; // the last search due was deferred, none ran since
    bool registered_ = false; // a detected job is registered
    bool broken_ = false;     // an internal error stopped detection for this mount
    std::thread thread_;
};

} // namespace clairfs::control
