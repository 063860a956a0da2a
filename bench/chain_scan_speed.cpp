// SPDX-License-Identifier: MIT
// chain_scan_speed [WORDS]
//
// What the deep chain search costs on one core: a shuffle=True DataLoader
// (batch 32, 2 workers) whose sampler seed sits WORDS - 1 words down the
// global chain from manual_seed(42) (default 2^30: the whole range the
// daemon searches), found from the opens its workers make first, as the
// tracker would hold them. Also the resnet18 case (22,846,824 words of
// initialisation). One JSON object per line; the CPU time is this thread's.
#include "clairfs/order/chain_scan.hpp"
#include "clairfs/order/worker_split.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>

using namespace clairfs::order;

namespace {

double cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The opens of 2 workers, 8 each, of an epoch seeded with `word`.
EpochEvidence evidence_for(uint32_t n, uint32_t word) {
    CpuGenerator g(word);
    std::vector<Sample> prefix;
    PermPrefix().compute(n, 64, g, prefix);
    EpochEvidence ev;
    ev.window = 16 + 5 * 32; // what the tracker allows for 16 opens, prefetch_factor 2
    for (uint32_t i = 0; i < 8; ++i)
        for (uint32_t w = 0; w < 2; ++w) {
            ev.samples.push_back(prefix[w * 32 + i]);
            ev.streams.push_back(100 + w);
        }
    return ev;
}

void run(const char* what, uint32_t n, uint64_t offset) {
    CpuGenerator chain(42);
    double t0 = cpu_seconds();
    CpuGenerator at = chain;
    at.discard(offset);
    uint32_t word = at.random();
    EpochEvidence ev = evidence_for(n, word);
    double prepared = cpu_seconds() - t0;
    ChainScan scan(chain, 0, offset, n, false, TorchVersion::v2_7, ev);
    double start = cpu_seconds();
    std::optional<uint64_t> found;
    while (!scan.done() && !found) found = scan.step(uint64_t{1} << 24);
    double s = cpu_seconds() - start;
    std::printf("{\"case\": \"%s\", \"n\": %u, \"words\": %llu, \"found_at\": %lld, "
                "\"cpu_s\": %.2f, \"million_candidates_per_s\": %.1f, "
                "\"full_checks\": %llu, \"evidence_prep_s\": %.2f, "
                "\"projected_2^30_s\": %.1f}\n",
                what, n, static_cast<unsigned long long>(offset + 1),
                found ? static_cast<long long>(*found) : -1LL, s,
                static_cast<double>(offset + 1) / s / 1e6,
                static_cast<unsigned long long>(scan.checked_in_full()), prepared,
                s * static_cast<double>(uint64_t{1} << 30) / static_cast<double>(offset + 1));
}

} // namespace

int main(int argc, char** argv) {
    uint64_t words = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : uint64_t{1} << 30;
    run("resnet18 initialisation", 1281167, 22846824 + 3);
    run("the whole range", 1281167, words - 1);
    return 0;
}
