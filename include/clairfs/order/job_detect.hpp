// SPDX-License-Identifier: MIT
// Recognising an unregistered torch job from its first opens (issue 16):
// which sampler, seed, world size, local ranks, batch size and worker count
// make every loader process open what it opened, in the order it did.
//
// A DataLoader worker opens its batches' samples one after the other: the
// k-th sample of batch b of rank r is position r + world * (b * batch + k)
// of the epoch's permutation (DistributedSampler), and worker w takes
// batches w, w + workers, ... So the first two opens of any worker sit
// `world` positions apart, which gives the world size; where the first sits
// gives the rank and the worker; where a worker's opens jump gives the batch
// size and the worker count. A candidate permutation is checked by computing
// only its first positions (randperm's forward Fisher-Yates fixes position i
// at draw i; PermPrefix keeps the swaps in a sparse map), so a seed costs
// what the positions it must reach cost, not n.
#pragma once

#include "clairfs/order/job_spec.hpp"

#include <atomic>
#include <memory>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace clairfs::order {

// What one process opened, in the order its opens reached the mount: each a
// sample index of the candidate dataset, or `not_a_sample`.
inline constexpr Sample not_a_sample = UINT32_MAX;
struct ProcessOpens {
    uint32_t pid = 0;
    std::vector<Sample> samples;
};

enum class DetectedSampler {
    distributed,     // DistributedSampler, generator seeded with seed + epoch
    random_explicit, // RandomSampler with DataLoader(generator=Generator().manual_seed(seed)), epoch 0
    random_global,   // RandomSampler seeded from the global chain: manual_seed(seed), then draw_offset words
    sequential,      // no shuffling: SequentialSampler, or DistributedSampler(shuffle=False)
};
const char* detected_sampler_name(DetectedSampler s);

struct DetectedJob {
    DetectedSampler sampler = DetectedSampler::sequential;
    uint64_t seed = 0;  // distributed: seed + epoch (only their sum shows); random: the seed
    // random_global: the sampler's generator was seeded with word
    // draw_offset of manual_seed(seed)'s chain (counted from 0), seed_word.
    uint64_t draw_offset = 0;
    uint32_t seed_word = 0;
    uint32_t world = 1; // world size (1 for random and a sequential single rank)
    uint32_t batch = 1; // batch size (1 where it does not show: one process per rank)
    uint32_t workers = 0; // DataLoader num_workers (0: one process per rank)
    std::vector<uint32_t> ranks; // the ranks whose loaders were seen, ascending
    std::vector<uint32_t> pids;  // the processes it explains
    uint64_t opens = 0;          // their opens at the positions it predicts
    uint64_t fewest = 0;         // of its ranks, the fewest opens predicted
    // The batch size and worker count are what the opens show, not a lower
    // bound: some worker's opens jumped to its next batch, or one process
    // per rank opened them all. Several workers none of which has reached
    // its second batch leave out any worker yet to open (a job of three
    // workers whose third started late was registered with two, and fell
    // back at its next epoch).
    bool layout_shown = true;
};

struct DetectOptions {
    uint64_t seed_max = 100000;   // candidate seeds (seed + epoch) 0..seed_max ...
    std::vector<uint64_t> seeds{0, 1, 42, 123, 1234, 2021, 3407, 12345}; // ... and these
    uint32_t listed_epochs = 1000; // listed seeds are tried as seed + epoch up to this epoch
    // Positions computed per candidate of the range: how far the lowest
    // local rank's first worker's second sample may sit (rank + world).
    uint32_t range_depth = 256;
    // Positions for the listed seeds together: each gets this divided by
    // their count, at least range_depth, at most n.
    uint64_t listed_positions = uint64_t{1} << 24;
    // Opens of one process a hypothesis must place, its first two (which
    // any world size fits) included. Each further one lands where a wrong
    // candidate puts it with odds 1/n: with 200,000 candidates tried, six
    // keep a false hypothesis below one in 10^10 even at n = 480.
    uint32_t min_evidence = 8;
    // Set by another thread to end a search early (nullopt then): a mount
    // going down, or a registration written meanwhile.
    const std::atomic<bool>* cancel = nullptr;
};

struct DetectStats {
    uint64_t candidates = 0; // permutations tried
    uint64_t positions = 0;  // positions computed over all of them
    uint64_t hypotheses = 0; // (permutation, world) pairs checked against every open
    uint64_t chain_words = 0; // ChainDetect: chain words whose first draw was tested
};

// The first candidate (no shuffle; then the listed seeds, deep; then the
// range) under which some process's opens fit a loader exactly; nullopt if
// none. n: the dataset's sample count. Processes with fewer than two
// sample opens, and those a candidate does not claim, are left out of it.
std::optional<DetectedJob> detect_job(uint32_t n, std::span<const ProcessOpens> procs,
                                      const DetectOptions& opt, DetectStats& stats);

// `guess` (from detect_job) against the opens as they are now: the job it
// describes with today's counts, or nullopt if a process it claims opened
// something else than predicted. Costs one candidate.
std::optional<DetectedJob> recheck_job(uint32_t n, const DetectedJob& guess,
                                       std::span<const ProcessOpens> procs);

// Zero configuration's deep search (issue 47): a shuffle=True loader
// without a generator of its own seeds its RandomSampler from the global
// chain, after whatever the script drew before (a model's initialisation:
// millions of words). For each listed seed S, candidate d is word d of
// manual_seed(S)'s chain taken as the sampler's seed word. As in
// ChainScan, one draw turns almost every candidate away: position 0 of the
// epoch is the first open of the loader's first worker, so the
// candidate's first draw mod n must be some process's first open; a
// candidate that passes is checked as detect_job checks one (its first
// positions, then every process it claims). The seeds are scanned
// interleaved, `words` at a time each, so a shallow offset of any seed is
// found before a deep one of the first.
struct ChainTarget {
    uint32_t n = 0;                     // the candidate dataset's samples
    std::span<const ProcessOpens> procs; // every process's opens, in that numbering
};
struct ChainFound {
    size_t target = 0; // index into the targets given to step()
    DetectedJob job;
};

class ChainDetect {
public:
    // Words first .. words - 1 of each seed's chain.
    ChainDetect(std::span<const uint64_t> seeds, uint64_t first, uint64_t words);
    ~ChainDetect();
    ChainDetect(const ChainDetect&) = delete;
    ChainDetect& operator=(const ChainDetect&) = delete;

    // Scans up to `words` more words of every seed's chain against the
    // targets' opens (which may have grown since the last step: a word
    // already scanned is not looked at again, so a target must have had
    // its loader's first open when it was). The first job that fits, if
    // one does; the scan can go on after it (a job that was not confirmed).
    std::optional<ChainFound> step(std::span<const ChainTarget> targets, uint64_t words,
                                   uint32_t min_evidence, DetectStats& stats,
                                   const std::atomic<bool>* cancel = nullptr);
    bool done() const;
    uint64_t scanned() const; // words of every seed's chain scanned so far
    uint64_t words() const { return words_; }
    size_t seeds() const { return seeds_.size(); }

private:
    struct Chain;
    std::vector<uint64_t> seeds_;
    std::vector<std::unique_ptr<Chain>> chains_;
    uint64_t words_;
};

} // namespace clairfs::order
