// SPDX-License-Identifier: MIT
// How a DataLoader with workers spreads an epoch over its worker processes
// (torch 1.13.1, verified with per-worker logs): batches are numbered from
// 0 each epoch and batch k goes to worker k % W, the cycle restarting at
// worker 0 every epoch, persistent workers included. Each worker loads its
// batches' samples in order, so worker w opens batches w, w+W, w+2W, ...
// concatenated; only the interleaving across workers depends on timing.
#pragma once

#include "clairfs/order/randperm.hpp"

#include <cstdint>
#include <vector>

namespace clairfs::order {

// The worker that loads batch k; with no workers the main process (0) does.
inline uint32_t worker_of_batch(uint64_t k, uint32_t workers) {
    return workers == 0 ? 0 : static_cast<uint32_t>(k % workers);
}

// The samples worker w opens in an epoch, in the order it opens them.
void worker_stream(const std::vector<Sample>& epoch, uint32_t batch_size, uint32_t workers,
                   uint32_t w, std::vector<Sample>& out);

// The most batches handed to workers and not yet received by the training
// loop: iter() sends prefetch_factor * W at once and one more per batch
// received, so when batch j is opened, j - received <= prefetch_factor * W.
// Without workers the loop loads one batch at a time.
inline uint64_t batches_in_flight(uint32_t workers, uint32_t prefetch_factor) {
    return workers == 0 ? 1 : uint64_t{prefetch_factor} * workers;
}

} // namespace clairfs::order
