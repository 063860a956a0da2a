// SPDX-License-Identifier: MIT
// Following a job whose samples are byte ranges of large files (layout
// "ranges": an LMDB's values, an HDF5 dataset's rows). Its loaders open the
// file once and read sample i at its offset, through pread or an mmap, so
// an open says nothing; the READs that reach the mount do. A READ names the
// samples its bytes overlap, and the loader's tracker is told of one of
// them as if it were an open of that sample: the tracker's positions are
// sample numbers for such a loader (plan::RankPlanner).
//
// A READ is not an open, and this is where the two differ:
// - a sample is read in pieces (an mmap faults page by page), and the
//   kernel reads ahead: only a READ whose first page holds the first byte
//   of a sample, and that does not begin where a recent READ of the file
//   ended, stands for that sample; of several such, the one the tracker
//   would match nearest its worker's cursor is told, else the first (and
//   not again to the process that told it last);
// - a file's first page holds its format's header, read at every open: a
//   READ from there stands for nothing;
// - a sample whose pages the kernel still holds makes no READ at all: the
//   tracker's slack lets a worker's cursor pass over it.
#pragma once

#include "clairfs/layout/dataset.hpp"
#include "clairfs/track/tracker.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace clairfs::prefetch {

class RangeFollow {
public:
    // `dataset` must outlive this (the loader's plan::Job holds it).
    explicit RangeFollow(const layout::Dataset& dataset);

    // Whether some sample lies in file `node`.
    bool covers(index::NodeId node) const { return by_file_.contains(node); }
    const layout::ByteRange& range(uint32_t sample) const { return dataset_.ranges[sample]; }
    // A hash of every sample's range: two loaders whose specs are equal and
    // whose hashes are equal read one order (RangeJobs::follow_read).
    uint64_t ranges_hash() const { return ranges_hash_; }

    // Whether `sample` was pushed into the kernel's page cache for epoch
    // `tag` - 1 (RangeJobs::push, RangeJobs::follow_read); marks it. Any
    // thread: a READ's handler and the scheduler both push.
    bool pushed_for(uint32_t sample, uint32_t tag) const {
        return pushed_[sample].load(std::memory_order_relaxed) == tag;
    }
    void mark_pushed(uint32_t sample, uint32_t tag) {
        pushed_[sample].store(tag, std::memory_order_relaxed);
    }

    // Scheduler thread only: per rank slot and worker stream
    // (slot * streams + worker), the epoch and the cursor up to which the
    // samples read were dropped from the kernel's page cache
    // (RangeJobs::drop_read).
    struct Behind {
        uint64_t epoch = UINT64_MAX;
        uint64_t cursor = 0;
    };
    std::vector<Behind> behind;
    // Whether the reader maps the file and faults it a page at a time
    // (LMDB's readahead=False advises MADV_RANDOM): most READs told were
    // one page long. Such a reader's pages stay mapped, and the kernel
    // evicts unmapped ones first: the pushes (RangeJobs::drop_read).
    bool faults_by_page() const {
        return page_reads_.load(std::memory_order_relaxed) >
               2 * other_reads_.load(std::memory_order_relaxed);
    }
    // Scheduler thread only: per sample, 1 + the epoch it was dropped in.
    std::vector<uint32_t> dropped;
    // Whether every sample overlapping [off, off + size) of `node` was
    // dropped in epoch `tag` - 1 (scheduler thread only).
    bool all_dropped(index::NodeId node, uint64_t off, uint64_t size, uint32_t tag) const;

    // A READ of [off, off + size) of `node` by `pid` (whose parent is
    // `ppid`): tells `tracker` of the sample it stands for, if any, and
    // puts that sample in `*told` (unchanged if none). `mode` this_epoch:
    // the READ of a process no job has claimed (track::ObserveMode).
    track::Observation observe(track::Tracker& tracker, index::NodeId node, uint64_t off,
                               uint64_t size, uint32_t pid, uint32_t ppid,
                               uint32_t* told = nullptr,
                               track::ObserveMode mode = track::ObserveMode::normal);

    // For a READ of a process no job has claimed yet, with several jobs:
    // how far from its worker's cursor `tracker` would match the sample the
    // READ stands for in the current epoch (UINT64_MAX: it fits nothing
    // there; track::ObserveMode::this_epoch), changing nothing; `where`,
    // if it fits: which sample, and where in the order.
    struct Fit {
        uint32_t sample = 0;
        track::Tracker::Place at;
        bool operator==(const Fit&) const = default;
    };
    uint64_t fit(const track::Tracker& tracker, index::NodeId node, uint64_t off, uint64_t size,
                 uint32_t pid, uint32_t ppid, Fit* where = nullptr);
    // Notes where a READ told to another loader ended (its continuation
    // stands for nothing here either).
    void note(index::NodeId node, uint64_t off, uint64_t size);

    // The samples whose ranges overlap [off, off + size) of `node`, in
    // offset order, at most `max`; how many.
    size_t overlapping(index::NodeId node, uint64_t off, uint64_t size, uint32_t* out,
                       size_t max) const;

private:
    const layout::Dataset& dataset_;
    uint64_t ranges_hash_ = 0;
    // Per sample, 1 + the epoch it was last pushed for, 0 if never.
    std::unique_ptr<std::atomic<uint32_t>[]> pushed_;
    // Per file, its samples sorted by offset.
    std::unordered_map<index::NodeId, std::vector<uint32_t>> by_file_;
    // Whether a READ begins where a recent READ of the file ended; notes
    // where this one ends.
    bool continues(index::NodeId node, uint64_t off, uint64_t size);
    bool ended_at(index::NodeId node, uint64_t off) const; // under last_mu_
    // The samples that begin in the READ's first page (at most
    // max_candidates, 64); how many.
    size_t starts(index::NodeId node, uint64_t off, uint64_t size, uint32_t* out) const;

    // Leaf lock over what follows: the sample each process last told of (a
    // few entries per loader process, cleared past a bound: pids are
    // reused), and where the last READs ended (a few per reader in flight).
    std::mutex last_mu_;
    std::unordered_map<uint32_t, uint32_t> last_;
    std::array<std::pair<index::NodeId, uint64_t>, 64> ends_{};
    // READs told, one page long and longer.
    std::atomic<uint64_t> page_reads_{0}, other_reads_{0};
    size_t next_end_ = 0;
};

} // namespace clairfs::prefetch
