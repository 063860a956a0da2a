// SPDX-License-Identifier: MIT
// Hand-over (--handover, cache/ram_tier.hpp): whether files the kernel's
// page cache holds whole still leave the RAM tier, and what the kernel did
// with the files it was handed.
#pragma once

#include "clairfs/cache/ram_tier.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace clairfs::prefetch {

class Handover {
public:
    explicit Handover(bool on) : on_(on) {}
    bool on() const { return on_.load(std::memory_order_relaxed); }
    // Off without a reason (peers are served from the tier).
    void turn_off() { on_.store(false, std::memory_order_relaxed); }
    // A READ of a file the kernel was handed: it dropped (some of) its
    // pages.
    void note_miss(const cache::RamTier& ram);
    void note_forgotten() { forgets_.fetch_add(1, std::memory_order_relaxed); }
    void note_evicted() { evicted_.fetch_add(1, std::memory_order_relaxed); }
    // Keys handover, reason, misses, forgotten and evicted of status's
    // "ram.kernel".
    void status(nlohmann::json& kernel) const;

private:
    std::atomic<bool> on_;
    std::atomic<uint64_t> misses_{0}, forgets_{0}, evicted_{0};
    mutable std::mutex mu_; // leaf; guards stopped_
    std::string stopped_;   // why hand-over stopped, or ""
};

} // namespace clairfs::prefetch
