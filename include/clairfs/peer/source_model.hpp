// SPDX-License-Identifier: MIT
// Where a fetch goes: to the source expected to finish it first, from each
// source's measured time per file and the fetches already waiting on it.
// A fast local file system behind the mount then beats a slow or busy peer,
// and a slow shared file system loses to any live peer. Pure, so the rule
// can be checked with made-up rates.
#pragma once

#include <atomic>
#include <cstdint>

namespace clairfs::peer {

// A source's measured cost: an exponentially weighted mean of seconds per
// file (weight 1/8 for the newest), and how many fetches are on it now.
class SourceRate {
public:
    // Seconds per file, or a negative number before the first measurement.
    double seconds_per_file() const { return mean_.load(std::memory_order_relaxed); }
    uint64_t inflight() const { return inflight_.load(std::memory_order_relaxed); }
    uint64_t samples() const { return samples_.load(std::memory_order_relaxed); }

    void begin() { inflight_.fetch_add(1, std::memory_order_relaxed); }
    // Ends a fetch begun with begin(), and folds its duration in unless
    // `measured` is false (a peer's answer that waited on its own backing
    // read says nothing about the link).
    void end(double seconds, bool measured = true);

private:
    std::atomic<double> mean_{-1.0};
    std::atomic<uint64_t> inflight_{0};
    std::atomic<uint64_t> samples_{0};
};

enum class Choice : uint8_t { peer, backing };

struct SourceView {
    double seconds_per_file; // < 0: not measured yet
    uint64_t inflight;       // fetches on it now, this one not counted
    unsigned parallel;       // fetches it serves at once (threads, or 1 for a link)
};

// The source expected to finish one more file first: each source's time
// per file, stretched by the queue ahead of it (inflight / parallel). An
// unmeasured source is tried (it may be the faster one); the peer wins ties,
// so the shared file system is spared when nothing says otherwise.
Choice choose_source(const SourceView& peer, const SourceView& backing);

} // namespace clairfs::peer
