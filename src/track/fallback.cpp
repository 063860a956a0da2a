// SPDX-License-Identifier: MIT
// Deciding that the opens no longer follow the registered order, and
// saying why in words a user can act on.
#include "clairfs/track/tracker.hpp"

#include <algorithm>
#include <string>

namespace clairfs::track {
namespace {

std::string forgotten_set_epoch(uint32_t rank, uint64_t epoch) {
    return "epoch " + std::to_string(epoch + 1) + " of rank " + std::to_string(rank) +
           " began with epoch " + std::to_string(epoch) +
           "'s order again: the job does not call sampler.set_epoch(epoch)";
}

std::string past_last_epoch(uint64_t epochs) {
    return "the job went past the " + std::to_string(epochs) + " registered epochs";
}

std::string low_match_rate(uint64_t matched, uint64_t opens, uint64_t epoch,
                           const std::string& hint) {
    return "only " + std::to_string(matched * 100 / opens) + "% of " + std::to_string(opens) +
           " opens in epoch " + std::to_string(epoch) + " followed the registered order: " + hint +
           "?";
}

} // namespace

// An open that matched no rank's current or next epoch. Sequential and
// unshuffled orders repeat every epoch, so they matched `next` already and
// never reach the set_epoch test.
void Tracker::judge_unmatched(index::NodeId node) {
    for (const Rank& r : ranks_) {
        uint64_t unused;
        // Half an epoch behind it keeps a stray early open of the current
        // epoch's first samples from reading as a repeat.
        // A rank whose order is searched follows a repeat instead.
        // A job followed by its READs (next_at_end) has READs of the
        // kernel's making in the count; one of them must not end the
        // prediction. A repeated epoch shows there as a falling match rate.
        if (!opt_.next_at_end && !r.resync && r.current && r.next &&
            2 * r.opened >= r.current->size() &&
            match_in(*r.current, zeros_, nullptr, node, unused))
            return fall_back(forgotten_set_epoch(r.rank, r.current->epoch));
    }
    // A job past its last epoch opens a batch at once; a stray open or
    // two (Keras's load_img of one file after fit, a script checking a
    // sample) is not a new epoch.
    for (const Rank& r : ranks_)
        if (finished(r)) {
            if (++past_end_opens_ >= std::max(opt_.layout.batch_size, 2u))
                fall_back(past_last_epoch(r.produced));
            return;
        }
    if (opens_ >= opt_.min_opens &&
        static_cast<double>(matched_) < opt_.fallback_below * static_cast<double>(opens_))
        fall_back(low_match_rate(matched_, opens_, counted_epoch_, opt_.keys_hint));
}

void Tracker::abandon(std::string reason) {
    std::lock_guard lk(mu_);
    fall_back(std::move(reason));
}

void Tracker::fall_back(std::string reason) {
    if (mode_.load(std::memory_order_relaxed) == Mode::fallback) return;
    reason_ = std::move(reason);
    mode_.store(Mode::fallback, std::memory_order_release);
}

} // namespace clairfs::track
