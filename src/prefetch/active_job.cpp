// SPDX-License-Identifier: MIT
#include "active_job.hpp"
#include "clairfs/order/tf_epochs.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <thread>

namespace clairfs::prefetch {
namespace {

// Signal 0 says whether a process exists without touching it: a process of
// another user (EPERM) still runs.
bool gone(uint32_t pid) {
    return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// How the tracker follows the loader: its batches and workers, how far a
// search for its seed may look, and how far off its opens may land.
track::TrackerOptions tracker_options(const plan::Job& job, uint64_t max_offset, uint32_t n) {
    const order::JobSpec& spec = job.spec;
    track::TrackerOptions topt;
    topt.layout = {spec.batch_size, spec.num_workers};
    topt.prefetch_factor = spec.prefetch_factor;
    topt.resync_max = max_offset;
    // Past what resync_draws asks, the deep search covers a model's
    // initialisation between manual_seed and the loader.
    if (max_offset > 0 && job.pre_draws_max > max_offset + 1 && plan::deep_searchable(spec, n))
        topt.deep_last = job.pre_draws_max - 1;
    if (spec.framework == order::Framework::tensorflow) {
        // tf.data's parallel map starts reads in order, several at once,
        // and they finish in any order: one read stuck behind a slow open
        // lets the others run on. Ahead of the cursor an open lands within
        // the reads in flight; behind it, a straggler was seen 34 positions
        // back on two cores (AUTOTUNE's parallelism is not bounded by the
        // cores). Behind costs nothing to widen: a position matches once.
        uint32_t cores = std::max(1U, std::thread::hardware_concurrency());
        topt.slack = std::max(spec.batch_size, 2 * cores);
        topt.behind = std::max({4 * spec.batch_size, 32 * cores, 128U});
        topt.keys_hint = "is the seed, global_seed, batch_size, shuffle_buffer, validation_split "
                         "or keras_version different from the job's";
    }
    if (!job.dataset.ranges.empty()) {
        topt.sample_nodes.assign(n, 1);
        // A sample whose pages the kernel still holds makes no READ: a
        // worker's cursor passes over a few batches of them (three pushed
        // ahead, and more a pread's readahead brought in: with four, one
        // h5py run in three lost its reader for a READ or two an epoch).
        topt.slack = 8 * spec.batch_size;
        topt.next_at_end = true;
    }
    return topt;
}

// The files whose opens are the loader's. A validation_split subset reads
// only its own files: the training and validation loaders of one Keras job
// share a root, and each open must reach the loader whose subset holds the
// file.
std::vector<uint8_t> covered_files(const plan::Job& job, const index::Index& idx, uint32_t n) {
    std::vector<uint8_t> covers(idx.size(), 0);
    auto cover = [&](const layout::Sample& s) {
        if (index::NodeId id = layout::opened_node(idx, s); id != layout::no_node) covers[id] = 1;
    };
    if (job.spec.framework == order::Framework::tensorflow) {
        order::TfEpochs tf(job.spec, n);
        for (order::Sample s : tf.input()) cover(job.dataset.samples[s]);
    } else {
        for (const layout::Sample& s : job.dataset.samples) cover(s);
    }
    return covers;
}

LoaderRun make_loader(std::shared_ptr<const plan::Job> job, const index::Index& idx) {
    LoaderRun l;
    l.job = std::move(job);
    const order::JobSpec& spec = l.job->spec;
    auto n = static_cast<uint32_t>(l.job->dataset.samples.size());
    bool searchable = plan::resyncable(spec, n);
    std::vector<track::EpochSource> sources;
    std::vector<track::ResyncFn> resyncs;
    uint64_t max_offset = l.job->resync_draws;
    // A tf.data search tries iterators, not draws: at most this many.
    if (spec.framework == order::Framework::tensorflow)
        max_offset = std::min(max_offset, plan::tf_max_iterator_offset);
    for (uint32_t rank : l.job->ranks) {
        order::JobSpec s = spec;
        s.rank = rank;
        l.planners.push_back(std::make_unique<plan::RankPlanner>(s, l.job->dataset, idx));
        plan::RankPlanner* p = l.planners.back().get();
        sources.emplace_back([p] { return p->next(); });
        if (searchable)
            resyncs.emplace_back(
                [p, max_offset](const plan::ResyncRequest& r) { return p->resync(r, max_offset); });
        else
            resyncs.emplace_back();
    }
    track::TrackerOptions topt = tracker_options(*l.job, max_offset, n);
    if (!l.job->dataset.ranges.empty()) {
        // Followed by its READs (chunks/range_follow.hpp), not by opens:
        // `covers` stays empty, so no open is routed to it.
        l.ranges = std::make_unique<RangeFollow>(l.job->dataset);
    } else {
        l.covers = covered_files(*l.job, idx, n);
        topt.sample_nodes = l.covers;
    }
    l.tracker = std::make_unique<track::Tracker>(l.job->ranks, std::move(sources),
                                                 std::move(resyncs), std::move(topt));
    return l;
}

} // namespace

ActiveJob::ActiveJob(std::string job_id,
                       const std::vector<std::shared_ptr<const plan::Job>>& loader_jobs,
                       const index::Index& idx)
    : id(std::move(job_id)) {
    for (const auto& j : loader_jobs) loaders.push_back(make_loader(j, idx));
}

bool ActiveJob::covering(index::NodeId node) const {
    return std::ranges::any_of(loaders, [node](const LoaderRun& l) { return l.covering(node); });
}

bool ActiveJob::fits_this_epoch(index::NodeId node, uint32_t pid, uint32_t ppid) const {
    return std::ranges::any_of(loaders, [&](const LoaderRun& l) {
        return l.covering(node) && l.tracker->would_match(node, pid, ppid, false);
    });
}

bool ActiveJob::reads_as(const ActiveJob& other) const {
    if (loaders.size() != other.loaders.size()) return false;
    for (size_t i = 0; i < loaders.size(); ++i)
        if (!same_order(loaders[i], other.loaders[i])) return false;
    return true;
}

bool same_order(const LoaderRun& a, const LoaderRun& b) {
    if (!(a.job->spec == b.job->spec && a.job->ranks == b.job->ranks && a.job->root == b.job->root))
        return false;
    if (!a.ranges || !b.ranges) return !a.ranges && !b.ranges;
    return a.ranges->ranges_hash() == b.ranges->ranges_hash();
}

bool ActiveJob::bind(uint32_t pid) {
    std::lock_guard lk(pids_mu_);
    if (std::ranges::find(pids_, pid) != pids_.end()) return false;
    // Workers respawned every epoch pile up: keep the list to live ones.
    if (pids_.size() >= 256) std::erase_if(pids_, gone);
    pids_.push_back(pid);
    return true;
}

std::vector<uint32_t> ActiveJob::pids() const {
    std::lock_guard lk(pids_mu_);
    return pids_;
}

bool ActiveJob::exited() const {
    std::vector<uint32_t> p = pids();
    return !p.empty() && std::ranges::all_of(p, gone);
}

std::vector<uint32_t> ActiveJob::live_pids() const {
    std::vector<uint32_t> p = pids();
    std::erase_if(p, gone);
    return p;
}

} // namespace clairfs::prefetch
