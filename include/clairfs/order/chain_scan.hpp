// SPDX-License-Identifier: MIT
// The deep search along the global generator's chain. A script that seeds,
// then builds its model, then iterates a shuffle=True loader has its
// sampler's seed some millions of words down the chain from manual_seed:
// one 32-bit draw per initialised parameter (resnet18: 22,846,824; a ViT-L
// about 300 million), a number no user can know. find_chain_offset covers a
// few thousand words with every candidate checked in full; this scan covers
// up to 2^30 by turning almost every candidate away after one draw.
//
// Why one draw is enough to turn a candidate away: position 0 of the epoch
// is the first sample worker 0 (or the loader itself, without workers)
// opens, so it is among the opens held as evidence, and it is the first
// output of the sampler's generator reduced mod n (randperm's first swap
// takes the value at 0 + z, untouched; with replacement it is the draw
// itself). That draw needs state words 0, 1 and 397 of the generator
// seeded with the candidate word: 397 dependent multiplications, done for
// 16 candidates at once in vector registers. A candidate whose first
// sample is evidence (m in n of them) is then checked in full: every
// evidence sample within the window, and each opener's samples in the
// order it opened them.
#pragma once

#include "clairfs/order/prefix_search.hpp"

#include <cstdint>
#include <memory>
#include <optional>

namespace clairfs::order {

// The first one or two outputs of std::mt19937(seeds[i]) for every i:
// out0[i] and, if out1 is not null, out1[i]. Vectorised where the CPU
// allows (AVX-512, AVX2), chosen at run time.
void mt19937_first_draws(const uint32_t* seeds, size_t count, uint32_t* out0, uint32_t* out1);

class ChainScan {
public:
    // `chain` is positioned at candidate `first` (the caller discards the
    // words before it); candidates first..last inclusive are scanned. The
    // rest as find_chain_offset: n samples, replacement, torch version v.
    // ev.streams, if given, is each sample's opener: the full check then
    // also wants each opener's samples in increasing positions.
    ChainScan(CpuGenerator chain, uint64_t first, uint64_t last, uint32_t n, bool replacement,
              TorchVersion v, const EpochEvidence& ev);
    ~ChainScan();
    ChainScan(const ChainScan&) = delete;
    ChainScan& operator=(const ChainScan&) = delete;

    // Scans up to `count` more candidates: the offset that fits, if one
    // does among them (the scan then stops there).
    std::optional<uint64_t> step(uint64_t count);
    bool done() const { return next_ > last_ || found_; }
    uint64_t next() const { return next_; }   // the first candidate not yet scanned
    uint64_t last() const { return last_; }
    uint64_t checked_in_full() const { return full_checks_; }
    // Whether the evidence can ever fit (else every step finds nothing).
    bool possible() const { return possible_; }

private:
    struct State;
    CpuGenerator chain_;
    uint64_t next_, last_;
    uint64_t full_checks_ = 0;
    bool found_ = false;
    bool possible_ = true;
    std::unique_ptr<State> s_;
};

// How likely a wrong candidate is to pass ChainScan's full check by chance,
// for m distinct evidence samples within `window` positions of n, split
// evenly among `streams` openers whose order is checked.
double chain_false_accept(uint32_t n, uint64_t window, size_t m, uint32_t streams);

} // namespace clairfs::order
