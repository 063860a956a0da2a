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
//
// framework tensorflow: next() yields the files in the order the tf.data
// pipeline opens them (tf_epochs.hpp); an epoch's order depends on which
// iterator of the dataset it runs, which the tracker finds out from the opens
// (follow_tf_iterator).
#pragma once

#include "clairfs/order/job_spec.hpp"
#include "clairfs/order/tf_epochs.hpp"

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

    // framework tensorflow: the iterator index the next epoch uses (0 first).
    uint64_t tf_iterator() const;
    // The next epoch uses iterator k, the ones after it k + step, k + 2 step...
    void follow_tf_iterator(uint64_t k, uint64_t step);
    // The iterator of the epoch next() produced last, if any since the start
    // (or since the state rewind() went back to).
    std::optional<uint64_t> last_tf_iterator() const;
    // The pipeline, for a search among iterators; null for pytorch.
    const TfEpochs* tf() const { return tf_ ? &*tf_ : nullptr; }

private:
    struct State {
        uint64_t epoch;
        bool first_iterator;
        CpuGenerator global, loader;
        uint64_t dist_epoch, dist_step, pending_skip;
        TfEpochs::Cursor tf;
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
    std::optional<TfEpochs> tf_; // framework tensorflow
    std::vector<Sample> scratch_;
    // The state before each of the last two epochs produced (rewind()).
    std::array<std::optional<State>, 2> saved_;
};

} // namespace clairfs::order
