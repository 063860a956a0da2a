// SPDX-License-Identifier: MIT
// Correcting a rank's prediction from the first opens of an epoch that did
// not fit: the seed the job really used is searched among the few it can
// have used, each candidate checked against the opens alone.
#include "clairfs/plan/epoch_plan.hpp"

#include "clairfs/order/tf_epochs.hpp"
#include "clairfs/order/tf_iterator_search.hpp"

#include <algorithm>

namespace clairfs::plan {

bool resyncable(const order::JobSpec& s, uint32_t n) {
    if (s.framework == order::Framework::tensorflow) return order::tf_reads_by_iterator(s);
    if (s.sampler == order::SamplerKind::distributed) return s.shuffle;
    return s.sampler == order::SamplerKind::random &&
           s.generator == order::GeneratorKind::global &&
           order::prefix_computable(n, s.torch_version);
}

bool deep_searchable(const order::JobSpec& s, uint32_t n) {
    return s.framework == order::Framework::pytorch && s.sampler == order::SamplerKind::random &&
           s.generator == order::GeneratorKind::global && resyncable(s, n);
}

// Samples, not nodes: the search works on the sampler's indices. A file
// two samples reach (a symlink) stands for the first of them.
order::EpochEvidence RankPlanner::evidence(const ResyncRequest& req) {
    order::EpochEvidence ev;
    ev.window = req.window;
    bool openers = req.openers.size() == req.opened.size();
    auto keep = [&](uint32_t sample, size_t i) {
        ev.samples.push_back(sample);
        if (openers) ev.streams.push_back(req.openers[i]);
    };
    if (keys_are_samples_) {
        for (size_t i = 0; i < req.opened.size(); ++i)
            if (req.opened[i] < n_) keep(req.opened[i], i);
        return ev;
    }
    if (node_sample_.empty()) {
        node_sample_.assign(index_size_, UINT32_MAX);
        for (uint32_t s = static_cast<uint32_t>(sample_node_.size()); s-- > 0;)
            if (sample_node_[s] != layout::no_node) node_sample_[sample_node_[s]] = s;
    }
    for (size_t i = 0; i < req.opened.size(); ++i) {
        index::NodeId node = req.opened[i];
        if (node < node_sample_.size() && node_sample_[node] != UINT32_MAX)
            keep(node_sample_[node], i);
    }
    return ev;
}

ResyncResult RankPlanner::resync(const ResyncRequest& req, uint64_t max_offset) {
    if (req.deep_slice > 0) return resync_deep(req, max_offset);
    ResyncResult r;
    if (!resyncable(spec_, n_)) {
        r.tried = "this sampler's order cannot be searched";
        return r;
    }
    if (!orders_.rewind(req.epoch)) {
        r.tried = "epoch " + std::to_string(req.epoch) + " is no longer the one being planned";
        return r;
    }
    rewound_ = req.epoch;
    deep_.reset();
    uint64_t produced = req.epoch - spec_.start_epoch;
    order::EpochEvidence ev = evidence(req);
    if (spec_.framework == order::Framework::tensorflow)
        r = resync_tf(req, ev, max_offset);
    else if (spec_.sampler == order::SamplerKind::distributed)
        r = resync_distributed(req, ev, max_offset);
    else
        r = resync_chain(req, ev, max_offset);
    // Rewound either way: an epoch not found is planned as predicted
    // before, and the tracker falls back anyway.
    left_ = spec_.epochs - produced;
    return r;
}

ResyncResult RankPlanner::resync_chain(const ResyncRequest& req, const order::EpochEvidence& ev,
                                       uint64_t max_offset) {
    ResyncResult r;
    r.tried = std::to_string(max_offset + 1) +
              " seeds along the global generator's chain from epoch " +
              std::to_string(req.epoch) + "'s predicted one";
    std::optional<uint64_t> d = order::find_chain_offset(
        orders_.seed_chain(), max_offset, n_, spec_.replacement, spec_.torch_version, ev);
    r.deep_possible = !d;
    if (!d) return r;
    orders_.skip_words(*d);
    r.found = true;
    r.words = *d;
    return r;
}

// The deep search goes on from the words the last search of the same epoch
// tried; the planner stays rewound to that epoch's start meanwhile (no
// next() comes between: the tracker holds the rank's opens).
ResyncResult RankPlanner::resync_deep(const ResyncRequest& req, uint64_t max_offset) {
    ResyncResult r;
    if (rewound_ != req.epoch || !deep_searchable(spec_, n_) || req.deep_last <= max_offset) {
        r.tried = "no deep search: epoch " + std::to_string(req.epoch) +
                  " was not searched first, or its order is not on the global chain";
        return r;
    }
    if (!deep_) {
        order::CpuGenerator chain = orders_.seed_chain();
        chain.discard(max_offset + 1);
        deep_first_ = max_offset + 1;
        deep_ = std::make_unique<order::ChainScan>(chain, deep_first_, req.deep_last, n_,
                                                   spec_.replacement, spec_.torch_version,
                                                   evidence(req));
    }
    std::optional<uint64_t> d = deep_->step(req.deep_slice);
    r.range = req.deep_last - deep_first_ + 1;
    r.scanned = deep_->next() - deep_first_;
    r.tried = std::to_string(req.deep_last + 1) +
              " words along the global generator's chain from epoch " +
              std::to_string(req.epoch) + "'s predicted seed";
    if (!d) {
        r.more = !deep_->done();
        if (!r.more) deep_.reset();
        return r;
    }
    deep_.reset();
    orders_.skip_words(*d);
    r.found = true;
    r.words = *d;
    return r;
}

// The previous epoch's seed first (a forgotten set_epoch repeats it), then
// every seed + epoch from seed + 0 on (a job resumed at another epoch).
ResyncResult RankPlanner::resync_distributed(const ResyncRequest& req,
                                             const order::EpochEvidence& ev,
                                             uint64_t max_offset) {
    ResyncResult r;
    uint64_t predicted = orders_.seed_epoch();
    std::vector<uint64_t> candidates;
    if (predicted > 0) candidates.push_back(predicted - 1);
    for (uint64_t e = 0; e <= max_offset; ++e)
        if (e != predicted && e + 1 != predicted) candidates.push_back(e);
    r.tried = "the previous epoch's order and seed + epoch for epochs 0 to " +
              std::to_string(max_offset) + " at epoch " + std::to_string(req.epoch);
    order::JobSpec spec = spec_;
    std::optional<uint64_t> e = order::find_distributed_epoch(spec, n_, candidates, ev);
    if (!e) return r;
    r.found = true;
    r.repeat = predicted > 0 && *e + 1 == predicted;
    orders_.follow_seed_epoch(*e, r.repeat ? 0 : 1);
    return r;
}

// The predicted iterator first, then the ones after it: iterators are only
// ever created, so an epoch never runs one from before the last. The step
// learnt (fit: 2, a loop: 1) carries the prediction on from there.
ResyncResult RankPlanner::resync_tf(const ResyncRequest& req, const order::EpochEvidence& ev,
                                    uint64_t max_offset) {
    ResyncResult r;
    uint64_t first = orders_.tf_iterator();
    uint64_t span = std::min(max_offset, tf_max_iterator_offset);
    std::vector<uint64_t> candidates;
    for (uint64_t d = 0; d <= span; ++d) candidates.push_back(first + d);
    r.tried = "iterators " + std::to_string(first) + " to " + std::to_string(first + span) +
              " of the tf.data shuffle at epoch " + std::to_string(req.epoch);
    const order::TfEpochs* tf = orders_.tf();
    std::optional<uint64_t> k = tf ? order::find_tf_iterator(*tf, candidates, ev) : std::nullopt;
    if (!k) return r;
    std::optional<uint64_t> previous = orders_.last_tf_iterator();
    uint64_t step = previous && *k > *previous ? *k - *previous : 1;
    orders_.follow_tf_iterator(*k, step);
    r.found = true;
    r.tf_iterator = *k;
    return r;
}

} // namespace clairfs::plan
