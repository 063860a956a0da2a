// SPDX-License-Identifier: MIT
#include "clairfs/order/epoch_orders.hpp"

#include "clairfs/order/samplers.hpp"

#include <numeric>

namespace clairfs::order {

EpochOrders::EpochOrders(const JobSpec& spec, uint32_t n)
    : spec_(spec), n_(n), epoch_(spec.start_epoch), global_(spec.seed), loader_(spec.seed) {
    global_.discard(spec.pre_draws);
}

void EpochOrders::next(std::vector<Sample>& out) {
    switch (spec_.sampler) {
    case SamplerKind::distributed:
        distributed_sampler_epoch(n_, spec_, epoch_, scratch_, out);
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
