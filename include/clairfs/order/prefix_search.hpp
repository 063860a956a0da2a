// SPDX-License-Identifier: MIT
// Finding the seed an epoch was really shuffled with (issue 24), from the
// samples the loader opened first. A job that draws from the global generator
// more often than declared (a validation loader's base_seed, CPU random ops in
// the training step) shifts the sampler's seed along the generator's chain; a
// DistributedSampler without set_epoch, or a resumed job, shifts seed + epoch.
// Each candidate seed costs only the draws that fix the first positions of its
// order, never a whole permutation: O(opens) per candidate, not O(n).
#pragma once

#include "clairfs/order/job_spec.hpp"
#include "clairfs/order/lazy_mt19937.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace clairfs::order {

// Whether the first k positions of randperm(n) can be computed with k draws:
// forward Fisher-Yates fixes position i at step i (torch <= 2.5 any n;
// 2.6 and later only for n < randperm64_threshold: !randperm_inside_out).
bool prefix_computable(uint32_t n, TorchVersion v);

// The first k entries of randperm(n, g), with k draws and a sparse swap map
// (an open-addressing table reused across calls, so a search allocates nothing
// per candidate). Advances g by min(k, n-1) draws. Requires prefix_computable.
// k > n gives all n entries.
class PermPrefix {
public:
    void compute(uint32_t n, uint32_t k, CpuGenerator& g, std::vector<Sample>& out);
    // The same from a lazily seeded generator: what the searches use.
    void compute(uint32_t n, uint32_t k, LazyMt19937& g, std::vector<Sample>& out);

private:
    struct Slot {
        uint32_t pos;
        Sample value;
        uint32_t stamp; // live only if equal to stamp_: a new call forgets all in O(1)
    };

    template <class Draw>
    void fisher_yates(uint32_t n, uint32_t k, Draw draw, std::vector<Sample>& out);
    void reset(uint32_t entries);
    // Linear probing from a Fibonacci hash: the slot holding pos, or the free
    // one where it belongs.
    Slot& slot(uint32_t pos) {
        uint32_t i = (pos * 0x9e3779b1u) >> shift_;
        while (slots_[i].stamp == stamp_ && slots_[i].pos != pos) i = (i + 1) & mask_;
        return slots_[i];
    }
    Sample value_at(uint32_t pos) { return live(slot(pos), pos); }
    Sample live(const Slot& s, uint32_t pos) const { return s.stamp == stamp_ ? s.value : pos; }

    std::vector<Slot> slots_; // power-of-two size, at most a quarter full
    uint32_t mask_ = 0;       // slots_.size() - 1
    uint32_t shift_ = 32;     // 32 - log2(slots_.size()), for the multiplicative hash
    uint32_t stamp_ = 0;
};

// What the start of an epoch looked like: distinct samples the loader opened
// that the expected order did not explain, each of which must lie within the
// first `window` positions of the sampler's order for this rank.
struct EpochEvidence {
    std::vector<Sample> samples;
    uint32_t window = 0;
    // Per sample, the process that opened it; empty if unknown. Only the
    // deep chain search (chain_scan.hpp) uses it: a DataLoader worker opens
    // its samples one after the other, so its samples must come in the
    // order it opened them.
    std::vector<uint32_t> streams;
};

// Sampler random, generator global. Candidate d (0 <= d <= max_offset) means
// the RandomSampler's own generator is seeded with the 32-bit word number d of
// `chain` (the caller positions `chain` so that d = 0 is the predicted seed
// word, i.e. the low word of the sampler's int64 seed draw; only the low 32
// bits of a torch seed reach mt19937). The sampler's order is randperm(n) of
// that generator (replacement=false; with num_samples != n its first
// permutation is what the first positions show), or g.random() % n per sample
// (replacement=true; random64() % n where randint_draws64(n, v)). Returns the smallest d for which every evidence sample is
// within the first ev.window positions; nullopt if none, or if the order's
// prefix cannot be computed sparsely (!prefix_computable).
// Without replacement the window is capped at n; with replacement the caller
// caps it at num_samples (each position costs one draw). Empty evidence: 0.
std::optional<uint64_t> find_chain_offset(CpuGenerator chain, uint64_t max_offset, uint32_t n,
                                          bool replacement, TorchVersion v,
                                          const EpochEvidence& ev);

// DistributedSampler with shuffle=true: rank spec.rank's order in an epoch
// seeded with seed + E is perm[(rank + world*i) % n] for i = 0, 1, ... (padding
// wraps; with sampler_drop_last the total is world * (n / world)). Tries the
// values E in `candidates` in the order given and returns the first for which
// every evidence sample is among the rank's first ev.window positions.
// Each candidate costs about rank + world * window draws. With shuffle=false
// the order ignores E: the first candidate if the evidence fits, else nullopt.
// nullopt too if !prefix_computable(n, spec.torch_version).
std::optional<uint64_t> find_distributed_epoch(const JobSpec& spec, uint32_t n,
                                               std::span<const uint64_t> candidates,
                                               const EpochEvidence& ev);

} // namespace clairfs::order
