// SPDX-License-Identifier: MIT
// Jobs whose samples are byte ranges of large files (layout "ranges"): the
// READ path tells their trackers where the loaders are, and the scheduler
// fetches the chunks of the samples they read next. The ranges' files are
// held by chunk (prefetch/chunk_store.hpp); a file small enough to be held
// whole is fetched whole at its first READ and needs nothing more.
#include "active_job.hpp"
#include "clairfs/sys/contained.hpp"

namespace clairfs::prefetch {
namespace {

// How far ahead of each worker's cursor a round looks, in batches: past
// that, the chunks' read-ahead budget is what limits the lead anyway.
constexpr uint64_t lead_batches = 8;

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
                uint64_t n = matched_opens_.fetch_add(1, std::memory_order_relaxed) + 1;
                if (o.new_epoch || n >= round_at_.load(std::memory_order_relaxed))
                    wake_scheduler();
                return;
            }
        }
    });
    if (!why.empty())
        for (const auto& j : *jobs)
            for (auto& l : j->loaders)
                if (l.ranges) l.tracker->abandon("following the job failed inside clairfs (" + why + ")");
}

// Soonest first: the next sample of every worker of every rank, then the
// one after, and so on, into the next epoch once a rank's current one is
// spoken for; until the budget is spent or the lead is covered.
void Engine::prefetch_ranges(const Jobs& jobs,
                             const std::vector<std::vector<track::Snapshot>>& snaps) {
    if (!chunks_ || range_loaders_.load(std::memory_order_relaxed) == 0) return;
    const ChunkMap& map = chunks_->map();
    // Queues the chunks of one sample; false once the budget is spent.
    auto want = [&](const RangeFollow& rf, index::NodeId sample) {
        if (sample == layout::no_node) return true;
        const layout::ByteRange& r = rf.range(sample);
        if (!map.covers(r.node)) return true; // held whole: its first READ fetches it
        ChunkId last = map.chunk_at(r.node, r.offset + r.length - 1);
        for (ChunkId c = map.chunk_at(r.node, r.offset); c <= last; ++c)
            if (!chunks_->prefetch(c)) return false;
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
