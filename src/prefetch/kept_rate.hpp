// SPDX-License-Identifier: MIT
// Whether the kernel keeps the files it had: learnt from watched opens (a
// file left unpushed at its open, whose READs then show whether the kernel
// still held it), and the rule that picks which opens are watched.
#pragma once

#include <atomic>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>

namespace clairfs::prefetch {

class KeptRate {
public:
    // A watched file's use ended: the kernel kept it (no READ was needed)
    // or not.
    void learn(bool kept);
    // Whether the next file the kernel may still hold is watched rather
    // than pushed.
    bool watch_next();
    // A watched open or file due, counted for status.
    void note_watched() { watched_.fetch_add(1, std::memory_order_relaxed); }
    // The sampling now: 1 open in this many is watched.
    uint64_t watch_every() const;
    // Keys open_watched, open_kept and open_watch_every of status's "prefetch".
    void status(nlohmann::json& prefetch) const;

private:
    static constexpr uint32_t rate_one = 1024, rate_span = 32;
    // A watched file the kernel dropped costs a READ round trip, so once
    // the kernel is known to drop nearly all (rate below 1/4 over at least
    // two spans of watched files) 1 in 64 is watched rather than 1 in 16.
    static constexpr uint64_t every = 16, every_dropping = 64;
    std::atomic<uint32_t> rate_{0};     // kept lately, in 1/rate_one
    std::atomic<uint64_t> learnt_{0};   // watched files learnt from
    std::atomic<uint64_t> probe_{0};    // opens asked about, for the sampling
    std::atomic<uint64_t> kept_{0};     // watched files the kernel had kept
    std::atomic<uint64_t> watched_{0};
};

} // namespace clairfs::prefetch
