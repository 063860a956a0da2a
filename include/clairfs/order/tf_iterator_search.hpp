// SPDX-License-Identifier: MIT
// Finding which iterator of a tf.data shuffle an epoch ran (framework
// tensorflow): Keras's fit creates an extra iterator per epoch, a .take(1)
// or a peek at the data another, so epoch e need not be iterator e.
// Each candidate costs one shuffle prefix, O(buffer + window), never O(n).
#pragma once

#include "clairfs/order/prefix_search.hpp"
#include "clairfs/order/tf_epochs.hpp"

#include <cstdint>
#include <optional>
#include <span>

namespace clairfs::order {

// Tries the iterator indices in `candidates`, in the order given, and
// returns the first whose order has every evidence sample within its first
// ev.window positions (capped at the input's size); nullopt if none does,
// or if the pipeline's order does not depend on the iterator.
std::optional<uint64_t> find_tf_iterator(const TfEpochs& tf, std::span<const uint64_t> candidates,
                                         const EpochEvidence& ev);

} // namespace clairfs::order
