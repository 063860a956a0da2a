// SPDX-License-Identifier: MIT
// What one rank's unmodified DataLoader yields, epoch after epoch, including
// every draw the DataLoader makes from the generators the samplers share:
// per new iterator a base_seed (two draws) before the sampler's own draws,
// only once with persistent workers.
#pragma once

#include "clairfs/order/job_spec.hpp"

namespace clairfs::order {

class EpochOrders {
public:
    // `spec` must have passed validate(spec, n).
    EpochOrders(const JobSpec& spec, uint32_t n);

    // The epoch number next() will produce (start_epoch first).
    uint64_t epoch() const { return epoch_; }

    // The indices the loader yields in the next epoch, batches concatenated.
    void next(std::vector<Sample>& out);

private:
    void random_epoch(std::vector<Sample>& out);

    JobSpec spec_;
    uint32_t n_;
    uint64_t epoch_;
    bool first_iterator_ = true;
    CpuGenerator global_; // torch's default generator: manual_seed(seed), then pre_draws
    CpuGenerator loader_; // DataLoader(generator=torch.Generator().manual_seed(seed))
    std::vector<Sample> scratch_;
};

} // namespace clairfs::order
