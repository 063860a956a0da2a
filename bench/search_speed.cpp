// SPDX-License-Identifier: MIT
// search_speed
//
// What a resynchronisation (issue 24) costs at its worst: evidence that no
// candidate explains, so every candidate seed is tried. 16 samples in a window
// of 64, ImageNet's n and a 14M-sample n. For scale it also times the same
// prefixes from a fully seeded std::mt19937 (CpuGenerator), a whole randperm
// (what one candidate would cost without prefixes), and the DistributedSampler
// search for the last of 64 ranks. Then job detection (issue 16): the
// whole search of an unregistered job's opens that nothing explains (a
// seed outside the range), and the same job with the default seed. Then
// tf.data detection (issue 47): 256 opens nothing explains (every listed
// pipeline tried) and a list_files job with seed 123. One JSON object per
// line.
#include "clairfs/order/epoch_orders.hpp"
#include "clairfs/order/job_detect.hpp"
#include "clairfs/order/prefix_search.hpp"
#include "clairfs/order/tf_detect.hpp"
#include "clairfs/order/tf_seed.hpp"
#include "clairfs/order/worker_split.hpp"

#include <chrono>
#include <cstdio>

using namespace clairfs::order;

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}

// 16 of the first 64 samples of a seed no candidate uses.
EpochEvidence unrelated_evidence(uint32_t n) {
    CpuGenerator g(0xdeadbeef);
    std::vector<Sample> prefix;
    PermPrefix().compute(n, 64, g, prefix);
    EpochEvidence ev{{}, 64, {}};
    for (uint32_t i = 0; i < 64; i += 4) ev.samples.push_back(prefix[i]);
    return ev;
}

void time_chain_search(uint32_t n, uint64_t candidates, const EpochEvidence& ev) {
    auto start = std::chrono::steady_clock::now();
    auto d = find_chain_offset(CpuGenerator(1), candidates - 1, n, false, TorchVersion::v1_13, ev);
    double ms = ms_since(start);
    std::printf("{\"search\": \"chain\", \"n\": %u, \"candidates\": %llu, \"found\": %s, "
                "\"ms\": %.2f, \"us_per_candidate\": %.3f}\n",
                n, static_cast<unsigned long long>(candidates), d ? "true" : "false", ms,
                ms * 1e3 / static_cast<double>(candidates));
}

// The same prefixes from CpuGenerator, whose constructor seeds all 624 words
// and whose first draw twists them all.
void time_full_seeding(uint32_t n, uint64_t candidates) {
    CpuGenerator chain(1);
    PermPrefix prefix;
    std::vector<Sample> out;
    uint64_t sink = 0;
    auto start = std::chrono::steady_clock::now();
    for (uint64_t d = 0; d < candidates; ++d) {
        CpuGenerator g(chain.random());
        prefix.compute(n, 64, g, out);
        sink += out[63];
    }
    double ms = ms_since(start);
    std::printf("{\"search\": \"chain prefixes only, std::mt19937 seeded in full\", "
                "\"n\": %u, \"candidates\": %llu, \"ms\": %.2f, \"us_per_candidate\": %.3f, "
                "\"sink\": %llu}\n",
                n, static_cast<unsigned long long>(candidates), ms,
                ms * 1e3 / static_cast<double>(candidates), static_cast<unsigned long long>(sink));
}

void time_full_randperm(uint32_t n) {
    CpuGenerator g(1);
    std::vector<Sample> out;
    auto start = std::chrono::steady_clock::now();
    randperm(n, g, TorchVersion::v1_13, out);
    std::printf("{\"search\": \"one whole randperm\", \"n\": %u, \"ms\": %.2f}\n", n,
                ms_since(start));
}

