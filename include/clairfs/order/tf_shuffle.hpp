// SPDX-License-Identifier: MIT
// One iterator of tf.data's ShuffleDataset (shuffle_dataset_op.cc): a ring
// buffer filled from the input to buffer_size elements (or the input's end);
// each output draws one 32-bit Philox word, takes the element at
// start + word % (elements held), moves the element at start into its
// place, and refills one. Only the first `count` outputs are computed, so a
// search checks a candidate in O(buffer_size + count), not O(n).
#pragma once

#include "clairfs/order/randperm.hpp"
#include "clairfs/order/tf_seed.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace clairfs::order {

class TfShuffle {
public:
    // The first min(count, input.size()) elements the iterator seeded with
    // `seeds` (tf_iterator_seeds of the dataset's pair) yields, into `out`.
    void run(std::span<const Sample> input, uint64_t buffer_size, const TfSeeds& seeds,
             size_t count, std::vector<Sample>& out);

private:
    std::vector<Sample> ring_; // reused across runs: a search allocates once
};

} // namespace clairfs::order
