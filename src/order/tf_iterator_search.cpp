// SPDX-License-Identifier: MIT
#include "clairfs/order/tf_iterator_search.hpp"

#include "evidence_check.hpp"

#include <algorithm>

namespace clairfs::order {

std::optional<uint64_t> find_tf_iterator(const TfEpochs& tf, std::span<const uint64_t> candidates,
                                         const EpochEvidence& ev) {
    if (!tf.by_iterator()) return std::nullopt;
    std::span<const Sample> input = tf.input();
    auto n = static_cast<uint32_t>(input.size());
    uint32_t window = std::min(ev.window, n);
    EvidenceCheck check(ev);
    // Samples outside the subset (the other side of a validation split)
    // never come; possible() only knows the bound n of the whole listing.
    if (!check.possible(UINT32_MAX, window)) return std::nullopt;
    TfShuffle shuffle;
    std::vector<Sample> order;
    for (uint64_t k : candidates) {
        shuffle.run(input, tf.buffer(), tf_iterator_seeds(tf.seeds(), k), window, order);
        if (check.all_in(order)) return k;
    }
    return std::nullopt;
}

} // namespace clairfs::order
