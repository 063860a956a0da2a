// SPDX-License-Identifier: MIT
// Jobs whose samples are byte ranges of large files (layout "ranges"): the
// READ path tells their trackers where the loaders are, and the scheduler
// fetches the chunks of the samples they read next and pushes the samples
// due soonest into the kernel's page cache. The ranges' files are held by
// chunk (prefetch/chunk_store.hpp); a file small enough to be held whole is
// fetched whole at its first READ and needs nothing more.
#include "active_job.hpp"
#include "clairfs/sys/contained.hpp"

#include <cerrno>

namespace clairfs::prefetch {
namespace {

// How far ahead of each worker's cursor a round looks, in batches: past
// that, half the chunks' RAM is what limits the lead anyway.
constexpr uint64_t lead_batches = 8;
// How far ahead the samples are pushed into the kernel's page cache: a
// reader takes no READ for them, and its next READ (at the edge) must still
// fall within the tracker's slack of four batches.
constexpr uint64_t push_batches = 3;
constexpr uint64_t page = 4096;

} // namespace

void Engine::count_range_loaders() {
    uint32_t n = 0;
    for (const auto& j : *jobs_)
        for (const LoaderRun& l : j->loaders) n += l.ranges != nullptr;
    range_loaders_.store(n, std::memory_order_relaxed);
}

void Engine::follow_read(index::NodeId id, uint64_t off, uint64_t size, uint32_t tid) {
    auto jobs = this->jobs();
    // As for opens (Engine::opened): following the job is an optimisation,
    // and a failure inside it ends the prediction, not the READ.
    auto why = sys::contained("following a read", [&] {
        for (const auto& j : *jobs) {
            for (LoaderRun& l : j->loaders) {
                if (!l.ranges || !l.ranges->covers(id)) continue;
                if (l.tracker->mode() != track::Mode::clairvoyant) continue;
                auto [pid, ppid] = process_of(tid);
                track::Observation o = l.ranges->observe(*l.tracker, id, off, size, pid, ppid);
                if (!o.matched) continue;
                bind(j, pid, ppid, l.job->spec.num_workers > 0);
                matched_opens_.fetch_add(1, std::memory_order_relaxed);
                // Once the samples due are pushed, a READ told is the
                // reader at the edge of what was pushed: push on at once,
                // even in the scheduler's rest between rounds.
                {
                    std::lock_guard lk(wake_mu_);
                    wake_ = true;
                    ranges_waiting_ = true;
                }
                wake_cv_.notify_one();
                return;
            }
        }
    });
    if (!why.empty())
        for (const auto& j : *jobs)
            for (auto& l : j->loaders)
                if (l.ranges) l.tracker->abandon("following the job failed inside clairfs (" + why + ")");
}

void Engine::ranges_round(const Jobs& jobs) {
    std::vector<std::vector<track::Snapshot>> snaps(jobs.size());
    auto now = track::Clock::now();
    for (size_t i = 0; i < jobs.size(); ++i)
        for (const LoaderRun& l : jobs[i]->loaders)
            snaps[i].push_back(l.ranges ? l.tracker->snapshot(now) : track::Snapshot{});
    prefetch_ranges(jobs, snaps);
    if (push_range_) push_ranges(jobs, snaps);
}

// Each sample's pages whole (a page shared with a neighbour carries the
// neighbour's bytes too, which are the file's all the same), copied out of
// the chunks RAM holds; a sample whose chunks are not in yet waits for a
// later round, or is read with READs.
void Engine::push_ranges(const Jobs& jobs,
                         const std::vector<std::vector<track::Snapshot>>& snaps) {
    if (!chunks_) return;
    for (size_t i = 0; i < jobs.size(); ++i) {
        for (size_t k = 0; k < jobs[i]->loaders.size(); ++k) {
            LoaderRun& l = jobs[i]->loaders[k];
            const track::Snapshot& snap = snaps[i][k];
            if (!l.ranges || snap.mode != track::Mode::clairvoyant) continue;
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
                        if (rf.pushed[sample] == tag) continue;
                        const layout::ByteRange& br = rf.range(sample);
                        if (!chunks_->covers(br.node)) continue;
                        uint64_t size = index_.node(br.node).size;
                        uint64_t from = br.offset / page * page;
                        uint64_t to = std::min(size, (br.offset + br.length + page - 1) / page * page);
                        range_buf_.resize(to - from);
                        if (!chunks_->copy_held(br.node, from, to - from, range_buf_.data())) continue;
                        int rc = push_range_(br.node, from, range_buf_.data(), to - from);
                        // ENOENT: the kernel has no inode for the file yet
                        // (the job has not looked it up): a later round.
                        if (rc == -ENOENT) continue;
                        rf.pushed[sample] = tag;
                        if (rc == 0) {
                            range_pushes_.fetch_add(1, std::memory_order_relaxed);
                            range_push_bytes_.fetch_add(to - from, std::memory_order_relaxed);
                        } else {
                            range_push_errors_.fetch_add(1, std::memory_order_relaxed);
                        }
                    }
                }
            }
        }
    }
}

// Soonest first: the next sample of every worker of every rank, then the
// one after, and so on, into the next epoch once a rank's current one is
// spoken for; until the chunks walked, held or not, fill half the chunks'
// RAM (so what is fetched is not evicted before it is read), or the lead
// is covered. Each round walks from the cursors again: the window moves
// with the readers, and a chunk whose sample the page cache served is
// simply left behind for LRU to evict.
void Engine::prefetch_ranges(const Jobs& jobs,
                             const std::vector<std::vector<track::Snapshot>>& snaps) {
    if (!chunks_ || range_loaders_.load(std::memory_order_relaxed) == 0) return;
    const ChunkMap& map = chunks_->map();
    const uint64_t budget = chunks_->ram_capacity() / 2;
    uint64_t walked = 0;
    ChunkId last_walked = no_chunk;
    // Queues the chunks of one sample; false once the budget is spent.
    auto want = [&](const RangeFollow& rf, index::NodeId sample) {
        if (sample == layout::no_node) return true;
        const layout::ByteRange& r = rf.range(sample);
        if (!map.covers(r.node)) return true; // held whole: its first READ fetches it
        ChunkId last = map.chunk_at(r.node, r.offset + r.length - 1);
        for (ChunkId c = map.chunk_at(r.node, r.offset); c <= last; ++c) {
            if (c == last_walked) continue; // neighbours share a chunk
            last_walked = c;
            walked += map.range(c).length;
            if (walked > budget) return false;
            chunks_->prefetch(c);
        }
        return true;
    };
    for (size_t i = 0; i < jobs.size(); ++i) {
        for (size_t k = 0; k < jobs[i]->loaders.size(); ++k) {
            const LoaderRun& l = jobs[i]->loaders[k];
            const track::Snapshot& snap = snaps[i][k];
            if (!l.ranges || snap.mode != track::Mode::clairvoyant) continue;
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
                        if (!want(*l.ranges, cur.nodes[p])) return;
                    }
                }
                // The epoch ends within the lead: the next one begins it.
                if (left < lead * wl.streams() && r.next && !r.finished)
                    for (uint64_t p = 0; p < r.next->size() && p < lead; ++p)
                        if (!want(*l.ranges, r.next->nodes[p])) return;
            }
        }
    }
}

} // namespace clairfs::prefetch
