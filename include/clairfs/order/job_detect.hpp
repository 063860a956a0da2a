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
    sequential,      // no shuffling: SequentialSampler, or DistributedSampler(shuffle=False)
};
const char* detected_sampler_name(DetectedSampler s);

struct DetectedJob {
    DetectedSampler sampler = DetectedSampler::sequential;
    uint64_t seed = 0;  // distributed: seed + epoch (only their sum shows); random: the seed
    uint32_t world = 1; // world size (1 for random and a sequential single rank)
    uint32_t batch = 1; // batch size (1 where it does not show: one process per rank)
    uint32_t workers = 0; // DataLoader num_workers (0: one process per rank)
    std::vector<uint32_t> ranks; // the ranks whose loaders were seen, ascending
    std::vector<uint32_t> pids;  // the processes it explains
    uint64_t opens = 0;          // their opens at the positions it predicts
    uint64_t fewest = 0;         // of its ranks, the fewest opens predicted
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

} // namespace clairfs::order
