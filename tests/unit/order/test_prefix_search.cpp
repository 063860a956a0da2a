// SPDX-License-Identifier: MIT
// The sparse searches against the full orders the rest of clairfs predicts:
// every expected order here comes from EpochOrders or the samplers, never from
// the code under test.
#include "clairfs/order/epoch_orders.hpp"
#include "clairfs/order/prefix_search.hpp"
#include "clairfs/order/samplers.hpp"
#include "clairfs/order/worker_split.hpp"

#include <array>
#include <doctest/doctest.h>
#include <random>

using namespace clairfs::order;

namespace {

constexpr uint32_t big_n = 100000;

// `count` samples spread over the first `window` positions of `order`,
// always including the last position inside the window.
EpochEvidence evidence_from(const std::vector<Sample>& order, uint32_t window, uint32_t count) {
    EpochEvidence ev{{}, window, {}};
    uint32_t step = window / count;
    for (uint32_t i = 0; i < count; ++i) ev.samples.push_back(order.at(window - 1 - i * step));
    return ev;
}

std::vector<Sample> first_epoch(const JobSpec& s, uint32_t n) {
    EpochOrders o(s, n);
    std::vector<Sample> e;
    o.next(e);
    return e;
}

// The global chain where `predicted` expects epoch 0's sampler seed word:
// pre_draws, the DataLoader's base_seed (2 words), the seed's high word.
CpuGenerator predicted_chain(const JobSpec& predicted) {
    CpuGenerator chain(predicted.seed);
    chain.discard(predicted.pre_draws + 3);
    return chain;
}

// A random-sampler job whose real chain is `d` words past the prediction.
std::optional<uint64_t> search_shifted(JobSpec s, uint64_t d, uint64_t max_offset, uint32_t n,
                                       uint32_t window = 64, uint32_t count = 16) {
    JobSpec real = s;
    real.pre_draws += d;
    EpochEvidence ev = evidence_from(first_epoch(real, n), window, count);
    return find_chain_offset(predicted_chain(s), max_offset, n, s.replacement, s.torch_version,
                             ev);
}

JobSpec random_job() {
    JobSpec s;
    s.seed = 5;
    s.pre_draws = 110; // nn.Linear(10, 10) on CPU
    return s;
}

} // namespace

TEST_CASE("LazyMt19937 is std::mt19937, draw for draw, over several blocks") {
    std::mt19937 seeds(2024);
    std::vector<uint32_t> list = {0, 1, 5489, 0x7fffffff, 0xffffffff};
    for (int i = 0; i < 200; ++i) list.push_back(static_cast<uint32_t>(seeds()));
    LazyMt19937 lazy; // one object, reseeded: a search reuses its generator
    for (uint32_t seed : list) {
        std::mt19937 ref(seed);
        lazy.seed(seed);
        int k = seed % 2 ? 3000 : 70; // short runs too: reseeding after a partial block
        int mismatches = 0;
        for (int i = 0; i < k; ++i) mismatches += lazy() != ref();
        CHECK_MESSAGE(mismatches == 0, "seed " << seed);
    }
    LazyMt19937 unseeded;
    std::mt19937 default_ref;
    CHECK(unseeded() == default_ref());
}

TEST_CASE("generators seeded together continue as std::mt19937, however far seeded") {
    std::array<uint32_t, 8> seeds = {0, 1, 2, 5489, 77, 0x80000000u, 0xfffffffeu, 0xffffffffu};
    std::array<LazyMt19937, 8> gens;
    for (uint64_t draws : {0u, 1u, 64u, 226u, 227u, 228u, 1000u}) {
        CAPTURE(draws);
        LazyMt19937::seed_each(gens, seeds, LazyMt19937::words_for(draws));
        for (size_t l = 0; l < seeds.size(); ++l) {
            std::mt19937 ref(seeds[l]);
            int mismatches = 0;
            for (int i = 0; i < 1500; ++i) mismatches += gens[l]() != ref();
            CHECK(mismatches == 0);
        }
    }
    LazyMt19937::seed_each(gens, seeds, 1); // seeds only word 0, like seed()
    std::mt19937 ref(seeds[3]);
    CHECK(gens[3]() == ref());
}

TEST_CASE("prefix_computable follows randperm's algorithm switch") {
    CHECK(prefix_computable(UINT32_MAX, TorchVersion::v1_13));
    CHECK(prefix_computable(randperm64_threshold - 1, TorchVersion::v2_7));
    CHECK_FALSE(prefix_computable(randperm64_threshold, TorchVersion::v2_7));
    CHECK_FALSE(prefix_computable(randperm64_threshold, TorchVersion::v2_6));
}

