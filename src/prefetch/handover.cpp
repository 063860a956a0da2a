// SPDX-License-Identifier: MIT
#include "handover.hpp"

#include "clairfs/log.hpp"

#include <nlohmann/json.hpp>

namespace clairfs::prefetch {

// The kernel asked again for a file it was handed: under memory pressure
// it reclaims page cache, and the RAM tier no longer holds the bytes. Each
// such read is one demand fetch, from the SSD tier or the backing store; a
// kernel that keeps dropping what it is handed would make them a share of
// every later epoch, unseen by the prefetcher. So at the 64th, however many
// files were handed over, hand-over stops for the mount: files are no
// longer handed over, and each one the kernel drops comes back into the
// tier when it is next read and stays. The marks stay: clearing them would
// have the prefetcher read again every file the kernel still holds (543 MB
// of a 1.1 GB dataset in one epoch of bench/RESULTS.md's run).
constexpr uint64_t max_kernel_misses = 64;

void Handover::note_miss(const cache::RamTier& ram) {
    uint64_t misses = misses_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (misses < max_kernel_misses || !on_.exchange(false)) return; // or stopped already
    std::string why = "the kernel dropped " + std::to_string(misses) + " of the " +
                      std::to_string(ram.kernel_stats().handed_over) +
                      " files it was handed (memory pressure on its page cache)";
    {
        std::lock_guard lk(mu_);
        stopped_ = why;
    }
    LOG_WARN("hand-over stopped: %s; the RAM tier keeps its own copy of every file it reads "
             "from now on, as without --handover", why.c_str());
}

void Handover::status(nlohmann::json& kernel) const {
    std::string stopped;
    {
        std::lock_guard lk(mu_);
        stopped = stopped_;
    }
    kernel["handover"] = on() ? "on" : stopped.empty() ? "off" : "stopped";
    kernel["reason"] = stopped.empty() ? nlohmann::json(nullptr) : nlohmann::json(stopped);
    kernel["misses"] = misses_.load(std::memory_order_relaxed);
    kernel["forgotten"] = forgets_.load(std::memory_order_relaxed);
    kernel["evicted"] = evicted_.load(std::memory_order_relaxed);
}

} // namespace clairfs::prefetch
