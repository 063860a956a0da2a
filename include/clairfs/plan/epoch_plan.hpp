// SPDX-License-Identifier: MIT
// The node's future, one local rank and one epoch at a time: which file of
// the mount each position of the loader's order opens, and where in that
// order each file comes. Pure: built from order/ and the index, no I/O.
#pragma once

#include "clairfs/index/index.hpp"
#include "clairfs/layout/dataset.hpp"
#include "clairfs/order/chain_scan.hpp"
#include "clairfs/order/epoch_orders.hpp"
#include "clairfs/order/prefix_search.hpp"
#include "clairfs/plan/job.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clairfs::plan {

inline constexpr uint32_t no_position = UINT32_MAX;

// One epoch of one rank's loader. Immutable once built, so the tracker and
// the prefetch scheduler share it through a shared_ptr without a lock.
struct EpochPlan {
    uint64_t epoch = 0;
    // How the prediction was corrected for this epoch (status shows it):
    // random sampler, global generator: 32-bit draws the job made beyond
    // the predicted ones before this epoch's iterator; DistributedSampler:
    // what it added to its seed (the epoch unless set_epoch is forgotten).
    uint64_t skipped_words = 0;
    std::optional<uint64_t> seed_epoch;
    // framework tensorflow: the iterator of the dataset this epoch runs.
    std::optional<uint64_t> tf_iterator;
    // Position p (batches concatenated, as the loader yields them) -> the
    // file its open() reaches; layout::no_node for a sample whose path
    // dangles (the job's open fails and nothing can be prefetched). For a
    // dataset of byte ranges (layout::Dataset::ranges), the sample number
    // instead, and first_position is sized to the samples.
    std::vector<index::NodeId> nodes;
    // Node id -> its first position in `nodes`, or no_position. Sized to the
    // index (one entry per node), so a lookup is one load.
    std::vector<uint32_t> first_position;
    // Empty when every node appears at most once: the common case. Nodes
    // repeat with replacement, with num_samples > n, or when two samples
    // reach one file through a symlink; DistributedSampler's padding repeats
    // a sample in another rank's epoch, never in the same one. Otherwise
    // next_same[p] is the next position holding the same node as p, or
    // no_position.
    std::vector<uint32_t> next_same;

    size_t size() const { return nodes.size(); }
    // Where `node` next comes at or after position `from`, or no_position.
    uint32_t position_at_or_after(index::NodeId node, uint32_t from) const;
};

// How a DataLoader's workers split an epoch (see order/worker_split.hpp):
// batch k goes to worker k % W, and each worker opens its batches' samples
// in order. Maps an epoch position to (worker, index in that worker's
// stream) and back, in O(1).
struct WorkerLayout {
    uint32_t batch_size = 1;
    uint32_t workers = 0; // DataLoader num_workers; 0 = the main process loads

    uint32_t streams() const { return workers == 0 ? 1 : workers; }
    uint32_t worker_of(uint64_t p) const {
        return static_cast<uint32_t>((p / batch_size) % streams());
    }
    // Index of position p within its worker's stream.
    uint64_t stream_index(uint64_t p) const {
        uint64_t batch = p / batch_size;
        return (batch / streams()) * batch_size + p % batch_size;
    }
    // The epoch position of worker w's s-th open (may be >= the epoch's size).
    uint64_t position(uint32_t w, uint64_t s) const {
        return ((s / batch_size) * streams() + w) * batch_size + s % batch_size;
    }
};

class PlanPool;

// An epoch whose first opens did not fit the prediction, for a planner to
// search the seeds the job may have used instead.
struct ResyncRequest {
    uint64_t epoch = 0;                // the epoch that came out wrong
    std::vector<index::NodeId> opened; // distinct files the loader opened, in order
    std::vector<uint32_t> openers;     // the process of each (0 if unknown); may be empty
    uint32_t window = 0;               // how far into the epoch those opens can lie
    // 0: the search of resync(). Otherwise one slice of this many candidates
    // of the deep chain search (order/chain_scan.hpp) past what that search
    // tried, up to the deep range's end: the first slice must follow a
    // failed search of the same epoch, and each slice goes on where the
    // last one stopped.
    uint64_t deep_slice = 0;
    uint64_t deep_last = 0; // the deep search's last candidate word
};

