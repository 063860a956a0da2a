// SPDX-License-Identifier: MIT
#include "kept_rate.hpp"

#include <nlohmann/json.hpp>

namespace clairfs::prefetch {

void KeptRate::learn(bool kept) {
    if (kept) kept_.fetch_add(1, std::memory_order_relaxed);
    learnt_.fetch_add(1, std::memory_order_relaxed);
    // A moving average over the last few dozen watched opens; racing
    // updates lose one observation, which is harmless.
    int64_t r = rate_.load(std::memory_order_relaxed);
    r += ((kept ? int64_t{rate_one} : 0) - r) / rate_span;
    rate_.store(static_cast<uint32_t>(r), std::memory_order_relaxed);
}

// Every file is watched while 3 in 4 watched files were kept lately, else
// 1 in 16, so that the rate keeps being learnt; 1 in 64 once the kernel is
// known to drop nearly all of them (in a tight memory cgroup, 6% of an
// epoch's files were watched and each needed a READ: bench/RESULTS.md,
// SSD-640 under fanotify). Coming back from there to watching every file
// then takes about 2,800 opens instead of 700: pushes the kernel did not
// need, which cost CPU, not round trips.
bool KeptRate::watch_next() {
    const bool keeping = rate_.load(std::memory_order_relaxed) >= rate_one * 3 / 4;
    const bool sample = probe_.fetch_add(1, std::memory_order_relaxed) % watch_every() == 0;
    return keeping || sample;
}

uint64_t KeptRate::watch_every() const {
    const bool dropping = rate_.load(std::memory_order_relaxed) < rate_one / 4 &&
                          learnt_.load(std::memory_order_relaxed) >= 2 * rate_span;
    return dropping ? every_dropping : every;
}

void KeptRate::status(nlohmann::json& prefetch) const {
    prefetch["open_watched"] = watched_.load(std::memory_order_relaxed);
    prefetch["open_kept"] = kept_.load(std::memory_order_relaxed);
    prefetch["open_watch_every"] = watch_every();
}

} // namespace clairfs::prefetch