void time_distributed_search(uint32_t n, uint64_t candidates, const EpochEvidence& ev) {
    JobSpec s;
    s.sampler = SamplerKind::distributed;
    s.world_size = 64;
    s.rank = 63;
    std::vector<uint64_t> epochs(candidates);
    for (uint64_t e = 0; e < candidates; ++e) epochs[e] = e;
    auto start = std::chrono::steady_clock::now();
    auto e = find_distributed_epoch(s, n, epochs, ev);
    double ms = ms_since(start);
    std::printf("{\"search\": \"distributed world 64 rank 63\", \"n\": %u, \"candidates\": %llu, "
                "\"found\": %s, \"ms\": %.2f, \"us_per_candidate\": %.3f}\n",
                n, static_cast<unsigned long long>(candidates), e ? "true" : "false", ms,
                ms * 1e3 / static_cast<double>(candidates));
}

// What a DistributedSampler job's 4 workers (world 8, rank 3, batch 32)
// opened of their first batch each, as the mount would see it.
std::vector<ProcessOpens> first_batches(uint32_t n, uint64_t seed) {
    JobSpec s;
    s.sampler = SamplerKind::distributed;
    s.seed = seed;
    s.world_size = 8;
    s.rank = 3;
    s.batch_size = 32;
    s.num_workers = 4;
    EpochOrders o(s, n);
    std::vector<Sample> epoch;
    o.next(epoch);
    std::vector<ProcessOpens> out;
    for (uint32_t w = 0; w < 4; ++w) {
        ProcessOpens p{100 + w, {}};
        worker_stream(epoch, 32, 4, w, p.samples);
        p.samples.resize(32);
        out.push_back(std::move(p));
    }
    return out;
}

void time_detect(uint32_t n, uint64_t seed, const char* what) {
    auto procs = first_batches(n, seed);
    DetectStats stats;
    auto start = std::chrono::steady_clock::now();
    auto j = detect_job(n, procs, DetectOptions{}, stats);
    double ms = ms_since(start);
    std::printf("{\"search\": \"detect, %s\", \"n\": %u, \"found\": %s, \"candidates\": %llu, "
                "\"positions\": %llu, \"ms\": %.2f}\n",
                what, n, j ? "true" : "false", static_cast<unsigned long long>(stats.candidates),
                static_cast<unsigned long long>(stats.positions), ms);
}

// tf.data detection's whole search on the 256 opens a search judges.
void time_tf_detect(uint32_t n, TfListing listing, bool fits) {
    std::vector<Sample> opens;
    if (fits) {
        auto seeds = tf_get_seed(std::nullopt, Seed{123, false});
        tf_full_shuffle_prefix(n, tf_iterator_seeds(*seeds, 0), 256, opens);
    } else {
        CpuGenerator g(0xdeadbeef);
        PermPrefix().compute(n, 256, g, opens);
    }
    TfDetectOptions opt;
    opt.cores = 2;
    TfDetectStats stats;
    auto start = std::chrono::steady_clock::now();
    auto j = detect_tf_job(n, listing, opens, opt, stats);
    double ms = ms_since(start);
    std::printf("{\"search\": \"detect tf.data, %s, %s\", \"n\": %u, \"found\": %s, "
                "\"pipelines\": %llu, \"steps\": %llu, \"ms\": %.2f}\n",
                listing == TfListing::glob ? "list_files" : "image_dataset_from_directory",
                fits ? "list_files seed 123" : "nothing fits", n, j ? "true" : "false",
                static_cast<unsigned long long>(stats.candidates),
                static_cast<unsigned long long>(stats.steps), ms);
}

} // namespace

int main() {
    for (uint32_t n : {1600u, 23410u, 1281167u}) {
        time_tf_detect(n, TfListing::keras_directory, false);
        time_tf_detect(n, TfListing::glob, false);
        time_tf_detect(n, TfListing::glob, true);
    }
    for (uint32_t n : {1281167u, 14197122u}) {
        time_detect(n, 0x9e3779b97f4a7c15ULL, "no seed fits (the whole range)");
        time_detect(n, 0, "DistributedSampler default seed");
    }
    for (uint32_t n : {1281167u, 14197122u}) {
        EpochEvidence ev = unrelated_evidence(n);
        for (uint64_t candidates : {4096ull, 100000ull}) time_chain_search(n, candidates, ev);
        time_full_seeding(n, 100000);
        time_full_randperm(n);
        time_distributed_search(n, 4096, ev);
    }
    return 0;
}
