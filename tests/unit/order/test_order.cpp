// SPDX-License-Identifier: MIT
// Invariants of the order library. Exactness against real torch is checked
// by tests/order/ with torch itself; these pin down the properties that
// make a wrong implementation fail fast and say where.
#include "clairfs/order/epoch_orders.hpp"
#include "clairfs/order/samplers.hpp"
#include "clairfs/order/worker_split.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <numeric>
#include <random>
#include <set>

using namespace clairfs::order;

namespace {

bool is_permutation_of_n(std::vector<Sample> v, uint32_t n) {
    std::sort(v.begin(), v.end());
    for (uint32_t i = 0; i < n; ++i)
        if (v.size() != n || v[i] != i) return false;
    return true;
}

std::vector<std::vector<Sample>> epochs_of(const JobSpec& s, uint32_t n) {
    EpochOrders o(s, n);
    std::vector<std::vector<Sample>> out(s.epochs);
    for (auto& e : out) o.next(e);
    return out;
}

} // namespace

TEST_CASE("the generator is std::mt19937 on the seed's low 32 bits, high word first") {
    CpuGenerator a(7), b(7 + (uint64_t{5} << 32));
    std::mt19937 ref(7);
    for (int i = 0; i < 100; ++i) {
        uint32_t x = a.random();
        CHECK(x == b.random());
        CHECK(x == ref());
    }
    CpuGenerator c(1);
    std::mt19937 r1(1);
    uint64_t hi = r1(), lo = r1();
    CHECK(c.random64() == ((hi << 32) | lo));
    CpuGenerator d(1);
    CHECK(d.random_int64() == static_cast<int64_t>(((hi & 0x7fffffff) << 32) | lo));
}

TEST_CASE("seeds parse over torch's whole range and no further") {
    CHECK(parse_seed("0")->value == 0);
    CHECK(parse_seed("18446744073709551615")->value == UINT64_MAX);
    CHECK(parse_seed("-1")->value == UINT64_MAX);
    CHECK(parse_seed("-1")->negative);
    CHECK(parse_seed("-9223372036854775808")->value == uint64_t{1} << 63);
    CHECK_FALSE(parse_seed("-9223372036854775809"));
    CHECK_FALSE(parse_seed("18446744073709551616"));
    CHECK_FALSE(parse_seed("1.5"));
    CHECK_FALSE(parse_seed(""));
    CHECK_FALSE(parse_seed("-"));
    CHECK_FALSE(parse_seed("0x10"));
}

TEST_CASE("randperm is a permutation and takes exactly n - 1 draws") {
    for (uint32_t n : {1u, 2u, 3u, 10u, 1000u, 100003u}) {
        CpuGenerator g(3), twin(3);
        std::vector<Sample> p;
        randperm(n, g, TorchVersion::v1_13, p);
        CHECK(is_permutation_of_n(p, n));
        twin.discard(randperm_draws(n, TorchVersion::v1_13));
        CHECK(g.random() == twin.random());
    }
    std::vector<Sample> p;
    CpuGenerator g(0);
    randperm(0, g, TorchVersion::v1_13, p);
    CHECK(p.empty());
}

TEST_CASE("torch 2.7 differs from 1.13 only from 214,748,364 samples up") {
    std::vector<Sample> a, b;
    CpuGenerator g1(9), g2(9);
    randperm(100003, g1, TorchVersion::v1_13, a);
    randperm(100003, g2, TorchVersion::v2_7, b);
    CHECK(a == b);
    CHECK(randperm_draws(randperm64_threshold, TorchVersion::v2_7) == 2ull * randperm64_threshold);
    CHECK(randperm_draws(randperm64_threshold - 1, TorchVersion::v2_7) == randperm64_threshold - 2);
    // 2.6 already has the 64-bit randperm; 1.13 never.
    CHECK(randperm_draws(randperm64_threshold, TorchVersion::v2_6) == 2ull * randperm64_threshold);
    CHECK(randperm_draws(randperm64_threshold, TorchVersion::v1_13) == randperm64_threshold - 1);
}

TEST_CASE("an explicit generator spends two permutations per epoch") {
    JobSpec s;
    s.generator = GeneratorKind::explicit_;
    s.seed = 11;
    s.epochs = 3;
    auto got = epochs_of(s, 50);
    CpuGenerator g(11);
    g.discard(2); // base_seed of epoch 0
    std::vector<Sample> p;
    randperm(50, g, TorchVersion::v1_13, p);
    CHECK(got[0] == p);
    randperm(50, g, TorchVersion::v1_13, p); // the empty tail torch still computes
    g.discard(2);                            // base_seed of epoch 1
    randperm(50, g, TorchVersion::v1_13, p);
    CHECK(got[1] == p);
}

