// SPDX-License-Identifier: MIT
// Jobs whose samples are byte ranges of large files (layout "ranges"): the
// READ path tells their trackers where the loaders are (follow_read), and
// each scheduler wake-up (round) fetches the chunks of the samples they
// read next, pushes the samples due soonest into the kernel's page cache,
// and drops the pages of samples read. The ranges' files are held by chunk
// (clairfs/prefetch/chunk_store.hpp); a file small enough to be held whole
// is fetched whole at its first READ and needs nothing more. Its counters
// are atomics; it holds no lock of its own (the trackers and RangeFollow
// have theirs).
#pragma once

#include "clairfs/index/index.hpp"
#include "clairfs/prefetch/chunk_store.hpp"
#include "clairfs/track/tracker.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <vector>

namespace clairfs::prefetch {

struct ActiveJob;
struct LoaderRun;
class JobTable;
class PushSlots;
class RangeFollow;

class RangeJobs {
public:
    using Jobs = std::vector<std::shared_ptr<ActiveJob>>;
    using Snaps = std::vector<std::vector<track::Snapshot>>;
    // Engine::set_range_pusher and set_range_dropper say what each does.
    using Pusher = std::function<int(index::NodeId id, uint64_t off, const char* bytes, size_t size)>;
    using Dropper = std::function<int(index::NodeId id, uint64_t off, uint64_t size)>;

    // `chunks` null: nothing is held by chunk, and nothing is pushed.
    // `slots` caps the FUSE threads pushing (shared with pushes at open);
    // `told` is called after each READ a tracker matched.
    RangeJobs(const index::Index& idx, JobTable& table, ChunkStore* chunks, PushSlots& slots,
              std::function<void()> told);
    void set_pusher(Pusher push) { push_ = std::move(push); }
    void set_dropper(Dropper drop) { drop_ = std::move(drop); }
    const Dropper& dropper() const { return drop_; }

    // A READ of [off, off + size) of a regular file by thread `tid`, while
    // some ranges job is registered.
    void follow_read(const Jobs& jobs, index::NodeId id, uint64_t off, uint64_t size, uint32_t tid);
    // Every scheduler wake-up while a ranges job is registered: snapshots
    // its loaders, then lend_reach(), prefetch(), push() and drop_read().
    void round(const Jobs& jobs);
    // The status keys chunks.pushed and chunks.dropped.
    void status(nlohmann::json& chunks) const;

private:
    // Of several jobs, the one loader an unclaimed process's READ fits
    // alone (or nearest, of several of one order), and its job; null when
    // none or several orders fit. `claimable`: it fits one loader alone.
    struct Fit {
        const LoaderRun* only = nullptr;
        std::shared_ptr<ActiveJob> owner;
        bool claimable = false;
    };
    Fit fit_alone(const Jobs& jobs, index::NodeId id, uint64_t off, uint64_t size, uint32_t pid,
                  uint32_t ppid);
    // Tells the READ to the loaders it may be: true if one matched.
    bool tell(const Jobs& jobs, const Fit& fit, index::NodeId id, uint64_t off, uint64_t size,
              uint32_t pid, uint32_t ppid);
    // Pushes `sample`'s pages from offset `from` on, for epoch `tag` - 1.
    void push_rest(RangeFollow& rf, uint32_t sample, uint64_t from, uint32_t tag);
    void count_push(int rc, uint64_t bytes);
    // Tells each ranges loader where the others of its order are (Tracker::lend_reach).
    void lend_reach(const Jobs& jobs, const Snaps& snaps);
    // The chunks holding the samples the ranks read next, soonest first, as
    // far as the chunks' read-ahead budget goes.
    void prefetch(const Jobs& jobs, const Snaps& snaps);
    // The samples each worker reads in its next three batches whose chunks
    // RAM holds, into the kernel's page cache (each once an epoch).
    void push(const Jobs& jobs, const Snaps& snaps);
    void drop_read(const Jobs& jobs, const Snaps& snaps);

    const index::Index& index_;
    JobTable& table_;
    ChunkStore* chunks_;
    PushSlots& slots_;
    std::function<void()> told_;
    Pusher push_;
    Dropper drop_;
    std::atomic<uint64_t> pushes_{0}, push_bytes_{0}, push_errors_{0};
    std::atomic<uint64_t> push_busy_{0}; // push_rest()s not made: half the FUSE threads were pushing
    std::atomic<uint64_t> drops_{0};     // samples dropped from the page cache once read
};

// The first chunks of the files held by chunk that the jobs open next
// (shard_heads.cpp).
void prefetch_shard_heads(ChunkStore& chunks, const std::vector<std::vector<const track::Snapshot*>>& views);

} // namespace clairfs::prefetch
