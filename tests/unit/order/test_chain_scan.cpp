// SPDX-License-Identifier: MIT
// The deep chain search: its vectorised first draws against std::mt19937,
// and ChainScan finding (or not) the word a sampler's generator was seeded
// with, from the first opens of a loader's workers.
#include "clairfs/order/chain_scan.hpp"
#include "clairfs/order/samplers.hpp"

#include <doctest/doctest.h>
#include <random>

using namespace clairfs::order;

namespace {

// What workers w < workers opened first of an epoch whose order is
// `order`: `each` samples of their first batch, worker by worker.
EpochEvidence worker_evidence(const std::vector<Sample>& order, uint32_t batch, uint32_t workers,
                              uint32_t each) {
    EpochEvidence ev;
    ev.window = workers * each + (2 * workers + 1) * batch;
    for (uint32_t i = 0; i < each; ++i)
        for (uint32_t w = 0; w < workers; ++w) {
            ev.samples.push_back(order[w * batch + i]);
            ev.streams.push_back(100 + w);
        }
    return ev;
}

// The sampler's order seeded with word `offset` of `chain`'s stream.
std::vector<Sample> epoch_at(CpuGenerator chain, uint64_t offset, uint32_t n) {
    chain.discard(offset);
    CpuGenerator g(chain.random());
    std::vector<Sample> out;
    randperm(n, g, TorchVersion::v1_13, out);
    return out;
}

} // namespace

TEST_CASE("the vectorised first draws equal std::mt19937's") {
    std::mt19937 pick(7);
    std::vector<uint32_t> seeds(1000); // not a multiple of the 128-candidate block
    for (auto& s : seeds) s = pick();
    seeds[0] = 0;
    seeds[1] = 0xffffffffu;
    std::vector<uint32_t> d0(seeds.size()), d1(seeds.size());
    mt19937_first_draws(seeds.data(), seeds.size(), d0.data(), d1.data());
    for (size_t i = 0; i < seeds.size(); ++i) {
        std::mt19937 mt(seeds[i]);
        CHECK(d0[i] == mt());
        CHECK(d1[i] == mt());
    }
}

TEST_CASE("a seed millions of words down the chain is found, at exactly its offset") {
    const uint32_t n = 1281167;
    CpuGenerator chain(42);
    const uint64_t offset = 5000003;
    EpochEvidence ev = worker_evidence(epoch_at(chain, offset, n), 32, 2, 4);
    ChainScan scan(chain, 0, (uint64_t{1} << 23) - 1, n, false, TorchVersion::v1_13, ev);
    std::optional<uint64_t> found;
    while (!scan.done() && !found) found = scan.step(1 << 20);
    REQUIRE(found.has_value());
    CHECK(*found == offset);
    // Nearly every candidate was turned away by its first draw alone.
    CHECK(scan.checked_in_full() < 100);
}

TEST_CASE("the scan starts where it is told and stops at its last word") {
    const uint32_t n = 5000;
    CpuGenerator chain(1);
    EpochEvidence ev = worker_evidence(epoch_at(chain, 1000, n), 16, 2, 10);
    CpuGenerator from = chain;
    from.discard(1001);
    ChainScan past(from, 1001, 60000, n, false, TorchVersion::v1_13, ev);
    CHECK(!past.step(1 << 20).has_value());
    CHECK(past.done());
    CHECK(past.next() == 60001);
    CpuGenerator at = chain;
    at.discard(900);
    ChainScan covering(at, 900, 60000, n, false, TorchVersion::v1_13, ev);
    CHECK(covering.step(50).value_or(0) == 0); // 900..949: not yet
    CHECK(covering.step(1 << 20) == std::optional<uint64_t>{1000});
}

TEST_CASE("each worker's samples must come in the order it opened them") {
    // A small dataset, where a wrong candidate easily has the samples
    // somewhere in its first positions: the order is what tells them apart.
    const uint32_t n = 400;
    CpuGenerator chain(3);
    std::vector<Sample> order = epoch_at(chain, 777, n);
    EpochEvidence ev = worker_evidence(order, 8, 2, 6);
    ChainScan right(chain, 0, 5000, n, false, TorchVersion::v1_13, ev);
    CHECK(right.step(10000) == std::optional<uint64_t>{777});
    EpochEvidence swapped = ev;
    std::swap(swapped.samples[2], swapped.samples[4]); // worker 0's second and third
    ChainScan wrong(chain, 0, 5000, n, false, TorchVersion::v1_13, swapped);
    std::optional<uint64_t> found = wrong.step(10000);
    CHECK(found != std::optional<uint64_t>{777});
}

TEST_CASE("with replacement the first draw is the first sample") {
    const uint32_t n = 100000;
    CpuGenerator chain(11);
    CpuGenerator at = chain;
    at.discard(123456);
    CpuGenerator g(at.random());
    std::vector<Sample> drawn;
    random_sampler_epoch(n, 64, true, g, TorchVersion::v1_13, drawn);
    EpochEvidence ev{{drawn[0], drawn[1], drawn[2], drawn[3], drawn[4], drawn[5]}, 64, {}};
    ChainScan scan(chain, 0, 200000, n, true, TorchVersion::v1_13, ev);
    CHECK(scan.step(1 << 20) == std::optional<uint64_t>{123456});
}

TEST_CASE("evidence no order can hold is never searched") {
    EpochEvidence crowded{{1, 2, 3}, 2, {}};
    ChainScan scan(CpuGenerator(1), 0, 1000, 100, false, TorchVersion::v1_13, crowded);
    CHECK(!scan.possible());
    CHECK(!scan.step(2000).has_value());
    CHECK(scan.done());
}

TEST_CASE("the chance of a false accept falls with evidence and with longer ordered runs") {
    double two_workers = chain_false_accept(480, 60, 12, 2);
    CHECK(chain_false_accept(480, 60, 12, 1) < two_workers); // one run of 12 in order
    CHECK(chain_false_accept(480, 60, 13, 2) < two_workers);
    CHECK(chain_false_accept(100, 10, 11, 1) == 0); // more samples than positions
    CHECK(chain_false_accept(1281167, 200, 5, 2) * (uint64_t{1} << 30) < 1e-9);
}