TEST_CASE("the distributed ranks partition the padded epoch") {
    for (bool drop : {false, true})
        for (uint32_t n : {1u, 7u, 10u, 103u}) {
            JobSpec s;
            s.sampler = SamplerKind::distributed;
            s.world_size = 4;
            s.sampler_drop_last = drop;
            std::multiset<Sample> all;
            size_t per_rank = drop ? n / 4 : (n + 3) / 4;
            for (uint32_t r = 0; r < 4; ++r) {
                s.rank = r;
                auto e = epochs_of(s, n)[0];
                CHECK(e.size() == per_rank);
                all.insert(e.begin(), e.end());
            }
            std::set<Sample> distinct(all.begin(), all.end());
            CHECK(distinct.size() == std::min<size_t>(n, 4 * per_rank));
        }
}

TEST_CASE("set_epoch changes the distributed order; a repeated epoch repeats it") {
    JobSpec s;
    s.sampler = SamplerKind::distributed;
    s.epochs = 2;
    auto two = epochs_of(s, 100);
    CHECK(two[0] != two[1]);
    s.start_epoch = 1;
    s.epochs = 1;
    CHECK(epochs_of(s, 100)[0] == two[1]);
}

TEST_CASE("persistent workers skip the base_seed draw after the first epoch") {
    JobSpec fresh, kept;
    fresh.epochs = kept.epochs = 2;
    kept.num_workers = fresh.num_workers = 2;
    kept.persistent_workers = true;
    auto a = epochs_of(fresh, 30), b = epochs_of(kept, 30);
    CHECK(a[0] == b[0]);
    CHECK(a[1] != b[1]);
}

TEST_CASE("drop_last trims only a short last batch; sequential is the identity") {
    JobSpec s;
    s.sampler = SamplerKind::sequential;
    s.batch_size = 4;
    s.drop_last = true;
    auto e = epochs_of(s, 10)[0];
    CHECK(e == std::vector<Sample>{0, 1, 2, 3, 4, 5, 6, 7});
    s.drop_last = false;
    CHECK(epochs_of(s, 10)[0].size() == 10);
}

TEST_CASE("replacement draws num_samples indices below n") {
    JobSpec s;
    s.replacement = true;
    s.num_samples = 33;
    auto e = epochs_of(s, 5)[0];
    CHECK(e.size() == 33);
    CHECK(std::all_of(e.begin(), e.end(), [](Sample x) { return x < 5; }));
}

TEST_CASE("num_samples without replacement chains full permutations and a prefix") {
    JobSpec s;
    s.num_samples = 25;
    auto e = epochs_of(s, 10)[0];
    REQUIRE(e.size() == 25);
    CHECK(is_permutation_of_n({e.begin(), e.begin() + 10}, 10));
    CHECK(is_permutation_of_n({e.begin() + 10, e.begin() + 20}, 10));
}

TEST_CASE("invalid specs are refused with a reason") {
    JobSpec s;
    CHECK(validate(s, 0).find("no samples") != std::string::npos);
    s.world_size = 2;
    s.rank = 2;
    CHECK(validate(s, 10).find("rank 2") != std::string::npos);
    s.rank = 0;
    s.persistent_workers = true;
    CHECK(validate(s, 10).find("num_workers") != std::string::npos);
    JobSpec d;
    d.sampler = SamplerKind::distributed;
    d.seed = UINT64_MAX;
    d.epochs = 2;
    CHECK(validate(d, 10).find("overflows") != std::string::npos);
    d.shuffle = false; // without shuffling DistributedSampler seeds nothing
    CHECK(validate(d, 10) == "");
    CHECK(set_job_key(d, "sampler", "bogus").find("invalid value for sampler") !=
          std::string::npos);
    CHECK(set_job_key(d, "batch-size", "0").find("invalid value for batch_size") !=
          std::string::npos);
    CHECK(set_job_key(d, "colour", "red") == "unknown key 'colour'");
    CHECK(set_job_key(d, "torch_version", "2.6.1") == "");
    CHECK(d.torch_version == TorchVersion::v2_6);
    CHECK(set_job_key(d, "torch_version", "2.7") == "");
    CHECK(d.torch_version == TorchVersion::v2_7);
}