TEST_CASE("PermPrefix is the start of randperm and takes min(k, n-1) draws") {
    PermPrefix prefix; // reused across every call, as a search does
    std::vector<Sample> full, part;
    for (auto v : {TorchVersion::v1_13, TorchVersion::v2_7})
        for (uint32_t n : {1u, 2u, 3u, 10u, 1000u, big_n})
            for (uint64_t seed : {0ull, 1ull, 42ull, 0xfffffffffull})
                for (uint32_t k : {0u, 1u, 2u, n / 2, n - 1, n, n + 5}) {
                    CAPTURE(n);
                    CAPTURE(k);
                    CpuGenerator g(seed), ref(seed), twin(seed);
                    randperm(n, ref, v, full);
                    full.resize(std::min(k, n));
                    prefix.compute(n, k, g, part);
                    CHECK(part == full);
                    twin.discard(std::min(k, n - 1));
                    CHECK(g.random() == twin.random());
                    LazyMt19937 lazy(static_cast<uint32_t>(seed));
                    prefix.compute(n, k, lazy, part);
                    CHECK(part == full);
                }
}

TEST_CASE("find_chain_offset recovers how far the real chain ran past the prediction") {
    JobSpec s = random_job();
    for (uint64_t d : {0u, 1u, 2u, 7u, 4095u}) {
        CAPTURE(d);
        CHECK(search_shifted(s, d, 4096, big_n) == d);
        if (d > 0) CHECK_FALSE(search_shifted(s, d, d - 1, big_n));
    }
    s.torch_version = TorchVersion::v2_7; // the same randperm below the threshold
    CHECK(search_shifted(s, 7, 4096, big_n) == 7);
    CHECK(search_shifted(s, 3, 100, 1, 1, 1) == 0); // one sample: every seed orders it alike
}

TEST_CASE("a validation pass between epochs shows as two words at epoch 1") {
    JobSpec s = random_job();
    CpuGenerator real(s.seed);
    // pre_draws, epoch 0 (base_seed and sampler seed), val base_seed, epoch 1 base_seed.
    real.discard(s.pre_draws + 4 + 2 + 2);
    CpuGenerator own(static_cast<uint64_t>(real.random_int64()));
    std::vector<Sample> epoch1;
    random_sampler_epoch(big_n, big_n, false, own, s.torch_version, epoch1);
    CpuGenerator chain(s.seed);
    chain.discard(s.pre_draws + 4 + 2 + 1); // the prediction for epoch 1
    auto ev = evidence_from(epoch1, 64, 16);
    CHECK(find_chain_offset(chain, 4096, big_n, false, s.torch_version, ev) == 2);
}

TEST_CASE("evidence from an unrelated seed matches no offset") {
    JobSpec other = random_job();
    other.seed = 999;
    auto ev = evidence_from(first_epoch(other, big_n), 64, 16);
    JobSpec s = random_job();
    CHECK_FALSE(find_chain_offset(predicted_chain(s), 4096, big_n, false, s.torch_version, ev));
}

TEST_CASE("the window is exact: a sample one position past it does not fit") {
    JobSpec s = random_job();
    auto epoch = first_epoch(s, big_n);
    EpochEvidence ev = evidence_from(epoch, 64, 8);
    CHECK(find_chain_offset(predicted_chain(s), 0, big_n, false, s.torch_version, ev) == 0);
    ev.samples.push_back(epoch[64]);
    CHECK_FALSE(find_chain_offset(predicted_chain(s), 64, big_n, false, s.torch_version, ev));
}

TEST_CASE("replacement and num_samples change what the first positions are") {
    JobSpec s = random_job();
    s.replacement = true;
    CHECK(search_shifted(s, 7, 4096, big_n) == 7);
    s.num_samples = 40; // the caller caps the window at num_samples
    CHECK(search_shifted(s, 2, 4096, big_n, 40, 10) == 2);
    s.replacement = false;
    s.num_samples = 2 * big_n + 3; // two permutations and a prefix of a third
    CHECK(search_shifted(s, 1, 4096, big_n) == 1);
    s.num_samples = 500;
    CHECK(search_shifted(s, 4095, 4096, big_n) == 4095);
}

TEST_CASE("replacement from 2^28 samples: the search draws 64 bits where torch 2.7 does") {
    JobSpec s = random_job();
    s.replacement = true;
    s.num_samples = 64;
    uint32_t n = randint64_threshold + 12345;
    for (auto v : {TorchVersion::v1_13, TorchVersion::v2_6, TorchVersion::v2_7}) {
        CAPTURE(static_cast<int>(v));
        s.torch_version = v;
        CHECK(search_shifted(s, 5, 4096, n) == 5);
        CHECK(search_shifted(s, 300, 4096, n, 64, 64) == 300); // 128 words per candidate
    }
    // The 2.7 order is not the 2.6 one, so evidence of one does not fit the other.
    JobSpec old = s;
    old.torch_version = TorchVersion::v2_6;
    auto ev = evidence_from(first_epoch(s, n), 64, 16);
    CHECK_FALSE(find_chain_offset(predicted_chain(old), 4096, n, true, old.torch_version, ev));
    CHECK(find_chain_offset(predicted_chain(s), 4096, n, true, s.torch_version, ev) == 0);
}

