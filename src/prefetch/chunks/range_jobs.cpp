// SPDX-License-Identifier: MIT
// The ranges jobs' READs followed, and their samples fetched, pushed and
// dropped (range_jobs.hpp).
#include "range_jobs.hpp"
#include "clairfs/sys/contained.hpp"
#include "prefetch/active_job.hpp"
#include "prefetch/job_table.hpp"
#include "prefetch/push_slots.hpp"
#include "range_follow.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <memory>

namespace clairfs::prefetch {
namespace {

// How far ahead of each worker's cursor a round looks, in batches: past
// that, half the chunks' RAM is what limits the lead anyway.
constexpr uint64_t lead_batches = 8;
// How far ahead the samples are pushed into the kernel's page cache: a
// reader takes no READ for them, and its next READ (at the edge) must still
// fall within the tracker's slack of eight batches (prefetch/active_job.cpp),
// with room for samples the kernel's readahead brought in besides.
constexpr uint64_t push_batches = 3;
constexpr uint64_t kernel_page = 4096;
// How far behind each worker's cursor its samples' pages are dropped from
// the page cache, in batches: past the tracker's slack of eight, so that a
// sample still being read is not taken from under its reader.
constexpr uint64_t drop_batches = 10;

// A sample's pages on their way to the kernel: grown, never shrunk, and
// never zeroed (std::vector::resize would zero each growth, a tenth of the
// daemon's CPU in a later epoch).
class PushBuffer {
public:
    char* get(size_t n) {
        if (n > cap_) {
            cap_ = std::max(n, cap_ * 2);
            bytes_ = std::make_unique_for_overwrite<char[]>(cap_);
        }
        return bytes_.get();
    }

private:
    std::unique_ptr<char[]> bytes_;
    size_t cap_ = 0;
};
// Per thread: the scheduler's, and each FUSE thread's (RangeJobs::push_rest).
thread_local PushBuffer push_buffer;

// Calls fn(loader, its snapshot) for every loader over byte ranges whose
// prediction holds, until fn returns false.
template <class Fn>
void each_ranges_loader(const RangeJobs::Jobs& jobs,
                        const std::vector<std::vector<track::Snapshot>>& snaps,
                        Fn&& fn) {
    for (size_t i = 0; i < jobs.size(); ++i)
        for (size_t k = 0; k < jobs[i]->loaders.size(); ++k) {
            LoaderRun& l = jobs[i]->loaders[k];
            if (l.ranges && snaps[i][k].mode == track::Mode::clairvoyant &&
                !snaps[i][k].deep_searching && !fn(l, snaps[i][k]))
                return;
        }
}

} // namespace

RangeJobs::RangeJobs(const index::Index& idx, JobTable& table, ChunkStore* chunks, PushSlots& slots,
                     std::function<void()> told)
    : index_(idx), table_(table), chunks_(chunks), slots_(slots), told_(std::move(told)) {}

void RangeJobs::status(nlohmann::json& chunks) const {
    // A ranges job's samples pushed into the kernel's page cache.
    chunks["pushed"] = {{"samples", pushes_.load(std::memory_order_relaxed)},
                        {"bytes", push_bytes_.load(std::memory_order_relaxed)},
                        {"errors", push_errors_.load(std::memory_order_relaxed)},
                        {"busy", push_busy_.load(std::memory_order_relaxed)}};
    // ... and dropped from it once read (drop_read).
    chunks["dropped"] = drops_.load(std::memory_order_relaxed);
}

namespace {

bool following(const LoaderRun& l, index::NodeId id) {
    return l.ranges && l.ranges->covers(id) && l.tracker->mode() == track::Mode::clairvoyant;
}

} // namespace

void RangeJobs::follow_read(const Jobs& jobs, index::NodeId id, uint64_t off, uint64_t size,
                            uint32_t tid) {
    // As for opens (Engine::opened): following the job is an optimisation,
    // and a failure inside it ends the prediction, not the READ.
    auto why = sys::contained("following a read", [&] {
        auto [pid, ppid] = table_.process_of(tid);
        // Several jobs (a sweep): a process a job claimed tells that job
        // alone, as its opens would (JobTable::route_open); an unclaimed
        // one's READ goes by fit_alone().
        Fit fit;
        fit.owner = jobs.size() > 1 ? table_.bound_job(pid, ppid) : nullptr;
        if (jobs.size() > 1 && !fit.owner) {
            fit = fit_alone(jobs, id, off, size, pid, ppid);
            if (!fit.only) return;
        }
        // Once the samples due are pushed, a READ told is the reader at the
        // edge of what was pushed: push on at once, even in the scheduler's
        // rest between rounds.
        if (tell(jobs, fit, id, off, size, pid, ppid)) told_();
    });
    if (!why.empty())
        for (const auto& j : jobs)
            for (auto& l : j->loaders)
                if (l.ranges) l.tracker->abandon("following the job failed inside clairfs (" + why + ")");
}

// An unclaimed process's READ is told only to a loader whose current epoch
// it fits (track::ObserveMode::this_epoch), and only if it fits one job's
// order alone, or several of one order (one seed's sweep: equal specs and
// manifests, and the sample at the same position of the same epoch; the
// nearest takes it). Both jobs read every sample, so a READ that fits jobs
// whose orders differ says nothing of whose it is: told to one of them, it
// moved that job's cursors with another job's reader, and on a loaded host
// took a position from the job whose it was, or began a job's next epoch,
// and that job fell back. Fitting one job alone three times in a row claims
// the process (JobTable::claim), and its READs are that job's from then on.
RangeJobs::Fit RangeJobs::fit_alone(const Jobs& jobs, index::NodeId id, uint64_t off, uint64_t size,
                                    uint32_t pid, uint32_t ppid) {
    Fit fit;
    size_t fits = 0;
    uint64_t nearest = UINT64_MAX;
    RangeFollow::Fit first;
    const LoaderRun* first_loader = nullptr;
    bool one_order = true;
    for (const auto& j : jobs)
        for (LoaderRun& l : j->loaders) {
            if (!following(l, id)) continue;
            RangeFollow::Fit f;
            uint64_t d = l.ranges->fit(*l.tracker, id, off, size, pid, ppid, &f);
            if (d == UINT64_MAX) continue;
            if (fits++ == 0) {
                first = f;
                first_loader = &l;
            } else {
                one_order = one_order && f == first && same_order(l, *first_loader);
            }
            if (d < nearest) {
                nearest = d;
                fit.only = &l;
                fit.owner = j;
            }
        }
    if (fits == 0 || !one_order) fit.only = nullptr;
    for (const auto& j : jobs)
        for (LoaderRun& l : j->loaders)
            if (&l != fit.only && following(l, id)) l.ranges->note(id, off, size);
    fit.claimable = fits == 1;
    return fit;
}

bool RangeJobs::tell(const Jobs& jobs, const Fit& fit, index::NodeId id, uint64_t off,
                     uint64_t size, uint32_t pid, uint32_t ppid) {
    for (const auto& j : jobs) {
        if (fit.owner && j != fit.owner) continue;
        for (LoaderRun& l : j->loaders) {
            if (!following(l, id) || (fit.only && &l != fit.only)) continue;
            uint32_t sample = 0;
            track::Observation o = l.ranges->observe(
                *l.tracker, id, off, size, pid, ppid, &sample,
                fit.only ? track::ObserveMode::this_epoch : track::ObserveMode::normal);
            if (!o.matched) continue;
            push_rest(*l.ranges, sample, off + size, static_cast<uint32_t>(o.epoch + 1));
            if (!fit.only || (fit.claimable && table_.claim(*j, pid)))
                table_.bind(j, pid, ppid, l.job->spec.num_workers > 0);
            return true;
        }
    }
    return false;
}

// The reader faults the sample that was not pushed in time page by page
// (an mmap with MADV_RANDOM: LMDB), one READ each; its first READ pushes
// the rest, so it takes one: the one round trip the rest would have
// waited for its chunks anyway. Before the reply: the page being read is the
// only one the kernel holds locked for this reader, and the pushed pages
// come after it. A page another READ in flight has locked (a second reader
// of the sample, a pread's readahead) holds the push until a FUSE thread
// answers that READ: as for pushes at open (PageCache::push_on_open), pushes
// never take more than half the threads, and one that would is not made.
void RangeJobs::push_rest(RangeFollow& rf, uint32_t sample, uint64_t from, uint32_t tag) {
    if (!push_ || !chunks_ || rf.pushed_for(sample, tag)) return;
    PushSlots& slots = slots_;
    if (!slots.take()) {
        push_busy_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    struct Release {
        PushSlots& slots;
        ~Release() { slots.give(); }
    } release{slots};
    const layout::ByteRange& br = rf.range(sample);
    if (!chunks_->covers(br.node)) return;
    from = (from + kernel_page - 1) / kernel_page * kernel_page;
    uint64_t to = std::min(index_.node(br.node).size,
                           (br.offset + br.length + kernel_page - 1) / kernel_page * kernel_page);
    if (from < to) {
        char* buf = push_buffer.get(to - from);
        // Chunks not in RAM are fetched here, as the READs of the sample's
        // next pages would fetch them; a failed fetch is theirs to report.
        if (chunks_->copy(br.node, from, to - from, buf) < 0) return;
        int rc = push_(br.node, from, buf, to - from);
        if (rc == -ENOENT) return;
        // EAGAIN: not on this thread (an io_uring ring's); a later round pushes.
        if (rc == -EAGAIN) {
            push_busy_.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        count_push(rc, to - from);
    }
    rf.mark_pushed(sample, tag);
}

void RangeJobs::count_push(int rc, uint64_t bytes) {
    if (rc == 0) {
        pushes_.fetch_add(1, std::memory_order_relaxed);
        push_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    } else {
        push_errors_.fetch_add(1, std::memory_order_relaxed);
    }
}

void RangeJobs::round(const Jobs& jobs) {
    std::vector<std::vector<track::Snapshot>> snaps(jobs.size());
    auto now = track::Clock::now();
    for (size_t i = 0; i < jobs.size(); ++i)
        for (const LoaderRun& l : jobs[i]->loaders)
            snaps[i].push_back(l.ranges ? l.tracker->snapshot(now) : track::Snapshot{});
    lend_reach(jobs, snaps);
    prefetch(jobs, snaps);
    if (push_) push(jobs, snaps);
    if (drop_) drop_read(jobs, snaps);
}

// Two jobs of one order (one seed's sweep over one file) share the page
// cache: the one behind reads what the one ahead read and pushed, and
// those pages stay there until dropped behind it (drop_batches), so its
// reader passes over up to 13 batches of them with no READ: more than its
// tracker's slack. Each round lends every loader the cursors of the others
// of its order in the same epoch (Tracker::lend_reach), where they are
// ahead by no more than that: further ahead, what they left is dropped
// before this job's reader gets there, and a wider window would only let
// a stray READ carry its cursor ahead of its reader. Only between jobs
// whose loader processes their registrations named (clairfs.register()):
// each READ is then its own job's. Lent to jobs routed by fit, the wider
// window let a READ of the job behind fit both, it went to the nearest, the
// job ahead, and one of a same-seed pair fell back in 10 of 11 loaded runs
// (docs/records.md, "Two jobs over one ranges file").
void RangeJobs::lend_reach(const Jobs& jobs, const Snaps& snaps) {
    if (jobs.size() < 2) return;
    for (size_t i = 0; i < jobs.size(); ++i)
        for (size_t k = 0; k < jobs[i]->loaders.size(); ++k) {
            const LoaderRun& from = jobs[i]->loaders[k];
            const track::Snapshot& fs = snaps[i][k];
            if (!jobs[i]->loader_named.load(std::memory_order_relaxed) || !from.ranges ||
                fs.mode != track::Mode::clairvoyant)
                continue;
            for (size_t j = 0; j < jobs.size(); ++j)
                for (size_t m = 0; m < jobs[j]->loaders.size(); ++m) {
                    LoaderRun& to = jobs[j]->loaders[m];
                    if (j == i || !jobs[j]->loader_named.load(std::memory_order_relaxed) ||
                        !to.ranges || snaps[j][m].mode != track::Mode::clairvoyant ||
                        !same_order(from, to))
                        continue;
                    const uint64_t band =
                        (drop_batches + push_batches) * to.job->spec.batch_size;
                    const auto& ts = snaps[j][m].ranks;
                    for (size_t r = 0; r < fs.ranks.size() && r < ts.size(); ++r) {
                        const auto& cur = fs.ranks[r].current;
                        if (!cur || !ts[r].current || ts[r].current->epoch != cur->epoch) continue;
                        std::vector<uint64_t> lent = ts[r].cursors;
                        const auto& ahead = fs.ranks[r].cursors;
                        for (size_t w = 0; w < lent.size() && w < ahead.size(); ++w)
                            if (ahead[w] > lent[w] && ahead[w] - lent[w] <= band) lent[w] = ahead[w];
                        to.tracker->lend_reach(r, cur->epoch, lent);
                    }
                }
        }
}

// A dataset of byte ranges larger than the memory the job may use is read
// through a page cache that is always full, and the kernel evicts what no
// process maps first: the samples pushed ahead, not yet read, and not the
// ones already read, which the reader's mmap still maps (a reader that
// faults page by page: RangeFollow::faults_by_page). Dropping each
// sample's pages once its reader is past it keeps room for the pushes; in
// the next epoch the sample is pushed again (or read) as it would be
// after the kernel's own eviction. Its first page too: were it kept, the
// next epoch's read of the sample would begin with a READ of its second
// page, which stands for no sample (RangeFollow::observe), and the tracker
// would lose the reader. But a page it shares with a neighbour (rows of an
// HDF5 dataset, a packed file) only once the neighbour was read too: a
// reader of the neighbour would find the page gone, and its READ of that
// page would stand for this sample, read again.
void RangeJobs::drop_read(const Jobs& jobs, const Snaps& snaps) {
    each_ranges_loader(jobs, snaps, [&](LoaderRun& l, const track::Snapshot& snap) {
        RangeFollow& rf = *l.ranges;
        // A reader through pread leaves unmapped pages, which the kernel's
        // own LRU evicts in the order they were read.
        if (!rf.faults_by_page()) return true;
        const uint64_t keep = drop_batches * l.job->spec.batch_size;
        for (size_t ri = 0; ri < snap.ranks.size(); ++ri) {
            const track::RankProgress& r = snap.ranks[ri];
            if (!r.current) continue;
            const plan::EpochPlan& cur = *r.current;
            const plan::WorkerLayout& wl = r.layout;
            const auto tag = static_cast<uint32_t>(cur.epoch + 1);
            const auto next_tag = static_cast<uint32_t>(cur.epoch + 2);
            if (rf.behind.size() < (ri + 1) * wl.streams())
                rf.behind.resize((ri + 1) * wl.streams());
            for (uint32_t w = 0; w < wl.streams(); ++w) {
                RangeFollow::Behind& b = rf.behind[ri * wl.streams() + w];
                if (b.epoch != cur.epoch) b = {cur.epoch, 0};
                const uint64_t to = r.cursors[w] > keep ? r.cursors[w] - keep : 0;
                for (; b.cursor < to; ++b.cursor) {
                    uint64_t p = wl.position(w, b.cursor);
                    if (p >= cur.size()) break;
                    index::NodeId sample = cur.nodes[p];
                    if (sample == layout::no_node || rf.pushed_for(sample, next_tag)) continue;
                    const layout::ByteRange& br = rf.range(sample);
                    rf.dropped[sample] = tag;
                    uint64_t from = br.offset / page * page;
                    uint64_t end = (br.offset + br.length + page - 1) / page * page;
                    if (!rf.all_dropped(br.node, from, page, tag)) from += page;
                    if (end > from && !rf.all_dropped(br.node, end - page, page, tag)) end -= page;
                    if (from < end && drop_(br.node, from, end - from) == 0)
                        drops_.fetch_add(1, std::memory_order_relaxed);
                }
            }
        }
        return true;
    });
}

// Each sample's pages whole (a page shared with a neighbour carries the
// neighbour's bytes too, which are the file's all the same), copied out of
// the chunks RAM holds; a sample whose chunks are not in yet waits for a
// later round, or is read with READs.
void RangeJobs::push(const Jobs& jobs, const Snaps& snaps) {
    if (!chunks_) return;
    each_ranges_loader(jobs, snaps, [&](LoaderRun& l, const track::Snapshot& snap) {
        RangeFollow& rf = *l.ranges;
        const uint64_t ahead = push_batches * l.job->spec.batch_size;
        for (const track::RankProgress& r : snap.ranks) {
            if (!r.current) continue;
            const plan::EpochPlan& cur = *r.current;
            const auto tag = static_cast<uint32_t>(cur.epoch + 1);
            const plan::WorkerLayout& wl = r.layout;
            for (uint64_t s = 0; s < ahead; ++s) {
                for (uint32_t w = 0; w < wl.streams(); ++w) {
                    uint64_t p = wl.position(w, r.cursors[w] + s);
                    if (p >= cur.size() || cur.nodes[p] == layout::no_node) continue;
                    index::NodeId sample = cur.nodes[p];
                    if (rf.pushed_for(sample, tag)) continue;
                    const layout::ByteRange& br = rf.range(sample);
                    if (!chunks_->covers(br.node)) continue;
                    uint64_t size = index_.node(br.node).size;
                    uint64_t from = br.offset / page * page;
                    uint64_t to = std::min(size, (br.offset + br.length + page - 1) / page * page);
                    char* buf = push_buffer.get(to - from);
                    if (!chunks_->copy_held(br.node, from, to - from, buf)) continue;
                    int rc = push_(br.node, from, buf, to - from);
                    // ENOENT: the kernel has no inode for the file yet (the
                    // job has not looked it up): a later round.
                    if (rc == -ENOENT) continue;
                    rf.mark_pushed(sample, tag);
                    count_push(rc, to - from);
                }
            }
        }
        return true;
    });
}

// Soonest first: the next sample of every worker of every rank, then the
// one after, and so on, into the next epoch once a rank's current one is
// spoken for; until the chunks walked, held or not, fill half the chunks'
// RAM (so what is fetched is not evicted before it is read), or the lead
// is covered. Each round walks from the cursors again: the window moves
// with the readers, and a chunk whose sample the page cache served is
// simply left behind for LRU to evict.
namespace {

// The chunks of the samples wanted, each walked once, queued for prefetch
// until the chunks walked (held or not) fill the budget.
class ChunkWalk {
public:
    ChunkWalk(ChunkStore& chunks, uint64_t budget) : chunks_(chunks), budget_(budget) {}
    // Queues the chunks of one sample of `epoch`; false once the budget is spent.
    bool want(const RangeFollow& rf, index::NodeId sample, uint64_t epoch) {
        if (sample == layout::no_node) return true;
        // In the page cache already: its chunks are no longer needed.
        if (rf.pushed_for(sample, static_cast<uint32_t>(epoch + 1))) return true;
        const layout::ByteRange& r = rf.range(sample);
        const ChunkMap& map = chunks_.map();
        if (!map.covers(r.node)) return true; // held whole: its first READ fetches it
        ChunkId last = map.chunk_at(r.node, r.offset + r.length - 1);
        for (ChunkId c = map.chunk_at(r.node, r.offset); c <= last; ++c) {
            if (c == last_walked_) continue; // neighbours share a chunk
            last_walked_ = c;
            walked_ += map.range(c).length;
            if (walked_ > budget_) return false;
            chunks_.prefetch(c);
        }
        return true;
    }

private:
    ChunkStore& chunks_;
    const uint64_t budget_;
    uint64_t walked_ = 0;
    ChunkId last_walked_ = no_chunk;
};

} // namespace

void RangeJobs::prefetch(const Jobs& jobs, const Snaps& snaps) {
    if (!chunks_ || table_.range_loaders() == 0) return;
    ChunkWalk walk(*chunks_, chunks_->ram_capacity() / 2);
    // Stops at the first sample the budget has no room for: what comes
    // after is due later.
    each_ranges_loader(jobs, snaps, [&](LoaderRun& l, const track::Snapshot& snap) {
        const uint64_t lead = lead_batches * l.job->spec.batch_size;
        for (const track::RankProgress& r : snap.ranks) {
            if (!r.current) continue;
            const plan::WorkerLayout& wl = r.layout;
            const plan::EpochPlan& cur = *r.current;
            uint64_t left = 0; // positions of `cur` within the lead, not yet wanted
            for (uint64_t s = 0; s < lead; ++s) {
                for (uint32_t w = 0; w < wl.streams(); ++w) {
                    uint64_t p = wl.position(w, r.cursors[w] + s);
                    if (p >= cur.size()) continue;
                    ++left;
                    if (!walk.want(*l.ranges, cur.nodes[p], cur.epoch)) return false;
                }
            }
            // The epoch ends within the lead: the next one begins it.
            if (left < lead * wl.streams() && r.next && !r.finished)
                for (uint64_t p = 0; p < r.next->size() && p < lead; ++p)
                    if (!walk.want(*l.ranges, r.next->nodes[p], r.next->epoch)) return false;
        }
        return true;
    });
}

} // namespace clairfs::prefetch
