// SPDX-License-Identifier: MIT
#include "clairfs/order/epoch_orders.hpp"

#include "clairfs/order/samplers.hpp"

#include <numeric>

namespace clairfs::order {

EpochOrders::EpochOrders(const JobSpec& spec, uint32_t n)
    : spec_(spec), n_(n), epoch_(spec.start_epoch), global_(spec.seed), loader_(spec.seed),
      dist_epoch_(spec.start_epoch) {
    global_.discard(spec.pre_draws);
    if (spec.framework == Framework::tensorflow) tf_.emplace(spec, n);
}

EpochOrders::State EpochOrders::state() const {
    return {epoch_,      first_iterator_, global_,
            loader_,     dist_epoch_,     dist_step_,
            pending_skip_, tf_ ? tf_->cursor() : TfEpochs::Cursor{}};
}

void EpochOrders::restore(const State& s) {
    epoch_ = s.epoch;
    first_iterator_ = s.first_iterator;
    global_ = s.global;
    loader_ = s.loader;
    dist_epoch_ = s.dist_epoch;
    dist_step_ = s.dist_step;
    pending_skip_ = s.pending_skip;
    if (tf_) tf_->set_cursor(s.tf);
}

void EpochOrders::next(std::vector<Sample>& out) {
    saved_[0] = std::move(saved_[1]);
    saved_[1] = state();
    if (tf_) {
        tf_->next(out);
        ++epoch_;
        return;
    }
    last_skipped_ = pending_skip_;
    global_.discard(pending_skip_ + (first_iterator_ ? 0 : spec_.between_draws));
    pending_skip_ = 0;
    switch (spec_.sampler) {
    case SamplerKind::distributed:
        distributed_sampler_epoch(n_, spec_, dist_epoch_, scratch_, out);
        dist_epoch_ += dist_step_;
        break;
    case SamplerKind::sequential:
        out.resize(n_);
        std::iota(out.begin(), out.end(), Sample{0});
        break;
    case SamplerKind::random:
        random_epoch(out);
        break;
    }
    apply_batching(out, spec_.batch_size, spec_.drop_last);
    first_iterator_ = false;
    ++epoch_;
}

bool EpochOrders::rewind(uint64_t epoch) {
    for (auto& s : saved_) {
        if (!s || s->epoch != epoch) continue;
        restore(*s);
        saved_ = {};
        return true;
    }
    return false;
}

void EpochOrders::skip_words(uint64_t words) {
    pending_skip_ += words;
}

CpuGenerator EpochOrders::seed_chain() const {
    CpuGenerator g = global_;
    g.discard(pending_skip_ + (first_iterator_ ? 0 : spec_.between_draws));
    // base_seed (two words) unless persistent workers keep the iterator,
    // then the high word of the sampler's int64 seed, which torch drops.
    if (first_iterator_ || !spec_.persistent_workers) g.discard(2);
    g.discard(1);
    return g;
}

void EpochOrders::follow_seed_epoch(uint64_t seed_epoch, uint64_t step) {
    dist_epoch_ = seed_epoch;
    dist_step_ = step;
}

uint64_t EpochOrders::tf_iterator() const {
    return tf_ ? tf_->cursor().k : 0;
}

void EpochOrders::follow_tf_iterator(uint64_t k, uint64_t step) {
    if (!tf_) return;
    TfEpochs::Cursor c = tf_->cursor();
    c.k = k;
    c.step = step;
    tf_->set_cursor(c);
}

std::optional<uint64_t> EpochOrders::last_tf_iterator() const {
    return tf_ ? tf_->cursor().previous : std::nullopt;
}

void EpochOrders::random_epoch(std::vector<Sample>& out) {
    bool explicit_gen = spec_.generator == GeneratorKind::explicit_;
    CpuGenerator& shared = explicit_gen ? loader_ : global_;
    // _BaseDataLoaderIter.__init__ draws base_seed before the sampler runs;
    // persistent workers keep the first iterator, so later epochs do not.
    if (first_iterator_ || !spec_.persistent_workers) shared.discard(2);
    uint64_t count = spec_.num_samples.value_or(n_);
    if (explicit_gen) {
        random_sampler_epoch(n_, count, spec_.replacement, loader_, spec_.torch_version, out);
        return;
    }
    // Without a generator, RandomSampler seeds a fresh one from two global
    // draws; only the second (the seed's low 32 bits) shapes the order.
    CpuGenerator own(static_cast<uint64_t>(global_.random_int64()));
    random_sampler_epoch(n_, count, spec_.replacement, own, spec_.torch_version, out);
}

} // namespace clairfs::order