TEST_CASE("evidence from the first batch of each worker, within the prefetch window") {
    JobSpec s = random_job();
    s.num_workers = 4;
    s.batch_size = 8;
    s.prefetch_factor = 2;
    JobSpec real = s;
    real.pre_draws += 1; // an odd shift: one float draw
    auto epoch = first_epoch(real, big_n);
    EpochEvidence ev{{}, s.prefetch_factor * s.num_workers * s.batch_size, {}};
    std::vector<Sample> stream;
    for (uint32_t w = 0; w < s.num_workers; ++w) {
        worker_stream(epoch, s.batch_size, s.num_workers, w, stream);
        ev.samples.insert(ev.samples.end(), stream.begin(), stream.begin() + s.batch_size);
    }
    CHECK(find_chain_offset(predicted_chain(s), 4096, big_n, false, s.torch_version, ev) == 1);
}

TEST_CASE("impossible evidence is refused without searching") {
    JobSpec s = random_job();
    EpochEvidence none{{}, 64, {}};
    CHECK(find_chain_offset(predicted_chain(s), 10, big_n, false, s.torch_version, none) == 0);
    EpochEvidence outside{{big_n}, 64, {}};
    CHECK_FALSE(find_chain_offset(predicted_chain(s), 10, big_n, false, s.torch_version, outside));
    EpochEvidence crowded{{1, 2, 3}, 2, {}};
    CHECK_FALSE(find_chain_offset(predicted_chain(s), 10, big_n, false, s.torch_version, crowded));
    CHECK_FALSE(find_chain_offset(predicted_chain(s), 10, 0, true, s.torch_version, none));
    EpochEvidence some{{1}, 64, {}};
    CHECK_FALSE(find_chain_offset(predicted_chain(s), 10, randperm64_threshold, false,
                                  TorchVersion::v2_7, some));
}

namespace {

JobSpec distributed_job(uint32_t world, uint32_t rank, bool drop_last) {
    JobSpec s;
    s.sampler = SamplerKind::distributed;
    s.seed = 17;
    s.world_size = world;
    s.rank = rank;
    s.sampler_drop_last = drop_last;
    return s;
}

// Evidence from rank's real order in the epoch seeded with seed + real_e.
EpochEvidence rank_evidence(const JobSpec& s, uint32_t n, uint64_t real_e, uint32_t window) {
    std::vector<Sample> perm, order;
    distributed_sampler_epoch(n, s, real_e, perm, order);
    window = std::min<uint32_t>(window, static_cast<uint32_t>(order.size()));
    return evidence_from(order, window, std::min(window, 16u));
}

// Epoch 5 predicted; the job never called set_epoch (0), repeated epoch 4, or
// resumed 3 epochs off (8); an epoch outside the candidates (12) fits none.
void check_distributed(uint32_t n, uint32_t world, bool drop, uint32_t rank) {
    CAPTURE(n);
    CAPTURE(world);
    CAPTURE(drop);
    CAPTURE(rank);
    JobSpec s = distributed_job(world, rank, drop);
    std::vector<uint64_t> candidates = {5, 4, 0, 6, 7, 8, 9};
    for (uint64_t real_e : {0u, 4u, 8u})
        CHECK(find_distributed_epoch(s, n, candidates, rank_evidence(s, n, real_e, 64)) == real_e);
    // One or two samples of 100 cannot rule seven candidates out.
    auto ev = rank_evidence(s, n, 12, 64);
    if (ev.samples.size() >= 8) CHECK_FALSE(find_distributed_epoch(s, n, candidates, ev));
}

} // namespace

TEST_CASE("find_distributed_epoch finds a repeated epoch and a resumed offset") {
    for (uint32_t n : {100u, 1003u, big_n})
        for (uint32_t world : {1u, 3u, 64u})
            for (bool drop : {false, true}) {
                check_distributed(n, world, drop, 0);
                check_distributed(n, world, drop, world - 1);
            }
}

TEST_CASE("an unshuffled DistributedSampler fits whatever the epoch") {
    JobSpec s = distributed_job(3, 1, false);
    s.shuffle = false;
    EpochEvidence ev{{1, 4, 7}, 3, {}};
    std::vector<uint64_t> candidates = {9, 2};
    CHECK(find_distributed_epoch(s, 10, candidates, ev) == 9);
    ev.samples.push_back(2); // rank 1's fourth sample is the padding's 0
    ev.window = 4;
    CHECK_FALSE(find_distributed_epoch(s, 10, candidates, ev));
}
