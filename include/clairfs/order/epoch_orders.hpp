// SPDX-License-Identifier: MIT
// What one rank's unmodified DataLoader yields, epoch after epoch, including
// every draw the DataLoader makes from the generators the samplers share:
// per new iterator a base_seed (two draws) before the sampler's own draws,
// only once with persistent workers.
//
// A real script draws from the global generator between epochs too (a
// validation loader's base_seed, a CPU random op per step), and may forget
// DistributedSampler.set_epoch. The tracker finds out from the opens and
// corrects the prediction here: rewind() to the epoch that came out wrong,
// then skip_words() or follow_seed_epoch(), then next() again.
#pragma once

#include "clairfs/order/job_spec.hpp"

#include <array>

namespace clairfs::order {

class EpochOrders {
public:
    // `spec` must have passed validate(spec, n).
    EpochOrders(const JobSpec& spec, uint32_t n);

    // The epoch number next() will produce (start_epoch first).
    uint64_t epoch() const { return epoch_; }

    // The indices the loader yields in the next epoch, batches concatenated.
    void next(std::vector<Sample>& out);

    // Goes back to just before `epoch` was produced: one of the last two
    // epochs next() produced (false otherwise, changing nothing).
    bool rewind(uint64_t epoch);

    // Sampler random with the global generator: the job draws `words` more
    // 32-bit values from the global generator before the next epoch's
    // iterator than predicted.
    void skip_words(uint64_t words);
    // The global generator positioned at the word that seeds the next
    // epoch's RandomSampler if nothing else draws (the low word of its int64
    // seed): candidate d of a chain search is word d from here.
    CpuGenerator seed_chain() const;

    // DistributedSampler: the next epoch is seeded with seed + seed_epoch
    // and the ones after with seed + seed_epoch + step (step 0: the job does
    // not call set_epoch; 1: it does, from another starting epoch).
    void follow_seed_epoch(uint64_t seed_epoch, uint64_t step);
    // What the next epoch's DistributedSampler adds to its seed.
    uint64_t seed_epoch() const { return dist_epoch_; }

    // Extra global words skipped before the epoch next() produced last.
    uint64_t last_skipped_words() const { return last_skipped_; }

private:
    struct State {
        uint64_t epoch;
        bool first_iterator;
        CpuGenerator global, loader;
        uint64_t dist_epoch, dist_step, pending_skip;
    };
    void random_epoch(std::vector<Sample>& out);
    State state() const;
    void restore(const State& s);

    JobSpec spec_;
    uint32_t n_;
    uint64_t epoch_;
    bool first_iterator_ = true;
    CpuGenerator global_; // torch's default generator: manual_seed(seed), then pre_draws
    CpuGenerator loader_; // DataLoader(generator=torch.Generator().manual_seed(seed))
    uint64_t dist_epoch_; // DistributedSampler: what the next epoch adds to the seed
    uint64_t dist_step_ = 1;
    uint64_t pending_skip_ = 0; // skip_words() not yet applied
    uint64_t last_skipped_ = 0;
    std::vector<Sample> scratch_;
    // The state before each of the last two epochs produced (rewind()).
    std::array<std::optional<State>, 2> saved_;
};

} // namespace clairfs::order