// Registrations and status write sampler_name; a job registered from what
// they wrote must get the same sampler back.
TEST_CASE("every sampler's name reads back as that sampler, and no other word does") {
    for (SamplerKind k :
         {SamplerKind::random, SamplerKind::distributed, SamplerKind::sequential}) {
        JobSpec d;
        d.sampler = k == SamplerKind::random ? SamplerKind::sequential : SamplerKind::random;
        CAPTURE(sampler_name(k));
        CHECK(set_job_key(d, "sampler", sampler_name(k)) == "");
        CHECK(d.sampler == k);
    }
    JobSpec d;
    for (const char* bad : {"", "Random", "random ", "distributedsampler", "seq"}) {
        CAPTURE(bad);
        CHECK(set_job_key(d, "sampler", bad) ==
              "invalid value for sampler: " + std::string(bad) +
                  " (expected random, distributed or sequential)");
    }
}

TEST_CASE("torch_version: 1.x to 2.5 are 1.13, 2.6 is its own, 2.7 and later are 2.7") {
    JobSpec d;
    struct Case {
        const char* text;
        TorchVersion want;
    };
    for (auto [text, want] : {Case{"1.13", TorchVersion::v1_13}, Case{"1", TorchVersion::v1_13},
                              Case{"1.13.0a0", TorchVersion::v1_13},
                              Case{"2.0", TorchVersion::v1_13}, Case{"2.5.1", TorchVersion::v1_13},
                              Case{"2.6", TorchVersion::v2_6}, Case{"2.6.0+cpu", TorchVersion::v2_6},
                              Case{"2.6+cpu", TorchVersion::v2_6}, Case{"2.7", TorchVersion::v2_7},
                              Case{"2.10", TorchVersion::v2_7}, Case{"2.1", TorchVersion::v1_13},
                              Case{"2.13.0+cpu", TorchVersion::v2_7}}) {
        CAPTURE(text);
        d.torch_version = TorchVersion::v1_13 == want ? TorchVersion::v2_7 : TorchVersion::v1_13;
        CHECK(set_job_key(d, "torch_version", text) == "");
        CHECK(d.torch_version == want);
    }
    for (const char* bad : {"", "2", "2.", "2.x", "3.0", "x2.7", "2.7x", ".7", "+2.7", "2.+7"}) {
        CAPTURE(bad);
        CHECK(set_job_key(d, "torch_version", bad).find("invalid value for torch_version") !=
              std::string::npos);
    }
}

TEST_CASE("randint takes 64-bit draws from 2^28 in torch 2.7, from 2^32 before") {
    CHECK_FALSE(randint_draws64(randint64_threshold - 1, TorchVersion::v2_7));
    CHECK(randint_draws64(randint64_threshold, TorchVersion::v2_7));
    CHECK_FALSE(randint_draws64(UINT32_MAX, TorchVersion::v2_6));
    CHECK_FALSE(randint_draws64(UINT32_MAX, TorchVersion::v1_13));
    CHECK(randint_draws64(uint64_t{1} << 32, TorchVersion::v1_13));
    // RandomSampler(replacement=True): one random64() % n per sample at 2.7.
    for (uint32_t n : {randint64_threshold - 1, randint64_threshold, randint64_threshold + 7u}) {
        CAPTURE(n);
        std::vector<Sample> got, old;
        CpuGenerator g(77), g_old(77), ref(77);
        random_sampler_epoch(n, 100, true, g, TorchVersion::v2_7, got);
        random_sampler_epoch(n, 100, true, g_old, TorchVersion::v2_6, old);
        bool wide = n >= randint64_threshold;
        for (size_t i = 0; i < got.size(); ++i) {
            uint64_t x = wide ? ref.random64() : ref.random();
            REQUIRE(got[i] == x % n);
        }
        CHECK((got == old) == !wide);
        CHECK(g.random() == ref.random()); // exactly 2 (or 1) draws per sample
    }
}

TEST_CASE("batch k goes to worker k % W; each worker opens its batches in order") {
    std::vector<Sample> epoch = {8, 0, 9, 1, 4, 5, 6, 3, 2, 7};
    std::vector<Sample> w0, w1, all;
    worker_stream(epoch, 3, 2, 0, w0);
    worker_stream(epoch, 3, 2, 1, w1);
    CHECK(w0 == std::vector<Sample>{8, 0, 9, 6, 3, 2});
    CHECK(w1 == std::vector<Sample>{1, 4, 5, 7});
    worker_stream(epoch, 3, 0, 0, all); // no workers: the main process opens everything
    CHECK(all == epoch);
    CHECK(worker_of_batch(5, 2) == 1);
    CHECK(worker_of_batch(5, 0) == 0);
    CHECK(batches_in_flight(4, 2) == 8);
    CHECK(batches_in_flight(0, 2) == 1);
}