struct ResyncResult {
    bool found = false;
    std::optional<uint64_t> tf_iterator; // tensorflow: the iterator the epoch runs
    uint64_t words = 0;  // random, global: the extra 32-bit draws found
    bool repeat = false; // distributed: the epoch repeats the one before (no set_epoch)
    std::string tried;   // what was searched, for a reason a user can act on
    // A failed search whose order a deep chain search can look further for.
    bool deep_possible = false;
    // A deep slice: candidates scanned so far of the deep range, and whether
    // any are left.
    uint64_t scanned = 0;
    uint64_t range = 0;
    bool more = false;
};

// Whether the order of `spec`'s epochs can be corrected from the opens:
// RandomSampler on the global generator (the chain may be drawn from
// between epochs), a shuffling DistributedSampler (set_epoch may be
// forgotten, or the job resumed at another epoch), or a tf.data shuffle
// that reads the files (the epoch may run another iterator of the dataset).
bool resyncable(const order::JobSpec& spec, uint32_t n);

// framework tensorflow: how many iterators past the predicted one a search
// tries, whatever resync_draws says. Keras's fit uses two per epoch; a
// script that makes more than 64 between two epochs is not followed.
inline constexpr uint64_t tf_max_iterator_offset = 64;

// Whether spec's epochs can be searched for deeply: a RandomSampler on the
// global generator of torch.
bool deep_searchable(const order::JobSpec& spec, uint32_t n);

// Produces one local rank's epochs in order, from spec.start_epoch on.
class RankPlanner {
public:
    // `spec.rank` selects the rank; spec must have passed
    // order::validate(spec, dataset.samples.size()). `dataset` and `idx`
    // must outlive the planner.
    RankPlanner(const order::JobSpec& spec, const layout::Dataset& dataset,
                const index::Index& idx);

    // The next epoch's plan, or nullptr after spec.epochs epochs.
    std::shared_ptr<const EpochPlan> next();

    // Searches for the seed that explains `req.opened` as the start of
    // req.epoch (one of the last two epochs next() gave), up to
    // `max_offset` draws of the global chain or seed + epoch values. If one
    // fits, the planner is rewound so that next() gives req.epoch again,
    // now with that seed, and the epochs after it follow on from there.
    // Otherwise nothing changes. Costs O(opens) per candidate, not O(n).
    ResyncResult resync(const ResyncRequest& req, uint64_t max_offset);

private:
    void link_repeats(EpochPlan& plan);
    order::EpochEvidence evidence(const ResyncRequest& req);
    ResyncResult resync_deep(const ResyncRequest& req, uint64_t max_offset);
    ResyncResult resync_chain(const ResyncRequest& req, const order::EpochEvidence& ev,
                              uint64_t max_offset);
    ResyncResult resync_distributed(const ResyncRequest& req, const order::EpochEvidence& ev,
                                    uint64_t max_offset);
    ResyncResult resync_tf(const ResyncRequest& req, const order::EpochEvidence& ev,
                           uint64_t max_offset);


    order::EpochOrders orders_;
    uint64_t left_;
    size_t index_size_;
    std::vector<index::NodeId> sample_node_; // sample -> opened node, resolved once
    std::vector<order::Sample> scratch_;     // the epoch's samples, reused every epoch
    // Node -> a later position of it while linking repeats; all no_position
    // between epochs, so only epochs with repeats pay for it.
    std::vector<uint32_t> later_;
    std::shared_ptr<PlanPool> pool_; // plans released by their holders, to refill
    order::JobSpec spec_;
    uint32_t n_;
    // Ranges: a position's key is its sample number (the READ path finds
    // it from the offset), so neither map is built.
    bool keys_are_samples_;
    std::vector<uint32_t> node_sample_; // node -> its sample, built by the first resync
    // The epoch the last search rewound to, until next() moves on: a deep
    // search continues from there without rewinding again.
    std::optional<uint64_t> rewound_;
    std::unique_ptr<order::ChainScan> deep_; // the deep search under way
    uint64_t deep_first_ = 0;
};

} // namespace clairfs::plan
